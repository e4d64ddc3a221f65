"""``flightcheck workload``: is single-flight worth building for this traffic?

Replays request traces through the workload opportunity model (:mod:`flightcheck.checks.workload.opportunity`)
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
import sys
from pathlib import Path

import typer

from flightcheck.checks.errors import usage_error
from flightcheck.checks.inputs import MAX_WORKERS


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

        from flightcheck.checks.conform.eventlog import parse_events
        from flightcheck.checks.workload.opportunity import prepare_trace
        from flightcheck.checks.workload.options import WorkloadError, WorkloadOptions
        from flightcheck.checks.workload.sources import load_sources
        from flightcheck.checks.workload.study import run_study, write_study
        from flightcheck.checks.workload.tables import result_tables

        options = WorkloadOptions(
            w_eff=tuple(w_eff or ()), instances=tuple(instances or ()), capacity=tuple(capacity or ()),
            routing=tuple(routing or ()), lookup=tuple(lookup or ()), sweep=sweep, insert_on_miss=insert_on_miss,
            cost_per_load=cost_per_load, warmup_fraction=warmup_fraction, workers=workers, cohort_rows=cohort_rows,
            out=out, from_events=from_events, block_tokens=block_tokens, convert_out=convert_out)
        try:
            configs = options.configs()
            loaded = load_sources(traces or [], from_events, block_tokens=block_tokens, convert_out=convert_out,
                                  check_events=parse_events, warn=lambda note: typer.echo(note, err=True))
        except WorkloadError as error:
            raise usage_error(str(error)) from None
        prepared = [prepare_trace(t, warmup_fraction) for t in loaded]

        console = Console(stderr=True)
        with Progress(TextColumn("[bold]workload model"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=as_json) as progress:
            bar = progress.add_task("configurations", total=len(configs) * len(prepared))
            study = run_study(prepared, configs, options, on_progress=lambda n: progress.advance(bar, n))
        if out is not None:
            write_study(study, out, options)
        if as_json:
            json.dump({"summary": study.summary, "instances": study.per_instance}, sys.stdout)
            sys.stdout.write("\n")
            return
        stdout = Console(width=None if sys.stdout.isatty() else 180)  # files and pipes get full rows
        for table in result_tables(study.summary, study.per_instance, len(study.results)):
            stdout.print(table)
        if out is not None:
            stdout.print(f"wrote {len(study.results)} configurations to {out} (SHA256SUMS, manifest.json)")
