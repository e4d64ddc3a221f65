"""Command ``diff``: the state graphs of two policies (or variants) of one scenario, or of one scenario
at two commits, compared.

Both graphs are explored; their states are tuples of one layout, so they compare directly. The command
prints how many states and edges occur only under A, only under B, and under both, and with
``--render`` draws the union, coloured by where each state and edge occurs.

With ``--base REF`` the two sides are one policy (``--a``, default the scenario's own) at the commit REF
and in the working tree, each explored by its own code (:mod:`flightcheck.checks.review.base_diff`):
states and edges added and removed, the first change, verdicts that moved, and with ``--render`` one
picture, added green and removed red. Exit 1 when a verdict got worse; 2 for an unknown REF or a
baseline that cannot be imported.

For example::

    $ flightcheck diff --render burst2-diff.png
    $ flightcheck diff --scenario burst2 --a publication=incremental --b publication=on-completion --json
    $ flightcheck diff --a variant=correct --b variant=early-release --render early.html
    $ flightcheck diff --base HEAD~1 --scenario burst2 --render change.svg
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from flightcheck.checks.errors import usage_error
from flightcheck.spec.scenario import SCENARIOS


def register(app: typer.Typer) -> None:
    """Add ``diff`` to the app."""

    @app.command()
    def diff(
        scenario: str = typer.Option("burst2", help=f"A default scenario: {', '.join(SCENARIOS)}."),
        a: Optional[str] = typer.Option(None, "--a", help="Side A: KEY=VALUE[,KEY=VALUE] over the scenario's policy (release, publication, coordination, capacity, chunk, variant). Default: release=after-prefill; with --base, the scenario's own policy."),
        b: Optional[str] = typer.Option(None, "--b", help="Side B, in the same form. Default: release=on-completion; not with --base."),
        base: Optional[str] = typer.Option(None, "--base", metavar="REF", help="Compare --a's graph at the commit REF (any git ref, explored by its own code in a temporary worktree) with the working tree's."),
        render: Optional[Path] = typer.Option(None, help="Draw the union: .dot, .svg, .png or .html."),
        symmetry: bool = typer.Option(True, help="Merge states that differ by renaming interchangeable requests."),
        force: bool = typer.Option(False, "--force", help="Draw graphs above the readable size limit too."),
        max_states: int = typer.Option(200_000, min=1, help="Give up beyond this many states per side."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    ) -> None:
        """Compare two policies' state graphs of one scenario: counts, and a coloured picture."""
        from flightcheck.checks.explore.compare import compare_sides, parse_side
        from flightcheck.checks.explore.explorer import StateLimitExceeded
        from flightcheck.checks.explore.picture import SUFFIXES, RenderError

        if scenario not in SCENARIOS:
            raise usage_error(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
        if render is not None and render.suffix.lower() not in SUFFIXES:
            raise usage_error(f"--render must end in {', '.join(SUFFIXES)}; got {render.name!r}")
        if base is not None:
            if b is not None:
                raise usage_error("--base compares one policy (--a) across two commits; leave out --b")
            try:
                side = parse_side("--a", a or "")
            except ValueError as e:
                raise usage_error(str(e))
            from flightcheck.checks.review.base_diff import base_diff_command
            request = {"scenario": scenario, "policy": {k: v for k, v in side.items() if k != "variant"},
                       "variant": side.get("variant", "correct"), "symmetry": symmetry, "max_states": max_states}
            raise typer.Exit(base_diff_command(base, request, render=render, force=force, as_json=as_json))
        try:
            sides = [parse_side("--a", a if a is not None else "release=after-prefill"),
                     parse_side("--b", b if b is not None else "release=on-completion")]
        except ValueError as e:
            raise usage_error(str(e))
        try:
            out = compare_sides(scenario, sides, symmetry=symmetry, max_states=max_states, render=render, force=force)
        except (StateLimitExceeded, RenderError) as e:
            raise usage_error(str(e))
        if as_json:
            print(json.dumps(out))
            return
        from rich.table import Table
        side = {k: out[k]["name"].replace(",", ", ") for k in ("a", "b")}  # a narrow terminal wraps between settings
        t = Table(title=f"{scenario}: A = {side['a']}; B = {side['b']}")
        for col in ("", "only in A", "only in B", "in both"):
            t.add_column(col, justify="right", overflow="fold")
        for what in ("states", "edges"):
            t.add_row(what, *(str(out[f"{what}_{k}"]) for k in ("only_a", "only_b", "common")))
        console = Console()
        console.print(t)
        if render is not None:
            console.print(f"picture written to {render}")
