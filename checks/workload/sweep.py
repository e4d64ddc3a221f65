"""The configuration sweep of the workload model, its result rows and its output files.

The full sweep is 7 ``W_eff`` values x instance counts {1, 2, 4, 8, 16} x 3 cache capacities x 2 routings
x 2 lookup modes = 420 configurations per trace (:func:`sweep_configs` with the defaults). Configurations
sharing ``(W_eff, capacity, lookup)`` run in one task, so an instance whose request sequence repeats across
routings and instance counts (one instance under either routing; affinity on a trace whose requests all
share their first block) is replayed once. Tasks run on an embedded Dask cluster of worker processes
(:mod:`flightcheck.checks.cluster`), which receives the traces once.

Rows (:func:`summary_rows`, :func:`instance_rows`, :func:`cohort_rows`) are flat dicts; per phase they
carry every counter (the removable attempts also split into exact-input and partial-prefix ones, each with
its fraction of cold attempts), the fan-in median/p99/max (and, in JSON only, the whole fan-in histogram as
``[fan_in, cohorts]`` pairs), the cold-load rate (cold attempts per second of the
phase's arrival span) and the *avoidable cost rate* = cold-load rate x redundancy ratio x cost per load
(= removable attempts per second x cost per load). :func:`write_outputs` writes ``summary.csv``,
``instances.csv``, ``results.json``, optionally ``cohorts.csv.gz``, and a SHA-256 manifest of every file
(``SHA256SUMS``, readable by ``sha256sum -c``, and ``manifest.json``).

For example::

    >>> len(sweep_configs())
    420
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from pathlib import Path

from flightcheck.checks.cluster import Cluster
from flightcheck.checks.workload.opportunity import (LOOKUPS, PHASES, ROUTINGS, ModelConfig, PhaseCounts,
                                               PreparedTrace, RunResult, simulate)

W_EFF_MS = (10, 30, 100, 300, 1_000, 3_000, 10_000)
INSTANCE_COUNTS = (1, 2, 4, 8, 16)
CAPACITIES_BLOCKS = (1_000, 10_000, 100_000)

CONFIG_FIELDS = ("trace", "w_eff_ms", "num_instances", "capacity_blocks", "routing", "lookup", "insert_on_miss")
COUNT_FIELDS = ("phase", "duration_s", "num_requests", "num_block_lookups", "num_hits", "num_cold_attempts",
                "num_cohorts", "num_duplicate_cohorts", "num_removable_attempts", "redundancy_ratio",
                "num_exact_input_removable", "exact_input_ratio", "num_partial_prefix_removable", "partial_prefix_ratio",
                "fan_in_median", "fan_in_p99", "fan_in_max", "cold_load_rate_per_s", "avoidable_cost_per_s")
SUMMARY_FIELDS = CONFIG_FIELDS + COUNT_FIELDS
INSTANCE_FIELDS = CONFIG_FIELDS + ("instance_id", "request_share") + COUNT_FIELDS
COHORT_FIELDS = CONFIG_FIELDS + ("instance_id", "block", "anchor_ms", "fan_in", "exact_followers", "phase")


def sweep_configs(w_eff_ms: Sequence[float] = W_EFF_MS, instance_counts: Sequence[int] = INSTANCE_COUNTS,
                  capacities: Sequence[int] = CAPACITIES_BLOCKS, routings: Sequence[str] = ROUTINGS,
                  lookups: Sequence[str] = LOOKUPS, insert_on_miss: bool = False) -> list[ModelConfig]:
    """Every combination of the axes, in a fixed order (W_eff outermost, lookup innermost)."""
    return [ModelConfig(w_eff_ms=w, capacity_blocks=c, num_instances=n, routing=r, lookup=lk, insert_on_miss=insert_on_miss)
            for w in w_eff_ms for n in instance_counts for c in capacities for r in routings for lk in lookups]


def _task_key(item: tuple[str, ModelConfig]) -> tuple:
    name, c = item
    return (name, c.w_eff_ms, c.capacity_blocks, c.lookup, c.insert_on_miss)


def _run_task(traces: dict[str, PreparedTrace],
              task: tuple[bool, list[tuple[int, str, ModelConfig]]]) -> list[tuple[int, RunResult]]:
    record_cohorts, items = task
    memo: dict = {}
    return [(position, simulate(traces[name], config, record_cohorts=record_cohorts, memo=memo))
            for position, name, config in items]


def run_sweep(traces: Sequence[PreparedTrace], configs: Sequence[ModelConfig], workers: int = 2,
              on_progress: Callable[[int], None] | None = None, record_cohorts: bool = False) -> list[RunResult]:
    """Run every configuration on every trace; results in (trace, config) order.

    ``record_cohorts`` keeps every cohort (for ``cohorts.csv.gz``); it is large for a full sweep.

    ``on_progress(n)`` is called as each task finishes, with the number of configurations it completed.
    ``workers <= 1`` runs in this process (no Dask).
    """
    names = [t.name for t in traces]
    if len(set(names)) != len(names):
        raise ValueError(f"trace names must be distinct, got {names}")
    items = [(t.name, c) for t in traces for c in configs]
    indexed = sorted(range(len(items)), key=lambda i: (_task_key(items[i]), i))
    tasks = [(record_cohorts, [(i, *items[i]) for i in group])
             for _, group in groupby(indexed, key=lambda i: _task_key(items[i]))]
    results: list[RunResult | None] = [None] * len(items)
    by_name = {t.name: t for t in traces}
    # On Dask: an embedded cluster of ``workers`` processes (the traces sent to each once), or this process.
    with Cluster(workers=min(workers, len(tasks))) as cluster:
        for _k, done in cluster.as_completed(_run_task, tasks, shared=by_name):
            for position, result in done:
                results[position] = result
            if on_progress:
                on_progress(len(done))
    return results  # type: ignore[return-value]


def _config_row(result: RunResult) -> dict:
    c = result.config
    return {"trace": result.trace_name, "w_eff_ms": c.w_eff_ms, "num_instances": c.num_instances,
            "capacity_blocks": c.capacity_blocks, "routing": c.routing, "lookup": c.lookup,
            "insert_on_miss": c.insert_on_miss}


def _count_row(phase: str, counts: PhaseCounts, duration_s: float, cost_per_load: float) -> dict:
    rate = counts.num_cold_attempts / duration_s if duration_s > 0 else None
    ratio = counts.redundancy_ratio
    return {"phase": phase, "duration_s": duration_s, "num_requests": counts.num_requests,
            "num_block_lookups": counts.num_block_lookups, "num_hits": counts.num_hits,
            "num_cold_attempts": counts.num_cold_attempts, "num_cohorts": counts.num_cohorts,
            "num_duplicate_cohorts": counts.num_duplicate_cohorts,
            "num_removable_attempts": counts.num_removable_attempts, "redundancy_ratio": ratio,
            "num_exact_input_removable": counts.num_exact_input_removable, "exact_input_ratio": counts.exact_input_ratio,
            "num_partial_prefix_removable": counts.num_partial_prefix_removable,
            "partial_prefix_ratio": counts.partial_prefix_ratio,
            "fan_in_median": counts.fan_in_median, "fan_in_p99": counts.fan_in_p99, "fan_in_max": counts.fan_in_max,
            "cold_load_rate_per_s": rate,
            "avoidable_cost_per_s": None if rate is None or ratio is None else rate * ratio * cost_per_load,
            "fan_in_histogram": [list(pair) for pair in counts.fan_in_histogram]}


def summary_rows(results: Iterable[RunResult], cost_per_load: float = 1.0) -> list[dict]:
    """One row per (configuration, phase) with the summed counters."""
    return [_config_row(r) | _count_row(p, r.summary[p], r.phase_duration_s(p), cost_per_load)
            for r in results for p in PHASES]


def instance_rows(results: Iterable[RunResult], cost_per_load: float = 1.0) -> list[dict]:
    """One row per (configuration, instance, phase), with the instance's share of all requests."""
    return [_config_row(r) | {"instance_id": i.instance_id, "request_share": r.request_share(i.instance_id)}
            | _count_row(p, i.phases[p], r.phase_duration_s(p), cost_per_load)
            for r in results for i in r.instances for p in PHASES]


