"""Command ``variants``: the design-history variants, each with the property it must violate and the
default scenario and policy every command runs it on.

For example::

    $ flightcheck variants
    $ flightcheck variants --json
"""

from __future__ import annotations

import json

import typer
from rich.console import Console

from flightcheck.checks.suite.defaults import variant_scenario
from flightcheck.spec.variants import VARIANTS


def register(app: typer.Typer) -> None:
    """Add ``variants`` to the app."""

    @app.command()
    def variants(as_json: bool = typer.Option(False, "--json", help="Print a JSON list.")) -> None:
        """List the design-history variants, each with the property it must violate and the default scenario
        and policy every command runs it on."""
        rows = [{"name": v.name, "expected_violation": v.expected_violation, "story": v.story,
                 "scenario": variant_scenario(v.name).name, "policy": variant_scenario(v.name).policy.label()}
                for v in VARIANTS.values()]
        if as_json:
            print(json.dumps(rows))
            return
        from rich.table import Table
        # Names and property names are kept whole (at 80 columns too): the property goes under the name, the
        # policy label breaks at its slashes, and only the story and scenario columns wrap.
        t = Table(title="design variants")
        t.add_column("variant\n[dim]must violate[/]", no_wrap=True)
        t.add_column("default scenario and policy", overflow="fold", min_width=14)
        t.add_column("story", overflow="fold", min_width=20)
        for r in rows:
            t.add_row(f"{r['name']}\n[dim]{r['expected_violation'] or '[green](correct)[/]'}[/]",
                      f"{r['scenario']}\n{r['policy'].replace('/', ' / ')}", r["story"])
        Console().print(t)
