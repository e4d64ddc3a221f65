"""The ``flightcheck`` command line.

Each command lives in its own ``checks/cmd_*.py`` module with a ``register(app)`` function, so that
the command line stays a thin layer over the checkers (model, checker, result and presentation apart).
Heavy imports (MLX, z3, numba, networkx, numpy, Dask, matplotlib) happen inside the commands, so
``flightcheck --help`` loads none of them (tests/cli/test_import_graph.py), and the app itself is built on
first use (``from flightcheck.checks.cli.app import app`` builds it), so that :func:`main` can answer a
repeated ``explore`` from the result cache (:mod:`~flightcheck.checks.cli.result_cache`) before typer and
the command modules are imported; a command line that names a command builds that command alone.

For example::

    $ flightcheck explore --scenario burst2
    $ flightcheck variants --json
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

# The module that registers each command (``register(app)``). ``flightcheck CMD ...`` imports CMD's module
# only; ``--help``, no command or an unknown one, all of them (tests/cli/test_import_graph.py checks that
# this table names every command its module registers, and that a one-command app says the same).
COMMANDS = {
    "check": "cmd_check", "explore": "cmd_explore", "variants": "cmd_variants", "explorer": "cmd_explorer",
    "workload": "cmd_workload", "diff": "cmd_render", "generate": "cmd_generate", "doctor": "cmd_doctor",
    "serve": "cmd_engine", "conform": "cmd_conform", "corpus": "cmd_corpus", "validate": "cmd_validate",
    "replay": "cmd_replay", "probe": "cmd_probe", "coverage": "cmd_coverage", "prove": "cmd_prove",
    "equiv": "cmd_equiv", "export": "cmd_export", "bench": "cmd_bench", "mutate": "cmd_mutate", "docs": "cmd_docs",
}
# One module per command family, in the order the help lists them; each adds its commands to ``app``.
COMMAND_MODULES = [f"flightcheck.checks.cli.{m}" for m in dict.fromkeys(COMMANDS.values())]

_built: dict[str, Any] = {}


def build_app(command: str | None = None) -> Any:
    """The ``flightcheck`` typer app with every command registered (built once, then the same object), or,
    given a ``command`` of :data:`COMMANDS`, an app with that command alone: the console script runs
    ``flightcheck explore ...`` without importing (and converting) the other twenty command modules."""
    if command not in COMMANDS:
        command = None
    if (command or "") in _built:
        return _built[command or ""]
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
    if command is not None:
        app.callback()(_group)  # without a callback typer would make a one-command app that command itself
    for name in COMMAND_MODULES if command is None else [f"flightcheck.checks.cli.{COMMANDS[command]}"]:
        importlib.import_module(name).register(app)
    _built[command or ""] = app
    return app


def _group() -> None:
    """Check a prefix-cache single-flight coordinator: spec, real engine, and the checks between them."""


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
    command = argv[0] if argv else None
    if result_cache.applies(argv, os.environ):
        result_cache.run(argv, lambda: build_app(command)())
    build_app(command)()


if __name__ == "__main__":
    main()
