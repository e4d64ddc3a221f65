"""How every command reports bad input: one message on standard error and exit status 2.

The convention every command follows: exit 0 when the check passed, 1 when the thing checked is
wrong (a property violated, an engine departing from the spec), 2 when the input or the arguments are
wrong (a malformed file, a bad option, a missing or corrupt model). Readers raise
:class:`~flightcheck.checks.inputs.InputError` and the model loader
:class:`~flightcheck.impl.model_file.ModelFileError`, each naming the file, the line and the field;
:func:`usage_error` prints that message (unwrapped, so a path stays whole) and never a traceback.

For example::

    >>> check_choice("model", "tiny", ("tiny", "smollm2"))
    'tiny'
    >>> try:
    ...     check_choice("model", "huge", ("tiny", "smollm2"))
    ... except Exception as e:
    ...     print(e.exit_code)
    2
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape


def usage_error(message: str) -> typer.Exit:
    """Print ``error: message`` to standard error and return the exit (status 2) to raise."""
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate from a file prints
    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def loaded_model(name: str) -> None:
    """Load the conformance engines' model ``name`` ("tiny" or "smollm2") before a command runs; a bad
    model file is a usage error (exit 2) naming the file, never a failed check."""
    from flightcheck.checks.conform.engines import load_model
    from flightcheck.impl.model_file import ModelFileError

    try:
        load_model(name)
    except ModelFileError as error:
        raise usage_error(str(error)) from None


def check_choice(name: str, value: Optional[str], allowed: tuple[str, ...]) -> Optional[str]:
    """``value`` if it is None or one of ``allowed``; otherwise a usage error naming ``--name``."""
    if value is not None and value not in allowed:
        raise usage_error(f"--{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value
