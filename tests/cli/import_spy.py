"""Run the ``flightcheck`` command line with a spy on its imports: which heavy libraries it loads, and who asked.

Run: ``python tests/cli/import_spy.py [--stop-at MODULE:FUNCTION] -- ARGS...`` runs ``flightcheck ARGS`` in
this process (as the console script does) and prints, as the last line of standard error, ``IMPORT-SPY``
and a JSON object mapping each heavy library loaded to the chain that first imported it, innermost first
(``flightcheck.spec.expr <- flightcheck.spec.pool <- ... <- flightcheck.checks.cli.app.build_app``: a
module's top level by its name, a function as ``module.function``). ``--stop-at`` replaces that function
with one that ends the run (exit 0, after printing ``IMPORT-SPY-STOPPED``), so that a command whose work
necessarily loads heavy libraries (``check --since`` running its rows) is measured up to where the work
starts. tests/cli/test_import_graph.py holds the rules; this file only observes.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.abc
import json
import sys
from typing import Any

# The libraries that cost start-up (import times measured in BENCHMARKS.md, "Start-up"), by top-level name.
HEAVY = ("z3", "numba", "llvmlite", "networkx", "mlx", "distributed", "dask", "starlette", "uvicorn",
         "matplotlib", "libcst", "mutmut", "crosshair", "scipy", "hypothesis", "numpy", "tokenizers",
         "prometheus_client")

_SKIP = ("importlib", "_frozen_importlib", "_frozen_importlib_external", __name__)


class ImportSpy(importlib.abc.MetaPathFinder):
    """A finder that finds nothing, but notes the importers of the first import of each heavy library."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {name: ["(loaded before the command started)"]
                                           for name in HEAVY if name in sys.modules}

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        top = name.partition(".")[0]
        if top in HEAVY and top not in self.seen:
            self.seen[top] = importer_chain(sys._getframe(1))
        return None


def importer_chain(frame: Any, limit: int = 12) -> list[str]:
    """The code that is importing, innermost first: modules by name, functions as ``module.function``."""
    chain: list[str] = []
    while frame is not None and len(chain) < limit:
        module = frame.f_globals.get("__name__", "?")
        if not module.startswith(_SKIP) and module.partition(".")[0] not in HEAVY:
            where = module if frame.f_code.co_name == "<module>" else f"{module}.{frame.f_code.co_name}"
            if not chain or chain[-1] != where:
                chain.append(where)
        frame = frame.f_back
    return chain


def stop_at(target: str) -> None:
    """Replace ``module:function`` with a function that ends the run where the command's work starts."""
    module_name, _, function = target.partition(":")
    module = importlib.import_module(module_name)

    def stopped(*args: Any, **kwargs: Any) -> None:
        print("IMPORT-SPY-STOPPED", target, file=sys.__stderr__, flush=True)
        raise SystemExit(0)

    setattr(module, function, stopped)


def main(argv: list[str]) -> None:
    stop = None
    if argv[:1] == ["--stop-at"]:
        stop, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    spy = ImportSpy()
    sys.meta_path.insert(0, spy)
    atexit.register(lambda: print("IMPORT-SPY", json.dumps(spy.seen), file=sys.__stderr__, flush=True))
    if stop is not None:
        stop_at(stop)
    sys.argv = ["flightcheck", *argv]
    from flightcheck.checks.cli.app import main as flightcheck

    flightcheck()


if __name__ == "__main__":
    main(sys.argv[1:])