def cohort_rows(results: Iterable[RunResult]) -> Iterable[dict]:
    """One row per recorded cohort (results must come from ``simulate(..., record_cohorts=True)``)."""
    for r in results:
        base = _config_row(r)
        for i in r.instances:
            for c in i.cohorts:
                yield base | {"instance_id": c.instance_id, "block": c.block, "anchor_ms": c.anchor_ms,
                              "fan_in": c.fan_in, "exact_followers": c.exact_followers, "phase": c.phase}


def _csv_text(rows: Iterable[dict], fields: Sequence[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fields), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buffer.getvalue()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(out_dir: str | os.PathLike[str], names: Sequence[str]) -> dict[str, str]:
    """Write ``SHA256SUMS`` (``sha256sum -c`` format) and ``manifest.json`` over the named files in out_dir."""
    out = Path(out_dir)
    digests = {name: sha256_file(out / name) for name in sorted(names)}
    (out / "SHA256SUMS").write_text("".join(f"{d}  {n}\n" for n, d in digests.items()))
    manifest = {n: {"sha256": d, "bytes": (out / n).stat().st_size} for n, d in digests.items()}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return digests


def write_outputs(out_dir: str | os.PathLike[str], results: Sequence[RunResult], cost_per_load: float = 1.0,
                  meta: dict | None = None, extra_files: Sequence[str] = ()) -> list[str]:
    """Write the result files (and a manifest over them plus ``extra_files`` already in out_dir).

    ``cohorts.csv.gz`` is written when any result carries cohort records; gzip's timestamp is fixed, so
    equal results give byte-identical files and equal hashes. Returns the names written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary, instances = summary_rows(results, cost_per_load), instance_rows(results, cost_per_load)
    (out / "summary.csv").write_text(_csv_text(summary, SUMMARY_FIELDS))
    (out / "instances.csv").write_text(_csv_text(instances, INSTANCE_FIELDS))
    document = {"meta": (meta or {}) | {"cost_per_load": cost_per_load}, "summary": summary, "instances": instances}
    (out / "results.json").write_text(json.dumps(document, indent=1) + "\n")
    names = ["summary.csv", "instances.csv", "results.json"]
    if any(i.cohorts for r in results for i in r.instances):
        with open(out / "cohorts.csv.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(_csv_text(cohort_rows(results), COHORT_FIELDS).encode())
        names.append("cohorts.csv.gz")
    write_manifest(out, names + list(extra_files))
    return names
