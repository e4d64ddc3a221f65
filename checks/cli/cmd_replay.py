"""Command ``replay``: a counterexample path of the spec replayed against the engine.

For example::

    $ flightcheck explore --variant forget-at-release --json > cx.json
    $ flightcheck replay cx.json --mutant forget-released
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from flightcheck.checks.cli.common import mutant_named, print_quoted
from flightcheck.checks.cli.config_options import with_options
from flightcheck.checks.cli.policy_options import policy_changes, policy_parameters
from flightcheck.checks.errors import usage_error
from flightcheck.checks.inputs import shown
from flightcheck.spec.scenario import SCENARIOS, Policy


def register(app: typer.Typer) -> None:
    """Add ``replay`` to the app."""

    def replay(
        path: Path = typer.Argument(..., help="explore --json output, or a file of actions (one per line)."),
        scenario: Optional[str] = typer.Option(None, help="Scenario (default: from the JSON, else burst2)."),
        variant: Optional[str] = typer.Option(None, help="The spec variant the path came from."),
        mutant: Optional[str] = typer.Option(None, help="Replay against a deliberately broken engine."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        **policy_options: Any,
    ) -> None:
        """Replay a counterexample path against the engine; exit 0 when the engine behaves as the path says."""
        from flightcheck.checks.conform.replay import path_problem, read_path, replay as run_replay
        from flightcheck.checks.inputs import InputError
        from flightcheck.spec.variants import VARIANTS

        changes = policy_changes(policy_options)  # a bad choice is exit 2 before the file is read
        try:
            read = read_path(path)
        except InputError as error:
            raise usage_error(str(error))
        actions, meta = read.actions, read.meta

        def choose(option: str, given: Optional[str], default: str, known) -> str:  # the flag, the file's, the default
            value = given or meta.get(option) or default
            if value not in known:
                what = f"unknown {option} {shown(value)}; known: {', '.join(known)}"
                raise usage_error(f"--{option}: {what}" if given else str(InputError(str(path), read.places[0][0],
                                                                                    option, what)))
            return value

        name = choose("scenario", scenario, "burst2", SCENARIOS)
        vname = choose("variant", variant, "correct", VARIANTS)
        scn = SCENARIOS[name]
        pol = {**scn.policy.__dict__, **meta.get("policy", {}), **changes}
        m = mutant_named(mutant)
        try:
            policy, spec_class = Policy(**pol), VARIANTS[vname].spec_class
        except (TypeError, ValueError) as error:  # knobs each valid, together not a policy
            raise usage_error(f"{path}: not a policy of scenario {name}: {error}") from None
        wrong = path_problem(actions, scn, policy, spec_class=spec_class)
        if wrong is not None:  # a path that is not a run of the spec is a bad input, not an engine's departure
            n, why = wrong
            raise usage_error(str(read.error(str(path), n, f"{why} (scenario {name}, variant {vname}, policy "
                                             f"{policy.label()}; --scenario, --variant and the policy flags "
                                             "choose them)")))
        try:
            if m is not None:
                with m.patched():
                    result = run_replay(actions, scn, policy, spec_class=spec_class)
            else:
                result = run_replay(actions, scn, policy, spec_class=spec_class)
        except ValueError as error:
            raise usage_error(str(error))
        if as_json:
            print(json.dumps(result.to_json()))
        else:
            print_quoted(Console(), result.format())
        same = result.reproduced or (result.followed and not result.spec_violation)
        raise typer.Exit(0 if same else 1)

    app.command()(with_options(replay, policy_parameters("Policy (the file's, else the scenario's, unless given)")))
