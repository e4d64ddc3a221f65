"""How every command reports bad arguments: one message on standard error and exit status 2.

For example::

    >>> check_choice("release", "after-prefill", ("after-prefill", "on-completion"))
    'after-prefill'
    >>> try:
    ...     check_choice("release", "later", ("after-prefill",))
    ... except Exception as e:
    ...     print(e.exit_code)
    2
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console


def usage_error(message: str) -> typer.Exit:
    """Print ``error: message`` to standard error and return the exit (status 2) to raise."""
    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def check_choice(name: str, value: Optional[str], allowed: tuple[str, ...]) -> Optional[str]:
    """``value`` if it is None or one of ``allowed``; otherwise a usage error naming ``--name``."""
    if value is not None and value not in allowed:
        raise usage_error(f"--{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value
