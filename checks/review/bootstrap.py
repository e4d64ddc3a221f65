"""The entry of one side's process: ``flightcheck.*`` imported from a given source tree, then summarised.

``flightcheck check --baseline REF`` compares two source trees (the candidate's working tree and REF's
temporary worktree), each explored by its *own* code. This file is run as a script by path
(``python .../checks/review/bootstrap.py ROOT OUT [SCENARIO ...]``), never imported from the package,
so that it can run against a baseline that has no ``checks/review`` at all. It

1. drops its own folder from ``sys.path`` (nothing of the candidate's ``checks/review`` is importable
   under a top-level name);
2. puts a finder first on ``sys.meta_path`` that maps ``flightcheck`` and its four source folders
   (``flightcheck.spec`` -> ``ROOT/spec``, ``.impl``, ``.checks``, ``.data``) to ``ROOT``, the mapping
   pyproject's ``package-dir`` gives the installed package, so the editable install's finder (which
   points at the candidate) never answers for them;
3. loads :mod:`summary` (next to this file) by path under a private name and writes its JSON summary
   of ``ROOT`` to ``OUT``.

A tree that cannot be imported (an old commit with another layout) exits with :data:`EXIT_IMPORT` and
one line on standard error; any other failure with :data:`EXIT_FAILED` and the traceback.

For example::

    >>> finder = TreeFinder(Path("/tmp/tree"))
    >>> finder.folder_of("flightcheck.spec")
    PosixPath('/tmp/tree/spec')
    >>> finder.folder_of("flightcheck.spec.model") is None
    True
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any, Sequence

EXIT_IMPORT = 3  # the tree's code could not be imported: another layout
EXIT_FAILED = 4  # the tree imported, but exploring it raised

# pyproject's package-dir: the import name of each source folder of the tree.
FOLDERS = {"flightcheck": "flightcheck", "flightcheck.spec": "spec", "flightcheck.impl": "impl",
           "flightcheck.checks": "checks", "flightcheck.data": "data"}


class TreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``flightcheck`` and its source packages in one tree (their submodules are then found by the
    ordinary path finder through each package's ``__path__``, which points into the tree)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def folder_of(self, fullname: str) -> Path | None:
        """The folder of a top-level source package of the tree, or None for any other module."""
        folder = FOLDERS.get(fullname)
        return self.root / folder if folder is not None else None

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        """A spec for ``flightcheck`` or one of its source packages, from the tree; None otherwise."""
        folder = self.folder_of(fullname)
        if folder is None:
            return None
        init = folder / "__init__.py"
        if not init.is_file():  # a tree without this package: a namespace package would hide the mismatch
            raise ImportError(f"{fullname}: no {init.relative_to(self.root)} in this tree", name=fullname)
        return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(folder)])


def install(root: Path) -> TreeFinder:
    """Make ``flightcheck.*`` resolve to ``root`` in this process (before anything of it is imported)."""
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(here)]
    for name in [m for m in sys.modules if m == "flightcheck" or m.startswith("flightcheck.")]:
        del sys.modules[name]
    finder = TreeFinder(root)
    sys.meta_path.insert(0, finder)
    return finder


def _load_summary() -> Any:
    path = Path(__file__).resolve().parent / "summary.py"
    spec = importlib.util.spec_from_file_location("_flightcheck_review_summary", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    """``ROOT OUT [--corpus=own|all] [SCENARIO ...]``: summarise ``ROOT``'s graphs and variants into the JSON
    file ``OUT`` (with ``--corpus``, also its conformance corpus run on its own engine);
    ``ROOT OUT --one REQUEST``: only the one graph the JSON ``REQUEST`` names (``flightcheck diff --base``)."""
    root, out, scenarios = Path(argv[0]).resolve(), Path(argv[1]), argv[2:] or None
    one = corpus = None
    if scenarios and scenarios[0].startswith("--corpus="):  # also run the corpus: own | all
        corpus, scenarios = scenarios[0].split("=", 1)[1], scenarios[1:] or None
    if scenarios and scenarios[0] == "--one":
        import json

        one, scenarios = json.loads(scenarios[1]), None
    install(root)
    summary = _load_summary()
    try:
        api = summary.load_api()
    except Exception as error:  # noqa: BLE001 - any failure to import the tree is "another layout"
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_IMPORT
    try:
        if one is not None:
            summary.write_one(api, root, out, one)
        else:
            summary.write(api, root, out, scenarios, corpus)
    except Exception:  # noqa: BLE001 - the parent reports it as a side that could not be explored
        traceback.print_exc()
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
