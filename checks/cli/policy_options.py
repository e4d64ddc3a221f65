"""The design's policy as command-line options, derived from the spec's knob table so that no command lists
them by hand.

:data:`flightcheck.spec.knobs.KNOBS` is the one place a knob of the design is declared (its type, values,
default and help); ``explore``, ``export`` and ``explorer`` read it here (as ``serve`` and ``bench`` read
``EngineConfig``'s fields through :mod:`~flightcheck.checks.cli.config_options`), so a knob added there
becomes ``--that-knob`` on every command that builds a design, and no command can lag behind another
(before, ``--leader-loss`` and ``--min-shared-pages`` were missing from some of them). Every option
defaults to None, meaning the scenario's own value; a string knob takes one of its declared choices.

For example::

    >>> [p.name for p in policy_parameters()] == [k.name for k in KNOBS]
    True
    >>> policy_changes({"release": "on-completion", "chunk": None, "model": "tiny"})
    {'release': 'on-completion'}
"""

from __future__ import annotations

import inspect
from typing import Any, Optional

import typer

from flightcheck.checks.errors import check_choice, usage_error
from flightcheck.spec.knobs import KNOBS

# The named choices of the string knobs, as declared.
CHOICES: dict[str, tuple[str, ...]] = {k.name: k.choices for k in KNOBS if k.kind is str}
PANEL = "Design policy (the scenario's own unless given)"


def policy_parameters(panel: str = PANEL) -> list[inspect.Parameter]:
    """One keyword parameter with a ``typer.Option`` (default None) per knob, shown in the help under
    ``panel`` (which says where a value not given comes from); a string knob's help lists its choices."""
    params = []
    for knob in KNOBS:
        kind = knob.kind
        if kind is bool:
            option = typer.Option(None, f"{knob.option}/--no-{knob.option[2:]}", help=knob.help, rich_help_panel=panel)
        elif kind is int:
            option = typer.Option(None, min=knob.low, help=knob.help, rich_help_panel=panel)
        else:  # read as text, its choices checked by policy_changes (exit 2 naming the option)
            option = typer.Option(None, help=" | ".join(knob.choices), rich_help_panel=panel)
        params.append(inspect.Parameter(knob.name, inspect.Parameter.KEYWORD_ONLY, default=option,
                                        annotation=Optional[kind]))
    return params


def policy_changes(values: dict[str, Any]) -> dict[str, Any]:
    """The knobs among ``values`` that were given (not None), their choices checked: a usage error names the
    option and what it accepts. Other keys of ``values`` are ignored."""
    changes = {}
    for knob in KNOBS:
        value = values.get(knob.name)
        if value is None:
            continue
        if knob.kind is str:
            check_choice(knob.option[2:], value, knob.choices)
        changes[knob.name] = value
    return changes


def apply_policy(scn: Any, values: dict[str, Any]) -> Any:
    """``scn`` with the given policy options applied; a combination the spec refuses (coordination without
    prefix caching, say) is a usage error with the spec's reason."""
    changes = policy_changes(values)
    try:
        return scn.with_policy(**changes) if changes else scn
    except ValueError as error:
        raise usage_error(f"bad policy: {error}") from None
