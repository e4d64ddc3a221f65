"""Command ``check``, the main job: its options checked before anything runs, then
:func:`~flightcheck.checks.suite.job.run_suite` (or the review of :mod:`flightcheck.checks.review`).

For example::

    $ flightcheck check                       # ends naming the report: report: flightcheck-report/index.html
    $ flightcheck check --quick --report out/ --json
    $ flightcheck check --baseline origin/main                  # what behaviour changed since main
    $ flightcheck check --since HEAD~3                          # only the stages the change can affect
    $ flightcheck check --quick --require-proof                 # exit 1 unless every property row is a proof
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from flightcheck.checks.errors import check_choice, usage_error


def register(app: typer.Typer) -> None:
    """Add ``check`` to ``app``."""

    @app.command()
    def check(
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
        quick: bool = typer.Option(False, "--quick", help="Skip the real model and the largest scenarios; replay "
                                   "each scenario's corpus under its own policy only."),
        budget: Optional[float] = typer.Option(None, "--budget", min=1, metavar="SECONDS",
                                               help="Random conformance programs beyond the seeded campaign."),
        model: str = typer.Option("tiny", help="tiny | smollm2: the model the conformance stage drives."),
        record: bool = typer.Option(False, "--record", help="Merge this run's figures into the recorded ones (only "
                                    "from a run where every row passed; figures of stages not run are kept)."),
        expectations: Optional[Path] = typer.Option(None, "--expectations", metavar="FILE",
                                                    help="The recorded figures file (default: the package's)."),
        stage: Optional[list[str]] = typer.Option(None, "--stage", help="Run only this stage (repeatable)."),
        report: str = typer.Option("flightcheck-report", "--report", metavar="DIR",
                                   help="Write the HTML report (index.html, graphs/) into DIR."),
        no_report: bool = typer.Option(False, "--no-report", help="Write no report."),
        baseline: Optional[str] = typer.Option(None, "--baseline", metavar="REF",
                                               help="Compare the working tree's behaviour with git REF's (state "
                                               "graphs, verdicts, counterexamples, variants), each by its own code; "
                                               "exit 1 when a verdict regressed."),
        since: Optional[str] = typer.Option(None, "--since", metavar="REF",
                                            help="Run only the stages a change since git REF can affect."),
        strict: bool = typer.Option(False, "--strict", help="With --baseline: any behaviour change fails (exit 1)."),
        require_proof: bool = typer.Option(False, "--require-proof", help="Fail (exit 1) unless every row that checks "
                                           "properties proves them (for all sizes, or for its scenario by k-induction or "
                                           "by exploring every state), naming each row that is only bounded."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", envvar="DASK_SCHEDULER_ADDRESS",
                                                help="Run the stages' items on this Dask scheduler (tcp://HOST:PORT; "
                                                "default: an embedded local Dask cluster)."),
        workers: Optional[int] = typer.Option(None, "--workers", min=1,
                                              help="Worker processes of the embedded cluster (default: one per "
                                              "core, at most two; 1 runs everything in this process)."),
        scenario: Optional[list[str]] = typer.Option(None, "--scenario",
                                                     help="With --baseline: compare only this default scenario "
                                                     "(repeatable)."),
    ) -> None:
        """The main job: every check flightcheck has, over the default scenarios, with a summary and a
        static HTML report (opens from disk; its path is the last line). Exit 0 passed, 1 a check failed,
        2 bad arguments (or a refused --record), 3 flightcheck itself failed (the run is not a verdict).
        Each row says how strong it is (proved for all sizes, for its scenario, or only bounded: not a
        proof) and the summary counts them apart; --require-proof fails every row that is not a proof.
        With --baseline REF: what behaviour changed since REF, instead of the stages (exit 1 when a verdict
        regressed)."""
        from flightcheck.checks.suite.expect import EXPECTATIONS_PATH, load, writable
        from flightcheck.checks.faults import EXIT_FAILED, EXIT_FAULT, EXIT_OK
        from flightcheck.checks.suite.job import RecordRefused, run_suite, stage_table

        check_choice("model", model, ("tiny", "smollm2"))
        known = [s for s, _p, _m in stage_table()]
        for s in stage or []:
            if s not in known:
                raise usage_error(f"unknown --stage {s!r}; known: {', '.join(known)}")
        if baseline is not None and (since is not None or stage or record or require_proof):
            raise usage_error("--baseline compares two commits' graphs; it takes no --since, --stage, --record or "
                              "--require-proof")
        if scheduler is not None and workers is not None:
            raise usage_error("--workers sizes the embedded cluster; with --scheduler the cluster's own workers run")
        if (strict or scenario) and baseline is None:
            raise usage_error("--strict and --scenario go with --baseline REF")
        report_dir = None if no_report else _report_folder(report)
        if baseline is not None:
            from flightcheck.checks.review.command import baseline_command
            raise typer.Exit(baseline_command(baseline, scenarios=scenario, quick=quick, strict=strict,
                                              as_json=as_json, report_dir=report_dir))
        book = expectations or EXPECTATIONS_PATH
        load(book, missing_ok=record)  # a missing or malformed file is said now, not after the whole job
        if record and (why := writable(book)) is not None:
            raise usage_error(f"--record cannot write {book}: {why}")
        try:
            if since is not None:
                from flightcheck.checks.review.command import since_command
                result = since_command(since, known=known, stage=stage, as_json=as_json, run=lambda todo: run_suite(
                    as_json=as_json, quick=quick, budget=budget, model=model, record=record, stages=todo,
                    report_dir=report_dir, expectations=book, scheduler=scheduler, workers=workers,
                    require_proof=require_proof))
            else:
                result = run_suite(as_json=as_json, quick=quick, budget=budget, model=model, record=record,
                                   stages=stage, report_dir=report_dir, expectations=book, scheduler=scheduler,
                                   workers=workers, require_proof=require_proof)
        except RecordRefused as refused:
            raise usage_error(str(refused)) from None
        raise typer.Exit({"ok": EXIT_OK, "failed": EXIT_FAILED}.get(result, EXIT_FAULT))


def _report_folder(text: str) -> Path:
    """``--report DIR`` checked before anything runs: not empty, a folder (made now if absent) that can
    be written."""
    import os

    if not text.strip():
        raise usage_error("--report must name a folder; got an empty path (use --no-report for none)")
    folder = Path(text)
    try:
        if folder.exists() and not folder.is_dir():
            raise usage_error(f"--report {folder}: exists and is not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise usage_error(f"--report {folder}: the folder cannot be written")
    except OSError as error:
        raise usage_error(f"--report {folder}: {error.strerror or error}") from None
    return folder
