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
        t = Table(title="design variants")
        for col in ("name", "must violate", "default scenario", "story"):
            t.add_column(col)
        for r in rows:
            t.add_row(r["name"], r["expected_violation"] or "[green](correct)[/]", f"{r['scenario']}\n{r['policy']}",
                      r["story"])
        Console().print(t)
