"""The design's policy as command-line options, derived from the spec's ``Policy`` so that no command lists
them by hand.

:class:`flightcheck.spec.scenario.Policy` is the one place a knob of the design is defined; ``explore``,
``export`` and ``explorer`` read its fields here (as ``serve`` and ``bench`` read ``EngineConfig``'s through
:mod:`~flightcheck.checks.cli.config_options`), so a field added there becomes ``--that-field`` on every
command that builds a design, and no command can lag behind another (before, ``--leader-loss`` and
``--min-shared-pages`` were missing from some of them). Every option defaults to None, meaning the
scenario's own value; a string field takes one of the spec's named choices.

For example::

    >>> [p.name for p in policy_parameters()]
    ['coordination', 'release', 'publication', 'capacity', 'chunk', 'leader_loss', 'prefix_caching', 'min_shared_pages']
    >>> policy_changes({"release": "on-completion", "chunk": None, "model": "tiny"})
    {'release': 'on-completion'}
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any, Optional

import typer

from flightcheck.checks.errors import check_choice, usage_error
from flightcheck.spec.scenario import Policy

# The named choices of the string fields: the Literal each Policy field is typed with (the tuples
# Policy.__post_init__ checks are derived from the same Literals).
CHOICES: dict[str, tuple[str, ...]] = {
    name: typing.get_args(kind) for name, kind in typing.get_type_hints(Policy).items()
    if typing.get_origin(kind) is typing.Literal}
HELP: dict[str, str] = {
    "capacity": "Running capacity.",
    "chunk": "Prefill chunk in pages.",
    "prefix_caching": "Prefix caching on or off (off needs --coordination none).",
    "min_shared_pages": "Prefix coordination: the least overlap, in shareable pages, a request waits via "
                        "another prompt's flight for.",
}
PANEL = "Design policy (the scenario's own unless given)"


def option_name(field: str) -> str:
    """``leader_loss`` -> ``--leader-loss``."""
    return "--" + field.replace("_", "-")


def policy_parameters(panel: str = PANEL) -> list[inspect.Parameter]:
    """One keyword parameter with a ``typer.Option`` (default None) per field of ``Policy``, shown in the
    help under ``panel`` (which says where a value not given comes from)."""
    hints = typing.get_type_hints(Policy)
    params = []
    for field in dataclasses.fields(Policy):
        kind = hints[field.name]
        if kind is bool:
            flag = option_name(field.name)
            option = typer.Option(None, f"{flag}/--no-{flag[2:]}", help=HELP.get(field.name, field.name),
                                  rich_help_panel=panel)
        elif kind is int:
            option = typer.Option(None, min=1, help=HELP.get(field.name, field.name), rich_help_panel=panel)
        else:  # a Literal: read as text, its choices checked by policy_changes (exit 2 naming the option)
            kind = str
            option = typer.Option(None, help=" | ".join(CHOICES[field.name]), rich_help_panel=panel)
        params.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=option,
                                        annotation=Optional[kind]))
    return params


def policy_changes(values: dict[str, Any]) -> dict[str, Any]:
    """The policy fields among ``values`` that were given (not None), their choices checked: a usage error
    names the option and what it accepts. Other keys of ``values`` are ignored."""
    changes = {}
    for field in dataclasses.fields(Policy):
        value = values.get(field.name)
        if value is None:
            continue
        if field.name in CHOICES:
            check_choice(option_name(field.name)[2:], value, CHOICES[field.name])
        changes[field.name] = value
    return changes


def apply_policy(scn: Any, values: dict[str, Any]) -> Any:
    """``scn`` with the given policy options applied; a combination the spec refuses (coordination without
    prefix caching, say) is a usage error with the spec's reason."""
    changes = policy_changes(values)
    try:
        return scn.with_policy(**changes) if changes else scn
    except ValueError as error:
        raise usage_error(f"bad policy: {error}") from None
