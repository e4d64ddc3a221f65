"""The ``flightcheck`` command line.

Each command lives in its own ``checks/cmd_*.py`` module with a ``register(app)`` function, so that
the command line stays a thin layer over the checkers (model, checker, result and presentation apart).
Heavy imports (MLX, z3) happen inside the commands, so ``flightcheck --help`` stays fast.

For example::

    $ flightcheck explore --scenario burst2
    $ flightcheck variants --json
"""

from __future__ import annotations

import importlib

import typer

from flightcheck.checks.faults import FaultHandlingGroup

app = typer.Typer(
    cls=FaultHandlingGroup,  # an exception a command lets escape: exit 2 for bad input, 3 for a fault, never 1
    name="flightcheck",
    help="Check a prefix-cache single-flight coordinator: spec, real engine, and the checks between them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One module per command family; each adds its commands to ``app``.
COMMAND_MODULES = [
    "flightcheck.checks.cli.cmd_check",
    "flightcheck.checks.cli.cmd_explore",
    "flightcheck.checks.cli.cmd_explorer",
    "flightcheck.checks.cli.cmd_workload",
    "flightcheck.checks.cli.cmd_render",
    "flightcheck.checks.cli.cmd_model",
    "flightcheck.checks.cli.cmd_engine",
    "flightcheck.checks.cli.cmd_conform",
    "flightcheck.checks.cli.cmd_prove",
    "flightcheck.checks.cli.cmd_export",
    "flightcheck.checks.cli.cmd_bench",
    "flightcheck.checks.cli.cmd_mutate",
    "flightcheck.checks.cli.cmd_docs",
]


def _register_all() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_all()


def main() -> None:
    """Entry point of the ``flightcheck`` console script."""
    app()


if __name__ == "__main__":
    main()
