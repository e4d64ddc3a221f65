"""What several commands share: a mutant named by ``--mutant``, a saved conformance program read and
checked against the model, and text that quotes the input printed as it is.

For example::

    >>> mutant_named(None) is None, mutant_named("forget-released").name
    (True, 'forget-released')
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.console import Console

from flightcheck.checks.errors import usage_error
from flightcheck.checks.inputs import shown


def mutant_named(name: Optional[str]):
    """The mutant ``--mutant`` names (None for none), or a usage error (exit 2) listing the known names."""
    from flightcheck.checks.conform.mutants import MUTANTS
    if name is None:
        return None
    if name not in MUTANTS:
        raise usage_error(f"unknown --mutant {shown(name)}; known: {', '.join(MUTANTS)}")
    return MUTANTS[name]


def read_program_file(path: Path):
    """A saved conformance program, every field checked (:func:`~flightcheck.checks.conform.program.read_program`),
    or a usage error (exit 2) naming the file and the field."""
    from flightcheck.checks.conform.program import read_program
    from flightcheck.checks.inputs import InputError

    try:
        return read_program(path)
    except InputError as error:
        raise usage_error(str(error)) from None


def check_program_for_model(program, path: Path, model: str) -> None:
    """What of a program depends on the model (token ids, context, pages, the pool's memory), checked
    before any engine runs: a program the engine would refuse is bad input (exit 2), not a departure."""
    from flightcheck.checks.conform.program import check_for_model, model_limits
    from flightcheck.checks.inputs import InputError

    vocab, context, page_bytes = model_limits(model)
    try:
        check_for_model(program, str(path), vocab=vocab, context=context, page_bytes=page_bytes)
    except InputError as error:
        raise usage_error(str(error)) from None


def print_quoted(console: Console, text: str) -> None:
    """Print text that quotes the input (a diagnosis, a failing run) as it is: no markup, escaped."""
    from flightcheck.checks.inputs import printable

    console.print(printable(text), markup=False, highlight=False)
