"""Command ``explorer``: step through the design in a browser.

For example::

    $ flightcheck explorer                                   # burst2, from the initial state
    $ flightcheck explorer --variant early-release           # opens on its shortest violation
    $ flightcheck explorer --scenario burst4-abort --release on-completion
    $ flightcheck explorer --log events.jsonl                # the engine's own run, on the spec
    $ flightcheck explorer --path cx.json                    # a counterexample or replay file
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from flightcheck.checks.cli.config_options import with_options
from flightcheck.checks.cli.policy_options import policy_changes, policy_parameters
from flightcheck.checks.errors import usage_error


def register(app: typer.Typer) -> None:
    """Add ``explorer`` to the app."""

    def explorer(
        scenario: Optional[str] = typer.Option(None, help="A default or scale scenario (default: the variant's own)."),
        variant: str = typer.Option("correct", help="A design variant; one that must violate a property opens on its "
                                                    "shortest violation."),
        aborts: bool = typer.Option(False, "--aborts", help="Let the client cancel any live request."),
        notifications: bool = typer.Option(False, "--notifications", help="Send bogus termination notifications."),
        eviction: bool = typer.Option(False, "--eviction", help="Let unreferenced pages be evicted."),
        log: Optional[Path] = typer.Option(None, help="Open an engine event log (as `validate` reads it) on the spec."),
        path: Optional[Path] = typer.Option(None, help="Open a counterexample or replay file (as `replay` reads it)."),
        host: str = typer.Option("127.0.0.1", help="Address to listen on."),
        port: int = typer.Option(0, min=0, max=65535, help="Port (0: any free port)."),
        **policy: Any,
    ) -> None:
        """Serve the interactive explorer: pick the next action from any state, see what changed and why the
        other actions are disabled, step back, replay counterexamples and engine logs. Prints its URL."""
        from urllib.parse import urlencode

        from flightcheck.checks.inputs import InputError, read_lines
        from flightcheck.checks.interactive.app import ExplorerApp
        from flightcheck.checks.interactive.design import BadQuery, design_from_query
        from flightcheck.checks.interactive.loading import counterexample, engine_log, replay_file
        from flightcheck.checks.interactive.serve import ExplorerServer
        from flightcheck.checks.interactive.view import state_view

        if log is not None and path is not None:
            raise usage_error("give either --log or --path, not both")
        query = {k: v for k, v in (("scenario", scenario), ("variant", variant if variant != "correct" else None))
                 if v is not None}
        # the policy as the page's query spells it (a flag 1 or 0), checked here so a bad choice is exit 2
        query.update({k: (("1" if v else "0") if isinstance(v, bool) else v) for k, v in policy_changes(policy).items()})
        query.update({k: "1" for k, on in (("aborts", aborts), ("notifications", notifications),
                                           ("eviction", eviction)) if on})
        query = {k: str(v) for k, v in query.items()}
        explorer_app = ExplorerApp()
        try:
            if log is not None:
                if scenario is not None:
                    raise usage_error("--log brings its own scenario (grown from its arrivals); leave out --scenario")
                loaded = engine_log("\n".join(read_lines(log, "events")) + "\n", str(log))
                explorer_app.remember(loaded)
                query = {**{k: v for k, v in query.items() if k != "scenario"}, "log": loaded.name,
                         "path": ",".join(loaded.actions), "at": str(len(loaded.actions))}
                state_view(design_from_query(query, explorer_app.logs), list(loaded.actions))
            elif path is not None:
                file_query, actions = replay_file("\n".join(read_lines(path, "actions")), str(path))
                query = {**file_query, **query, "path": ",".join(actions), "at": "0"}
                state_view(design_from_query(query, {}), actions, 0)
            else:
                design = design_from_query(query, {})
                if design.log is None and variant != "correct" and _must_violate(variant):
                    found = counterexample(design)
                    query = {**design.query(), "path": ",".join(found["path"]), "at": str(found["mark"]),
                             "mark": str(found["mark"]), "property": found["property"]}
        except (BadQuery, InputError) as error:
            raise usage_error(str(error)) from None
        explorer_app.home = query  # the bare URL opens what this command opened, not burst2's first state
        try:
            server = ExplorerServer(explorer_app, host, port)
        except OSError as error:
            raise usage_error(f"cannot bind {host}:{port}: {error.strerror or error}") from None
        url = server.url + "/" + (("?" + urlencode(query)) if query else "")
        err = Console(stderr=True)
        print(url, flush=True)
        err.print("the explorer is serving; open the URL above in a browser (Ctrl-C stops it)", highlight=False)
        server.serve_forever()
        err.print("stopped", highlight=False)

    app.command()(with_options(explorer, policy_parameters()))


def _must_violate(variant: str) -> bool:
    from flightcheck.spec.variants import VARIANTS
    return VARIANTS[variant].expected_violation is not None
