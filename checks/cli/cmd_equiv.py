"""Command ``equiv``: are two designs indistinguishable from outside (refactor equivalence)? On the demo
scenario of the one that is not ``correct`` unless ``--scenario`` is given, as ``explore --variant`` and
``check`` do (:mod:`flightcheck.checks.suite.defaults`), so the lengths agree.

For example::

    $ flightcheck equiv correct draining
    $ flightcheck equiv correct early-release --scenario burst2 --publication on-completion
"""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console

from flightcheck.checks.cli.common import scenario_named, scenario_policies, variant_named
from flightcheck.checks.errors import usage_error
from flightcheck.checks.suite.defaults import equiv_depth, pair_scenario
from flightcheck.spec.variants import VARIANTS


def register(app: typer.Typer) -> None:
    """Add ``equiv`` to the app."""

    @app.command()
    def equiv(
        variant_a: str = typer.Argument(..., help="First design variant."),
        variant_b: str = typer.Argument(..., help="Second design variant."),
        scenario: Optional[str] = typer.Option(None, help="The scenario both run (default: the demo scenario and "
                                               "policy of the design that is not `correct`, a mutant's first)."),
        depth: Optional[int] = typer.Option(None, help="Look for a distinguishing sequence up to this many steps "
                                            "(default: as deep as `check` looks, 10 with a mutant, 6 otherwise)."),
        release: Optional[str] = typer.Option(None, help="after-prefill | on-completion (default: the scenario's)."),
        publication: Optional[str] = typer.Option(None, help="incremental | on-completion (default: the scenario's)."),
        no_proof: bool = typer.Option(False, "--no-proof", help="Skip the induction on the product."),
        search: str = typer.Option("explicit", help="explicit (breadth-first over concrete pairs) | z3 (BMC on the "
                                   "symbolic product): how the shortest distinguishing sequence is searched."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Are two designs indistinguishable from outside? Exit 0 if so, 1 with a shortest distinguishing sequence."""
        if depth is not None and depth < 0:
            raise usage_error(f"--depth must be >= 0; got {depth}")
        if search not in ("explicit", "z3"):
            raise usage_error(f"--search must be explicit or z3; got {search!r}")
        variant_named(variant_a, "VARIANT_A")
        variant_named(variant_b, "VARIANT_B")
        base = scenario_named(scenario) if scenario is not None else pair_scenario(variant_a, variant_b)
        scn = scenario_policies(base, release or base.policy.release, publication, None)[0]
        depth = equiv_depth(variant_a, variant_b) if depth is None else depth
        from flightcheck.checks.proofs.equivalence import check_equivalence
        from flightcheck.checks.report.lockstep import lockstep_steps

        r = check_equivalence(variant_a, variant_b, scn, depth=depth, prove_unbounded=not no_proof, search=search)
        steps = lockstep_steps(VARIANTS[variant_a].build(scn), VARIANTS[variant_b].build(scn), r.sequence)
        if as_json:
            print(json.dumps({"variant_a": variant_a, "variant_b": variant_b, "scenario": scn.name,
                              "policy": scn.policy.label(), "verdict": r.verdict, "equivalent": r.equivalent,
                              "depth": r.depth, "search": search, "sequence": r.sequence, "difference": r.difference,
                              "steps": [{"action": a, variant_a: ca, variant_b: cb} for _n, a, ca, cb in steps],
                              "seconds": round(r.seconds, 3)}, indent=2))
        else:
            console = Console()
            colour = "green" if r.equivalent else "red"
            console.print(f"{scn.name} · {scn.policy.label()}", highlight=False)
            console.print(f"[{colour}]{r.summary()}[/]")
            if not r.equivalent:
                width = max(len(variant_a), len(variant_b)) + 1
                for n, a, ca, cb in steps:  # what each step changed in each design
                    console.print(f"{n:2d}. {a}", highlight=False)
                    console.print(f"    {variant_a + ':':<{width}} {ca}", markup=False, highlight=False)
                    console.print(f"    {variant_b + ':':<{width}} {'(the same)' if cb == ca else cb}",
                                  markup=False, highlight=False)
        raise typer.Exit(0 if r.equivalent else 1)
