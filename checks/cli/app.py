"""The ``flightcheck`` command line.

Each command lives in its own ``checks/cmd_*.py`` module with a ``register(app)`` function, so that
the command line stays a thin layer over the checkers (model, checker, result and presentation apart).
Heavy imports (MLX, z3, numba, networkx) happen inside the commands, so ``flightcheck --help`` stays
fast, and the app itself is built on first use (``from flightcheck.checks.cli.app import app`` builds it),
so that :func:`main` can answer a repeated ``explore`` from the result cache
(:mod:`~flightcheck.checks.cli.result_cache`) before typer and the command modules are imported.

For example::

    $ flightcheck explore --scenario burst2
    $ flightcheck variants --json
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

# One module per command family; each adds its commands to ``app``.
COMMAND_MODULES = [
    "flightcheck.checks.cli.cmd_check",
    "flightcheck.checks.cli.cmd_explore",
    "flightcheck.checks.cli.cmd_variants",
    "flightcheck.checks.cli.cmd_explorer",
    "flightcheck.checks.cli.cmd_workload",
    "flightcheck.checks.cli.cmd_render",
    "flightcheck.checks.cli.cmd_generate",
    "flightcheck.checks.cli.cmd_doctor",
    "flightcheck.checks.cli.cmd_engine",
    "flightcheck.checks.cli.cmd_conform",
    "flightcheck.checks.cli.cmd_corpus",
    "flightcheck.checks.cli.cmd_validate",
    "flightcheck.checks.cli.cmd_replay",
    "flightcheck.checks.cli.cmd_probe",
    "flightcheck.checks.cli.cmd_coverage",
    "flightcheck.checks.cli.cmd_prove",
    "flightcheck.checks.cli.cmd_equiv",
    "flightcheck.checks.cli.cmd_export",
    "flightcheck.checks.cli.cmd_bench",
    "flightcheck.checks.cli.cmd_mutate",
    "flightcheck.checks.cli.cmd_docs",
]

_built: list[Any] = []


def build_app() -> Any:
    """The ``flightcheck`` typer app with every command registered (built once, then the same object)."""
    if _built:
        return _built[0]
    import typer

    from flightcheck.checks.cli.help_layout import keep_option_names_whole
    from flightcheck.checks.faults import FaultHandlingGroup

    keep_option_names_whole()  # at 80 columns a help panel wraps its help text, never an option's name

    app = typer.Typer(
        cls=FaultHandlingGroup,  # an exception a command lets escape: exit 2 for bad input, 3 for a fault, never 1
        name="flightcheck",
        help="Check a prefix-cache single-flight coordinator: spec, real engine, and the checks between them.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
    _built.append(app)
    return app


def __getattr__(name: str) -> Any:
    """``app``, built on first use (PEP 562), so that importing this module for :func:`main` costs nothing."""
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point of the ``flightcheck`` console script: a repeated ``explore`` is answered from the
    result cache; everything else (and a miss) runs the app."""
    from flightcheck.checks.cli import result_cache

    argv = sys.argv[1:]
    if result_cache.applies(argv, os.environ):
        result_cache.run(argv, lambda: build_app()())
    build_app()()


if __name__ == "__main__":
    main()
