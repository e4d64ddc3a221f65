"""Command ``conform``: the real engine driven in lockstep with the spec by Hypothesis campaigns.

For example::

    $ flightcheck conform --examples 50 --release on-completion
    $ flightcheck conform --mutant forget-released          # a broken engine: exit 1 with the shrunk run
    $ flightcheck conform --replay conform-failure.json     # one saved program again
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from flightcheck.checks.cli.common import check_program_for_model, mutant_named, print_quoted, read_program_file
from flightcheck.checks.errors import check_choice, loaded_model
from flightcheck.spec.scenario import COORDINATIONS, LEADER_LOSSES, PUBLICATIONS, RELEASES


def register(app: typer.Typer) -> None:
    """Add ``conform`` to the app."""

    @app.command()
    def conform(
        model: str = typer.Option("tiny", help="tiny | smollm2"),
        examples: int = typer.Option(30, min=1, help="Hypothesis examples (engine runs) per campaign."),
        seconds: Optional[float] = typer.Option(None, min=1, help="Keep running campaigns for this long."),
        release: Optional[str] = typer.Option(None, help="Fix the release point (default: Hypothesis picks)."),
        publication: Optional[str] = typer.Option(None, help="Fix the publication policy."),
        coordination: Optional[str] = typer.Option(None, help="Fix the coordination."),
        max_rules: int = typer.Option(25, min=1, help="Rules per run."),
        leader_loss: Optional[str] = typer.Option(None, "--leader-loss", help="Fix the leader-loss policy."),
        seed: Optional[int] = typer.Option(None, help="Hypothesis seed, for a repeatable campaign."),
        mutant: Optional[str] = typer.Option(None, help="Run against a deliberately broken engine."),
        replay_program: Optional[Path] = typer.Option(None, "--replay", metavar="FILE",
                                                      help="Run one saved program (a failure check printed)."),
        save_dir: Path = typer.Option(Path("."), "--save-dir", help="Where a failing program is written."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Drive the real engine in lockstep with the spec (Hypothesis state machine); exit 1 with the shrunk failing run."""
        from flightcheck.checks.conform.campaign import run_conformance, run_programs, save_failure
        from flightcheck.checks.conform.results import ConformOptions

        check_choice("model", model, ("tiny", "smollm2"))
        check_choice("release", release, RELEASES)
        check_choice("publication", publication, PUBLICATIONS)
        check_choice("coordination", coordination, COORDINATIONS)
        check_choice("leader-loss", leader_loss, LEADER_LOSSES)
        m = mutant_named(mutant)
        program = read_program_file(replay_program) if replay_program is not None else None
        loaded_model(model)  # a bad model file is bad input (exit 2), not a run that departs from the spec
        if program is not None:
            check_program_for_model(program, replay_program, model)
        opts = ConformOptions(model=model, release=release, publication=publication, coordination=coordination,
                              leader_loss=leader_loss, examples=examples, seconds=seconds, max_rules=max_rules,
                              seed=seed)
        console = Console(stderr=as_json)

        def campaign():
            if program is not None:
                return run_programs([program], model, shrink_seconds=0)
            return run_conformance(opts)

        with console.status(f"conformance on the {model} model ..."):
            if m is not None:
                with m.patched():
                    result = campaign()
            else:
                result = campaign()
        if result.failure is not None and result.failure.program is not None and program is None:
            result.failure.saved_to = str(save_failure(result.failure.program, save_dir))
        if as_json:
            out = result.to_json()
            out["mutant"] = mutant
            print(json.dumps(out))
        elif result.ok:
            console.print(f"[green]conformed[/]: {result.runs} runs, {result.steps} engine steps, {result.events} "
                          f"events checked, {len(result.transitions)} distinct spec transitions, "
                          f"{result.seconds:.1f} s; reached {result.features}")
        else:
            console.print("[bold red]the engine departs from the spec[/]")
            print_quoted(console, result.failure.format())
        raise typer.Exit(0 if result.ok else 1)
