"""Command ``export``: the spec of a scenario and policy as a model for another checker (Promela for SPIN).

For example::

    $ flightcheck export --promela --scenario burst2 > burst2.pml
    $ flightcheck export --promela --scenario burst6 --release on-completion --out burst6.pml
    $ flightcheck export --promela --variant stranded-followers --liveness --out stranded.pml
    $ spin -a -o2 burst2.pml && gcc -O2 -DNOREDUCE -DSAFETY -o pan pan.c && ./pan
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from flightcheck.checks.cli.explore_options import build_scenario
from flightcheck.checks.cli.config_options import with_options
from flightcheck.checks.cli.policy_options import apply_policy, policy_changes, policy_parameters
from flightcheck.checks.errors import usage_error
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS
from flightcheck.spec.variants import VARIANTS


def register(app: typer.Typer) -> None:
    """Add ``export`` to the app."""

    def export(
        promela: bool = typer.Option(False, "--promela", help="Write a Promela model for SPIN (the one format)."),
        scenario: Optional[str] = typer.Option(
            None, help=f"A default scenario ({', '.join(SCENARIOS)}) or a scale one ({', '.join(SCALE_SCENARIOS)})."),
        requests: Optional[int] = typer.Option(None, help="A burst of N requests instead of a named scenario."),
        prompts: int = typer.Option(1, help="Prompt classes in the burst (with --requests)."),
        pages: int = typer.Option(2, help="Full prompt pages per request (with --requests)."),
        decode: int = typer.Option(1, help="Decode steps per request (with --requests)."),
        aborts: bool = typer.Option(False, "--aborts", help="Let the client cancel any live request."),
        notifications: bool = typer.Option(False, "--notifications", help="Send bogus termination notifications."),
        eviction: bool = typer.Option(False, "--eviction", help="Let unreferenced pages be evicted."),
        variant: str = typer.Option("correct", help=f"Design variant: {', '.join(VARIANTS)}."),
        liveness: bool = typer.Option(False, "--liveness", help="One process per engine action and the LTL "
                                      "formulas, for `pan -a -f` (SPIN's weak fairness is per process)."),
        out: Optional[Path] = typer.Option(None, help="Write the model here instead of to standard output."),
        **policy: Any,
    ) -> None:
        """Export the spec of a scenario, policy and variant, generated from the spec's own code."""
        from flightcheck.checks.promela.export import export_promela

        if not promela:
            raise usage_error("choose the format: --promela (the only one so far)")
        policy_changes(policy)  # a bad choice is refused before anything is built
        if variant not in VARIANTS:
            raise usage_error(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        v = VARIANTS[variant]
        if scenario is None and requests is None and variant != "correct":
            scn = SCENARIOS[v.demo].with_policy(**dict(v.demo_policy))
        else:
            scn = build_scenario(scenario, requests, prompts, aborts=aborts, notifications=notifications,
                                 eviction=eviction, pages=pages, decode=decode)
        scn = apply_policy(scn, policy)
        model = export_promela(v.build(scn), liveness=liveness)
        if out is None:
            typer.echo(model.text, nl=False)
            return
        try:
            out.write_text(model.text)
        except OSError as e:
            raise usage_error(f"cannot write {out}: {e.strerror}")
        typer.echo(f"{out}: {model.num_steps} steps, {len(model.assertions)} assertions"
                   + (f", {len(model.ltl)} LTL formulas" if model.ltl else ""), err=True)

    app.command()(with_options(export, policy_parameters()))
