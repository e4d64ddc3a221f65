"""Command ``coverage``: which states and edges of the explored spec graphs the engine's runs visit.

For example::

    $ flightcheck coverage --scenario burst2 --runs 60 --png cov.png --render burst2.svg
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from flightcheck.checks.errors import usage_error
from flightcheck.checks.inputs import shown
from flightcheck.spec.scenario import SCENARIOS


def register(app: typer.Typer) -> None:
    """Add ``coverage`` to the app."""

    @app.command()
    def coverage(
        scenario: list[str] = typer.Option(["burst2"], help="Default scenario(s) to cover (repeatable)."),
        runs: int = typer.Option(60, min=1, help="Engine runs per scenario (own scheduling)."),
        seconds: Optional[float] = typer.Option(None, min=1, help="Time per scenario instead of --runs."),
        directed: bool = typer.Option(False, "--directed", help="Also drive the engine to every edge via replay."),
        png: Optional[Path] = typer.Option(None, help="Write the coverage figure (PNG)."),
        render: Optional[Path] = typer.Option(None, help="Render the first scenario's graph, visited edges green."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Which states and edges of the explored spec graphs the engine's runs visit."""
        from flightcheck.checks.conform.coverage import cover, cover_directed, plot_coverage, render_coverage

        for name in scenario:
            if name not in SCENARIOS:
                raise usage_error(f"unknown scenario {shown(name)}; known: {', '.join(SCENARIOS)}")
        if png is not None and png.suffix.lower() != ".png":
            raise usage_error(f"--png must end in .png; got {shown(png.name)}")
        results, directed_results = [], []
        for name in scenario:
            results.append(cover(SCENARIOS[name], runs=runs, seconds=seconds))
            if directed:
                directed_results.append(cover_directed(SCENARIOS[name], explored=results[-1].explored))
        if png is not None:
            plot_coverage(results, png)
        if render is not None:
            render_coverage(directed_results[0] if directed_results else results[0], render)
        failed = [r for r in results if r.failure is not None]
        if as_json:
            print(json.dumps({"scenarios": [r.to_json() for r in results],
                              "directed": [r.to_json() for r in directed_results]}))
        else:
            t = Table(title="spec coverage by the engine")
            for col in ("scenario", "runs", "states", "edges", "edges (directed)", "most missed"):
                t.add_column(col, no_wrap=col == "scenario", overflow="fold")
            for k, r in enumerate(results):
                d = directed_results[k] if directed_results else None
                t.add_row(r.scenario.name, str(r.runs), f"{len(r.states)}/{r.num_states}",
                          f"{len(r.edges)}/{r.num_edges} ({100 * r.edge_fraction:.0f}%)",
                          f"{len(d.edges)}/{d.num_edges} ({100 * d.edge_fraction:.1f}%)" if d else "-",
                          ", ".join(f"{a} {n}" for a, n in list(r.missed_actions().items())[:3]))
            Console().print(t)
            for r in failed:
                Console().print(r.failure.format(), markup=False, highlight=False)
        raise typer.Exit(1 if failed else 0)
