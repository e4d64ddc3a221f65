"""Presentation of explorer results for people: rich tables and counterexamples.

Kept apart from the checker so the same :class:`~flightcheck.checks.explore.result.ExploreResult` serves the
terminal, ``--json`` and the renderings.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.checks.explore.explorer import explore
    >>> import io
    >>> from rich.console import Console
    >>> console = Console(file=io.StringIO(), width=100, record=True)
    >>> print_result(console, explore(FlightSpec(SCENARIOS["burst2"])), title="burst2")
    >>> "one_flight_per_input" in console.export_text()
    True
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from flightcheck.checks.explore.result import ExploreResult

_STYLE = {"holds": "green", "found": "green", "violated": "bold red", "never": "bold red"}


def property_table(result: ExploreResult, title: str = "") -> Table:
    """One row per property: name, kind, verdict, counterexample length."""
    t = Table(title=title or None, show_lines=False)
    t.add_column("property", no_wrap=True)
    t.add_column("kind", overflow="fold")
    t.add_column("verdict", overflow="fold")
    t.add_column("path", justify="right")
    for p in result.properties:
        cx = p.counterexample or p.witness
        t.add_row(p.name, p.kind, f"[{_STYLE[p.verdict]}]{p.verdict}[/]", str(len(cx)) if cx else "")
    return t


def stats_line(result: ExploreResult) -> str:
    """``states 52, edges 110, depth 14, 0.02 s (2,600 states/s), symmetry on``."""
    st = result.stats
    return (f"states {st.states:,}, edges {st.edges:,}, depth {st.depth}, {st.seconds:.2f} s "
            f"({st.states_per_second:,.0f} states/s), symmetry {'on' if st.symmetry else 'off'}")


def print_result(console: Console, result: ExploreResult, title: str = "") -> None:
    """The property table, every counterexample as a numbered list, and the statistics."""
    console.print(property_table(result, title))
    for p in result.violations:
        if p.counterexample is None:
            console.print(f"[bold red]{p.name}[/]: never holds in any reachable state ({p.story})")
            continue
        console.print(f"\n[bold red]{p.name} violated[/] ({p.story})\nshortest counterexample, {len(p.counterexample)} steps:")
        console.print(p.counterexample.format(result.spec), markup=False, highlight=False)
    console.print(stats_line(result))
