"""``flightcheck workload``: is single-flight worth building for this traffic?

Replays request traces through the workload opportunity model (:mod:`flightcheck.checks.workload.model`)
for one configuration, a few, or the full 420-configuration sweep, and prints a table (the removable
attempts split into exact-input and partial-prefix ones, each with its fraction of cold attempts); with ``--out`` it
writes CSV/JSON rows, PNG plots and a SHA-256 manifest. A TRACE is a file path, or the name of a Mooncake
trace (``conversation``, ``synthetic``) shipped with flightcheck (``data/traces/``; set
``FLIGHTCHECK_SHARED`` to read ``$FLIGHTCHECK_SHARED/traces`` instead). ``--from-events`` converts an engine event log to the trace schema first.

For example::

    $ flightcheck workload conversation --w-eff 1000 --instances 4 --capacity 10000
    $ flightcheck workload conversation synthetic --sweep --out runs/workload
    $ flightcheck workload --from-events run.events.jsonl --convert-out run.trace.jsonl --json

Exit codes: 0 ran; 2 bad arguments or a malformed trace (the message names the line and field).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer

from flightcheck.checks.errors import usage_error
from flightcheck.checks.inputs import MAX_WORKERS, printable, shown
from flightcheck.checks.workload.tables import config_label, config_table, pivot_table

_SHARED_NAMES = ("conversation", "synthetic")


def _fail(message: str) -> typer.Exit:
    return usage_error(message)


def _resolve(trace: str) -> Path:
    from flightcheck.checks.workload.trace import shared_trace_path

    path = Path(trace)
    if os.path.isdir(path):  # os.path's tests answer False for a name too long, where Path's raise
        raise _fail(f"{printable(trace)}: is a directory, not a trace file")
    if os.path.lexists(path):
        return path  # a file, or something that is not one: the strict reader says which
    if trace in _SHARED_NAMES:
        shared = shared_trace_path(trace)
        if shared.is_file():
            return shared
        raise _fail(f"trace {shown(trace)} not found at {shared} (FLIGHTCHECK_SHARED set to a folder without it, or an "
                    "installation without flightcheck's data/traces)")
    raise _fail(f"trace file {shown(trace)} not found (give a path, or one of {', '.join(_SHARED_NAMES)})")


def register(app: typer.Typer) -> None:
    """Add the ``workload`` command to the app."""

    @app.command("workload")
    def workload(
        traces: list[str] = typer.Argument(None, metavar="TRACE...", help="Trace files (JSON lines) or shared trace names."),
        w_eff: list[float] = typer.Option(None, "--w-eff", metavar="MS", help="Effective load latency W x time compression, in ms (repeatable)."),
        instances: list[int] = typer.Option(None, "--instances", metavar="N", help="Instance count, 1 to 16 (repeatable)."),
        capacity: list[int] = typer.Option(None, "--capacity", metavar="BLOCKS", help="Per-instance LRU cache size in blocks (repeatable)."),
        routing: list[str] = typer.Option(None, "--routing", metavar="rr|affinity", help="Round-robin or first-block affinity (repeatable)."),
        lookup: list[str] = typer.Option(None, "--lookup", metavar="contiguous|independent", help="Prefix lookup reading (repeatable)."),
        sweep: bool = typer.Option(False, "--sweep", help="Fill every axis not given with the full grid (7 x 5 x 3 x 2 x 2 = 420)."),
        out: Path = typer.Option(None, "--out", metavar="DIR", help="Write CSV/JSON rows, PNG plots and a SHA-256 manifest here."),
        as_json: bool = typer.Option(False, "--json", help="Print summary and per-instance rows as JSON instead of tables."),
        cost_per_load: float = typer.Option(1.0, "--cost-per-load", help="Cost of one block load, for the avoidable cost rate."),
        warmup_fraction: float = typer.Option(0.1, "--warmup-fraction", help="Fraction of the trace's time span counted as warm-up."),
        workers: int = typer.Option(2, "--workers", help=f"Worker processes for the sweep (at most {MAX_WORKERS})."),
        cohort_rows: bool = typer.Option(False, "--cohort-rows", help="Also write per-cohort rows (cohorts.csv.gz; large for a full sweep)."),
        insert_on_miss: bool = typer.Option(False, "--insert-on-miss", help="The wrong model (cache on load start), for the reverse check."),
        from_events: Path = typer.Option(None, "--from-events", metavar="EVENTS.jsonl", help="Convert an engine event log to a trace and use it."),
        block_tokens: int = typer.Option(16, "--block-tokens", help="Tokens per block when converting an event log."),
        convert_out: Path = typer.Option(None, "--convert-out", metavar="PATH", help="Write the converted event-log trace here."),
    ) -> None:
        """Measure the single-flight opportunity (concurrent cold block loads) on request traces."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from flightcheck.checks.workload import sweep as ws
        from flightcheck.checks.workload.model import LOOKUPS, ROUTINGS, prepare_trace
        from flightcheck.checks.conform.eventlog import parse_events
        from flightcheck.checks.inputs import InputError, read_lines
        from flightcheck.checks.workload.trace import Trace, events_to_trace, load_trace, write_trace

        for name, values, allowed in (("--routing", routing, ROUTINGS), ("--lookup", lookup, LOOKUPS)):
            for value in values or []:
                if value not in allowed:
                    raise _fail(f"{name}: {shown(value)} is not one of {', '.join(allowed)}")
        if not 0 <= cost_per_load < float("inf"):  # nan fails the comparison too
            raise _fail(f"--cost-per-load: must be a finite number >= 0, got {cost_per_load}")
        if not 0 <= warmup_fraction < 1:
            raise _fail(f"--warmup-fraction: must be in [0, 1), got {warmup_fraction}")
        if workers > MAX_WORKERS:
            raise _fail(f"--workers: at most {MAX_WORKERS} (MAX_WORKERS), got {workers}")
        if block_tokens < 1:
            raise _fail(f"--block-tokens: must be >= 1, got {block_tokens}")
        if cohort_rows and out is None:
            raise _fail("--cohort-rows: needs --out DIR to write cohorts.csv.gz")
        if convert_out is not None and from_events is None:
            raise _fail("--convert-out: only applies with --from-events")
        try:
            configs = ws.sweep_configs(
                w_eff or (ws.W_EFF_MS if sweep else (1_000,)),
                instances or (ws.INSTANCE_COUNTS if sweep else (1,)),
                capacity or (ws.CAPACITIES_BLOCKS if sweep else (10_000,)),
                routing or (ROUTINGS if sweep else ("rr",)),
                lookup or (LOOKUPS if sweep else ("contiguous",)),
                insert_on_miss)
        except ValueError as error:
            raise _fail(f"bad configuration: {error}") from None

        loaded = []
        try:
            for trace in traces or []:
                loaded.append(load_trace(_resolve(trace)))
            if from_events is not None:
                lines = read_lines(from_events, "events")  # read once, by the strict reader
                parse_events(lines, str(from_events))  # the event schema, as `flightcheck validate` reads the log
                converted = events_to_trace(lines, source=str(from_events), block_tokens=block_tokens)
                if convert_out is not None:
                    write_trace(converted, convert_out)
                if converted.num_requests > 1 and all(r.timestamp_ms == 0 for r in converted.requests):
                    typer.echo(f"note: no arrive event in {from_events} carries 't'; all requests arrive at 0 ms", err=True)
                loaded.append(Trace(from_events.stem, converted.requests))
        except InputError as error:  # TraceError is one
            raise _fail(str(error)) from None
        if not loaded:
            raise _fail("give at least one TRACE or --from-events EVENTS.jsonl")
        names = [t.name for t in loaded]
        if len(set(names)) != len(names):
            raise _fail(f"traces must have distinct file names, got {shown(names)}")
        prepared = [prepare_trace(t, warmup_fraction) for t in loaded]

        console = Console(stderr=True)
        with Progress(TextColumn("[bold]workload model"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=as_json) as progress:
            bar = progress.add_task("configurations", total=len(configs) * len(prepared))
            results = ws.run_sweep(prepared, configs, workers=workers, record_cohorts=cohort_rows,
                                   on_progress=lambda n: progress.advance(bar, n))
        summary = ws.summary_rows(results, cost_per_load)
        per_instance = ws.instance_rows(results, cost_per_load)
        if out is not None:
            from flightcheck.checks.workload.plot import plot_summary

            plots = plot_summary(summary, out)
            meta = {"traces": {p.name: {"num_requests": p.num_requests, "num_block_lookups": p.num_block_lookups,
                                        "warmup_end_ms": p.warmup_end_ms} for p in prepared},
                    "warmup_fraction": warmup_fraction, "num_configurations": len(configs)}
            ws.write_outputs(out, results, cost_per_load, meta=meta, extra_files=plots)
        if as_json:
            json.dump({"summary": summary, "instances": per_instance}, sys.stdout)
            sys.stdout.write("\n")
            return
        stdout = Console(width=None if sys.stdout.isatty() else 180)  # files and pipes get full rows
        shares: dict[tuple, float] = {}
        for row in per_instance:
            if row["phase"] == "all":
                key = tuple(row[k] for k in ws.CONFIG_FIELDS)
                shares[key] = max(shares.get(key, 0.0), row["request_share"])
        for row in summary:
            row["max_share"] = shares[tuple(row[k] for k in ws.CONFIG_FIELDS)]
        if len(results) == 1:
            label = config_label(summary[0], True)
            stdout.print(config_table(summary, f"{label}: per phase (share = busiest instance's request share)", "phase"))
            rows = [r for r in per_instance if r["phase"] == "all"]
            stdout.print(config_table(rows, "per instance, phase all (share = the instance's request share)", "instance"))
        elif len(results) <= 24:
            rows = [r for r in summary if r["phase"] == "all"]
            stdout.print(config_table(rows, "Workload opportunity, phase all (share = busiest instance's request share)", "config"))
        else:
            stdout.print(pivot_table(summary))
        if out is not None:
            stdout.print(f"wrote {len(results)} configurations to {out} (SHA256SUMS, manifest.json)")
