"""Command ``mutate``: mutation testing of the engine against the checks ``flightcheck check`` runs.

For example::

    $ flightcheck mutate --quick --sample 20 --seed 1          # a taste: 20 random mutants, quick stages
    $ flightcheck mutate --out runs/mutate                     # every mutant of the four files; report.md, results.json
    $ flightcheck mutate --file impl/pages.py --list           # the mutants and their IDs, nothing run
    $ flightcheck mutate --id 'impl/coordinator.py::Coordinator.release::delete::...' --json
    $ flightcheck mutate --quick --file impl/server/loop.py --sample 30 --seed 1   # the server stage's turn
    $ flightcheck mutate --min-score 0.95                      # exit 1 below 95%
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from flightcheck.checks.errors import usage_error


def register(app: typer.Typer) -> None:
    """Add ``mutate`` to the app."""

    @app.command()
    def mutate(
        file: Optional[list[str]] = typer.Option(None, "--file", help="An engine file to mutate, impl/NAME.py or "
                                                 "impl/server/NAME.py (repeatable; default impl/coordinator.py, "
                                                 "impl/scheduler.py, impl/flights.py, impl/pages.py)."),
        stage: Optional[list[str]] = typer.Option(None, "--stage", help="A check stage MODULE:FUNCTION to run on "
                                                  "each mutant (repeatable; default by file: the server stage for "
                                                  "impl/server/, conform, engine and server for impl/engine.py and "
                                                  "impl/runner.py, conform and engine for the rest)."),
        quick: bool = typer.Option(False, "--quick", help="Run the stages with quick=True (what check --quick runs)."),
        jobs: int = typer.Option(2, min=1, help="Mutants run at once, each in its own process (the embedded "
                                 "Dask cluster's threads, each waiting on one)."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", envvar="DASK_SCHEDULER_ADDRESS",
                                                help="Run the mutants on this Dask scheduler's workers "
                                                     "(tcp://HOST:PORT; each worker needs flightcheck installed)."),
        all_rows: bool = typer.Option(False, "--all-rows", help="Run every row of every stage on each mutant "
                                      "(default: a mutant ends at its first failing row, cheapest checks first)."),
        timeout: Optional[float] = typer.Option(None, min=1, help="Seconds per mutant before it counts as killed "
                                                "by timeout (default: 20x the baseline, at least 120)."),
        sample: Optional[int] = typer.Option(None, min=1, help="Run a random subset of this many mutants."),
        seed: int = typer.Option(0, help="Seed of --sample and of the order mutants run in (shuffled, so "
                                 "an interrupted run's results.jsonl is a uniform random sample)."),
        ids: Optional[list[str]] = typer.Option(None, "--id", help="Run only this mutant (repeatable)."),
        operator: Optional[list[str]] = typer.Option(None, "--operator", help="Use only this operator (repeatable)."),
        no_skip: Optional[list[str]] = typer.Option(None, "--no-skip", help="Run the mutants of this skip rule too."),
        skip_function: Optional[list[str]] = typer.Option(None, "--skip-function",
                                                          help="Also skip mutants inside functions of this name."),
        equivalent: Optional[Path] = typer.Option(None, "--equivalent", help="The equivalence file (default: "
                                                  "checks/mutate/equivalent_mutants.toml)."),
        baseline: bool = typer.Option(True, "--baseline/--no-baseline", help="First check that the unmutated "
                                      "engine passes the stages (exit 2 if not)."),
        min_score: Optional[float] = typer.Option(None, min=0.0, max=1.0, help="Exit 1 when the score is below "
                                                  "this fraction (default: report only)."),
        list_only: bool = typer.Option(False, "--list", help="List the mutants (ID, line, skip rule); run nothing."),
        as_json: bool = typer.Option(False, "--json", help="Print the results as one JSON object."),
        out: Optional[Path] = typer.Option(None, "--out", help="Write report.md, results.json (and results.jsonl "
                                           "as mutants finish) into this folder."),
        from_results: Optional[Path] = typer.Option(None, "--from-results", help="Run nothing: report the outcomes "
                                                    "saved in a results.json or an interrupted run's results.jsonl "
                                                    "against today's mutants and equivalence file."),
    ) -> None:
        """Mutate the engine (coordinator, scheduler, page pool; or any module of impl/ and impl/server/ named
        with --file), run the check stages on each mutant in its own process, and report the mutation score,
        every survivor as a diff, and what killed the rest."""
        from flightcheck.checks.cluster import ClusterError
        from flightcheck.checks.mutate.campaign import BaselineFailed, rescore, run_campaign
        from flightcheck.checks.mutate.config import MutateConfig, OptionError, prepare
        from flightcheck.checks.mutate.listing import print_listing
        from flightcheck.checks.mutate.report import print_summary
        from flightcheck.checks.mutate.threshold import below, unscored

        console = Console(stderr=as_json)
        config = MutateConfig(
            files=tuple(file or ()), stages=tuple(stage) if stage else None, quick=quick, jobs=jobs,
            scheduler=scheduler, all_rows=all_rows, timeout=timeout, sample=sample, seed=seed, ids=tuple(ids or ()),
            operators=tuple(operator or ()), no_skip=tuple(no_skip or ()), skip_functions=tuple(skip_function or ()),
            equivalent=equivalent, baseline=baseline, out=out, from_results=from_results)
        try:
            prepared = prepare(config)
        except OptionError as e:
            raise usage_error(str(e)) from None
        if list_only:
            print_listing(prepared.plan, console, as_json=as_json)
            return
        command = "flightcheck mutate " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if prepared.saved is not None:
            record, what = rescore(prepared, command), f"the saved results in {from_results}"
        else:
            try:
                record, what = run_campaign(prepared, command, console, show_outcomes=not as_json), "the mutants run"
            except BaselineFailed:
                raise typer.Exit(2) from None
            except ClusterError as error:
                raise usage_error(str(error)) from None
        problem = unscored(record, min_score, what)
        if problem is not None:
            raise usage_error(problem)
        if as_json:
            print(json.dumps(record))
        else:
            print_summary(record, console)
            if out is not None and prepared.saved is None:
                console.print(f"report: {out / 'report.md'}, results: {out / 'results.json'}", highlight=False)
        if below(record, min_score):
            raise typer.Exit(1)
