"""Command-line options derived from a dataclass's fields, so every engine policy is an option.

``EngineConfig`` (impl/config.py) is the one place a policy is defined; ``serve`` and ``bench`` read
its fields here instead of repeating them, so a field added there (a leader-loss policy, a bounded
follower wait, ...) becomes ``--that-field`` with no change to the commands. Each option's help is
the field's line in the class docstring (``- ``name``: text``); booleans are ``--x/--no-x``,
``int | None`` fields take an integer and default to None.

For example::

    >>> from flightcheck.impl.config import EngineConfig
    >>> options = config_parameters(EngineConfig, {"num_pages": 1024})
    >>> [p.name for p in options][:3]
    ['coordination', 'release', 'publication']
    >>> {p.name: p.default.default for p in options}["num_pages"]    # the serve default
    1024
    >>> build_config(EngineConfig, {"release": "on-completion", "other": 1}).release
    'on-completion'
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from typing import Any, Callable, Optional

import typer


def field_help(cls: type) -> dict[str, str]:
    """Each field's description from the class docstring's ``- ``name``: text`` lines."""
    doc = inspect.getdoc(cls) or ""
    helps: dict[str, str] = {}
    for match in re.finditer(r"^- ``(\w+)``: (.*?)(?=^- ``|\Z)", doc, re.S | re.M):
        helps[match.group(1)] = " ".join(match.group(2).split()).rstrip(";.")
    return helps


def config_parameters(cls: type, defaults: dict[str, Any] | None = None) -> list[inspect.Parameter]:
    """One keyword parameter with a ``typer.Option`` per field of dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    helps = field_help(cls)
    params = []
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        default = (defaults or {}).get(field.name, field.default)
        if typing.get_origin(kind) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(kind) if a is not type(None)]
            kind = Optional[_plain(args[0])]
        else:
            kind = _plain(kind)
        option = typer.Option(default, help=helps.get(field.name, field.name.replace("_", " ")),
                              rich_help_panel="Engine policy (EngineConfig)")
        params.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind))
    return params


def _plain(kind: Any) -> Any:
    """A type typer reads: ``Literal[...]`` of strings becomes ``str`` (the dataclass checks the value)."""
    if typing.get_origin(kind) is typing.Literal:
        return type(typing.get_args(kind)[0])
    return kind


def build_config(cls: type, values: dict[str, Any]) -> Any:
    """``cls(**the values that are fields of cls)``; the dataclass's own checks raise on bad values."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def with_options(fn: Callable[..., Any], extra: list[inspect.Parameter]) -> Callable[..., Any]:
    """``fn`` (taking ``**kwargs``) with its own parameters plus ``extra``, as typer reads signatures."""
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
    names = {p.name for p in own}
    params = own + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in extra if p.name not in names]
    params.sort(key=lambda p: p.kind)  # positional-or-keyword first, then keyword-only
    fn.__signature__ = inspect.Signature(params)
    fn.__annotations__ = {p.name: p.annotation for p in params}
    return fn
