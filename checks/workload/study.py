"""One workload run: the configurations over the prepared traces, their rows, and the files written.

:func:`run_study` runs the sweep (:func:`~flightcheck.checks.workload.sweep.run_sweep`) and keeps its
summary and per-instance rows; :func:`write_study` writes them with their plots, the traces' sizes in
the metadata, and a SHA-256 manifest (:func:`~flightcheck.checks.workload.sweep.write_outputs`).

For example::

    >>> from flightcheck.checks.workload.opportunity import prepare_trace
    >>> from flightcheck.checks.workload.trace import parse_trace_lines
    >>> trace = parse_trace_lines(['{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}'] * 2)
    >>> opts = WorkloadOptions(workers=1)
    >>> study = run_study([prepare_trace(trace)], opts.configs(), opts)
    >>> len(study.results), study.summary[0]["phase"]
    (1, 'all')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from flightcheck.checks.workload.opportunity import ModelConfig, PreparedTrace, RunResult
from flightcheck.checks.workload.options import WorkloadOptions


@dataclass
class Study:
    """The traces and configurations run, each (trace, configuration)'s result, and their rows."""

    prepared: list[PreparedTrace]
    configs: list[ModelConfig]
    results: list[RunResult]
    summary: list[dict]
    per_instance: list[dict]


def run_study(prepared: Sequence[PreparedTrace], configs: Sequence[ModelConfig], options: WorkloadOptions,
              on_progress: Optional[Callable[[int], None]] = None) -> Study:
    """Every configuration on every trace, on ``options.workers`` processes; ``on_progress(n)`` as
    ``n`` more finish."""
    from flightcheck.checks.workload import sweep as ws

    results = ws.run_sweep(prepared, configs, workers=options.workers, record_cohorts=options.cohort_rows,
                           on_progress=on_progress)
    return Study(list(prepared), list(configs), results, ws.summary_rows(results, options.cost_per_load),
                 ws.instance_rows(results, options.cost_per_load))


def write_study(study: Study, out: Path, options: WorkloadOptions) -> None:
    """The rows (CSV, JSON), the plots and the manifest, in ``out``."""
    from flightcheck.checks.workload import sweep as ws
    from flightcheck.checks.workload.plot import plot_summary

    plots = plot_summary(study.summary, out)
    meta = {"traces": {p.name: {"num_requests": p.num_requests, "num_block_lookups": p.num_block_lookups,
                                "warmup_end_ms": p.warmup_end_ms} for p in study.prepared},
            "warmup_fraction": options.warmup_fraction, "num_configurations": len(study.configs)}
    ws.write_outputs(out, study.results, options.cost_per_load, meta=meta, extra_files=plots)
