"""The import hook: a meta-path finder that serves a mutant's source for one module name.

Installed first thing in a fresh worker process (:mod:`~flightcheck.checks.mutate.worker`), before
anything imports the engine, it answers ``find_spec`` for exactly one module (for example
``flightcheck.impl.scheduler``) with the mutated source compiled under the real file name, so the
mutated module is the only version of it that process ever imports; every other module loads as
usual. Tracebacks show the mutated lines (the source is put in ``linecache``).

A submodule of a package (``flightcheck.impl.server.app``) is served the same way: importing it imports
its package first, and ``impl/server/__init__.py`` imports ``app`` and ``loop`` itself, so the hook must be
on ``sys.meta_path`` before anything imports the package, as the worker does. A package's own
``__init__.py`` (``flightcheck.impl.server``) is served as a package (:meth:`MutantFinder.is_package`).

For example::

    >>> import sys
    >>> hook = MutantFinder("fc_demo_mod", "/tmp/fc_demo_mod.py", "ANSWER = 41 + 1\\n")
    >>> hook.install()
    >>> import fc_demo_mod
    >>> fc_demo_mod.ANSWER, hook.num_served, fc_demo_mod.__spec__.loader is hook
    (42, 1, True)
    >>> hook.uninstall(); del sys.modules["fc_demo_mod"]
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import linecache
import sys
from types import ModuleType


class MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Finds and loads one module from a given source string instead of its file."""

    def __init__(self, module: str, path: str, source: str) -> None:
        self.module, self.path, self.source = module, path, source
        self.num_served = 0

    def install(self) -> None:
        """Put the finder first on ``sys.meta_path``; refuses if the module is already imported."""
        if self.module in sys.modules:
            raise RuntimeError(f"{self.module} is already imported: the mutant could not be the only version")
        sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        """Remove the finder from ``sys.meta_path``."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    # --- MetaPathFinder ---------------------------------------------------------------------------
    def find_spec(self, fullname, path=None, target=None):  # noqa: D401 (importlib protocol)
        """A spec for the mutated module; None for every other name."""
        if fullname != self.module:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    # --- Loader -----------------------------------------------------------------------------------
    def is_package(self, fullname: str) -> bool:
        """Whether the module is a package (its file an ``__init__.py``, as ``impl/server/__init__.py``):
        its spec then names its folder, so its submodules import from there as usual."""
        return fullname == self.module and self.path.endswith("__init__.py")

    def get_source(self, fullname: str) -> str:
        """The mutated source."""
        return self.source

    def exec_module(self, module: ModuleType) -> None:
        """Run the mutated source in the new module's namespace."""
        linecache.cache[self.path] = (len(self.source), None, self.source.splitlines(keepends=True), self.path)
        self.num_served += 1
        exec(compile(self.source, self.path, "exec", dont_inherit=True), module.__dict__)
