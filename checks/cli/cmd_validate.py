"""Command ``validate``: an engine's event log fed through the spec; exit 1 with a diagnosis at the first
mismatch, 2 on a malformed log.

For example::

    $ flightcheck validate events.jsonl --release after-prefill --publication incremental
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from flightcheck.checks.cli.common import print_quoted
from flightcheck.checks.cli.config_options import with_options
from flightcheck.checks.cli.policy_options import policy_changes, policy_parameters
from flightcheck.checks.errors import usage_error


def register(app: typer.Typer) -> None:
    """Add ``validate`` to the app."""

    def validate(
        events: Path = typer.Argument(..., help="A JSON-lines event log written by the engine."),
        num_pages: Optional[int] = typer.Option(None, "--num-pages", min=1,
                                                help="The engine's page pool (or from the header)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        **policy_options: Any,
    ) -> None:
        """Feed an event log through the spec; exit 1 with a diagnosis at the first mismatch, 2 on a malformed log."""
        from flightcheck.checks.conform.eventlog import header_policy, read_events, validate_events
        from flightcheck.checks.inputs import MAX_VALIDATION_SECONDS, InputError

        flags = policy_changes(policy_options)  # a bad choice is exit 2 before the log is read
        try:
            evs, header = read_events(str(events))  # the schema checked: a malformed log is exit 2, here
        except InputError as error:
            raise usage_error(str(error))
        try:
            policy = header_policy(header, flags)
        except (TypeError, ValueError) as error:
            raise usage_error(f"bad policy: {error}")
        pages = num_pages or ((header or {}).get("pool") or {}).get("num_pages")
        try:
            report = validate_events(evs, policy, num_pages=pages, context=(header or {}).get("context"),
                                     source=str(events), max_seconds=MAX_VALIDATION_SECONDS)
        except InputError as error:  # more requests, or more work, than a log validated offline may take
            raise usage_error(str(error)) from None
        if as_json:
            print(json.dumps(report.to_json()))
        elif report.ok:
            Console().print(f"[green]valid[/]: {report.num_events} events are a run of the spec under {policy.label()}")
        else:
            Console().print(f"[bold red]mismatch[/] at event {report.num_events} (policy {policy.label()}):")
            print_quoted(Console(), report.diagnosis.format())
        raise typer.Exit(0 if report.ok else 1)

    app.command()(with_options(validate, policy_parameters("Engine policy (the log header's unless given)")))
