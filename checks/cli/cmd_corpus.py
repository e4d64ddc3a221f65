"""Command ``corpus``: the regression corpus of programs that steer the engine's own scheduling onto the
spec's edges (listed, searched anew with ``--build``, or grown toward the edge classes of the coverage
gate that no program drives with ``--grow``, on the embedded Dask cluster).

For example::

    $ flightcheck corpus
    $ flightcheck corpus --build --scenario burst2 --seconds 20
    $ flightcheck corpus --grow --seconds 45
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from flightcheck.checks.errors import usage_error
from flightcheck.checks.faults import EXIT_FAILED
from flightcheck.checks.inputs import shown
from flightcheck.spec.scenario import SCENARIOS


def _departs(error: Any, save_dir: Path) -> typer.Exit:
    """A searched program the engine fails on: a verdict on the engine (exit 1), with the program saved."""
    from flightcheck.checks.conform.campaign import save_failure
    from flightcheck.checks.conform.program import Program

    path = save_failure(Program.from_json(json.loads(error.program)), save_dir)
    print(f"{error}\nthe program is saved: flightcheck conform --replay {path}\nthe corpus is unchanged", file=sys.stderr)
    return typer.Exit(EXIT_FAILED)


def register(app: typer.Typer) -> None:
    """Add ``corpus`` to the app."""

    @app.command()
    def corpus(
        build: bool = typer.Option(False, "--build", help="Search for new programs and write the corpus."),
        grow: bool = typer.Option(False, "--grow", help="Add programs that drive the edge classes no program "
                                  "drives yet (the check's coverage gate), and write the corpus."),
        seconds: float = typer.Option(20.0, min=1, help="Search time per scenario and policy (with --build or --grow)."),
        scenario: Optional[list[str]] = typer.Option(None, help="Only these scenarios (repeatable)."),
        jobs: int = typer.Option(2, min=1, help="Parallel searches (with --build or --grow): the embedded Dask cluster's workers."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS",
                                                help="Run the searches (with --build or --grow) on this Dask scheduler's workers."),
        save_dir: Path = typer.Option(Path("."), "--save-dir", help="Where a program the engine fails on is "
                                      "written (with --build or --grow; the corpus is left as it was)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """The regression corpus: programs that steer the engine's own scheduling onto the spec's edges."""
        from flightcheck.checks.conform import corpus as corpus_mod

        for name in scenario or []:
            if name not in SCENARIOS:
                raise usage_error(f"unknown scenario {shown(name)}; known: {', '.join(SCENARIOS)}")
        entries = corpus_mod.load()
        if build and grow:
            raise usage_error("--build and --grow are two searches: give one")
        if grow:
            from flightcheck.checks.cluster import ClusterError
            from flightcheck.checks.conform.grow import grow_all

            def told(key, found, wanted):
                if not as_json:
                    print(f"{key}: {len(found)} of {len(wanted)} wanted edge classes driven", flush=True)

            mine = [e for e in entries if not scenario or e.scenario in scenario]
            try:
                grown, still, ordered_out = grow_all(mine, seconds=seconds, jobs=jobs, scheduler=scheduler, progress=told)
            except ClusterError as error:
                raise usage_error(str(error)) from None
            except corpus_mod.CandidateDeparts as error:
                raise _departs(error, save_dir) from None
            by_key = {e.key: e for e in grown}
            entries = [by_key.get(e.key, e) for e in entries]
            corpus_mod.save(entries)
            if not as_json:
                print(f"{len(ordered_out)} edge class(es) out of the engine's reach by its admission order "
                      "(fifo-admission)" + "".join(f"\n  {c}" for c in ordered_out))
                print(f"{len(still)} edge class(es) within the engine's reach still undriven"
                      + "".join(f"\n  {c}\n    {why}" for c, why in still.items()))
        if build:
            from flightcheck.checks.cluster import ClusterError

            try:
                fresh = corpus_mod.build_all(seconds=seconds, jobs=jobs, only=scenario, scheduler=scheduler)
            except ClusterError as error:
                raise usage_error(str(error)) from None
            except corpus_mod.CandidateDeparts as error:
                raise _departs(error, save_dir) from None
            keys = {e.key for e in fresh}
            entries = [e for e in entries if e.key not in keys] + fresh
            order = {k: n for n, k in enumerate(f"{n} {' '.join(p.values())}" for n, p in corpus_mod.grid())}
            entries.sort(key=lambda e: order.get(e.key, len(order)))
            corpus_mod.save(entries)
        listed = [e for e in entries if not scenario or e.scenario in scenario]
        if as_json:
            print(json.dumps({"entries": [{"key": e.key, "programs": len(e.programs), "edges": e.num_edges,
                                           "covered": e.num_covered, "missed": e.missed} for e in listed]}))
            raise typer.Exit(0)
        t = Table(title="the engine's own scheduling over the spec's edges (corpus)")
        for col in ("scenario and policy", "programs", "edges covered", "missed, by the step-loop rule that explains them"):
            t.add_column(col, overflow="fold")
        for e in listed:
            t.add_row(e.key, str(len(e.programs)), f"{e.num_covered}/{e.num_edges} ({100 * e.num_covered / max(1, e.num_edges):.0f}%)",
                      ", ".join(f"{a} {n}" for a, n in e.missed.items()))
        Console().print(t)
        raise typer.Exit(0)
