"""The stages of ``flightcheck check``, each declared once, and every table of stages derived from them.

A stage is a module of :data:`STAGE_MODULES` (by import path, in the order the stages run) that holds a
``STAGE = Stage(...)``: its name, its rows function, the paths its rows depend on, the report section
its rows feed, the sections of ``expectations.json`` it compares, whether it needs the real model, and
which engine files' mutants it runs on. Everything that lists stages reads them here:

- the job (:func:`flightcheck.checks.suite.job.stage_table`): the names, rows functions and order;
- the recorded figures' schema (:func:`flightcheck.checks.suite.expect.schema`): each stage's sections;
- the report (:mod:`flightcheck.checks.report.build`): which rows feed which section, and which
  sections a run left out;
- ``check --since`` (:mod:`flightcheck.checks.review.since`): which stages a changed path can move;
- ``flightcheck mutate`` (:mod:`flightcheck.checks.mutate.runner`): which stages run on a mutant of a file.

A path is matched against a stage's globs (``*`` within a folder, ``**`` across folders) and against
:data:`SHARED` (what every stage runs: the suite's own code, the recorded figures, the package); the
stage's own module is always one of its dependencies.

For example::

    >>> [s.name for s in stages()]
    ['explore', 'variants', 'prove', 'equiv', 'engine', 'conform', 'server', 'smollm2', 'workload']
    >>> stage_named("prove").path, stage_named("prove").expects_sections
    ('flightcheck.checks.suite.stage_prove:prove_stage', ('prove', 'unbounded'))
    >>> [s.name for s in stages() if s.depends_on("checks/proofs/induction.py")]
    ['prove', 'equiv']
    >>> matches("impl/*.py", "impl/pages.py"), matches("impl/*.py", "impl/server/app.py")
    (True, False)
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

# The stage modules, in the order their stages run: the one list of stages (add a stage here).
STAGE_MODULES: list[str] = [
    "flightcheck.checks.suite.stage_explore",
    "flightcheck.checks.suite.stage_variants",
    "flightcheck.checks.suite.stage_prove",
    "flightcheck.checks.suite.stage_equiv",
    "flightcheck.checks.suite.stage_engine",
    "flightcheck.checks.suite.stage_conform",
    "flightcheck.checks.suite.stage_server",
    "flightcheck.checks.suite.stage_smollm2",
    "flightcheck.checks.suite.stage_workload",
]

# What every stage runs, whatever it checks: the job, its context, the recorded figures and their
# reading, the claims, the cluster, the fault handling, the package and its build.
SHARED: tuple[str, ...] = (
    "checks/suite/__init__.py", "checks/suite/job.py", "checks/suite/context.py", "checks/suite/registry.py",
    "checks/suite/expect.py", "checks/suite/claims.py", "checks/suite/expectations.json",
    "checks/__init__.py", "checks/cluster.py", "checks/faults.py", "checks/errors.py", "checks/inputs.py",
    "checks/strength.py", "flightcheck/**", "pyproject.toml",
)

# The folder and file every repository path is relative to.
ROOT = Path(__file__).resolve().parents[2]


class StageError(Exception):
    """A stage module that does not declare a stage as :class:`Stage` asks (no ``STAGE``, a name or an
    expectations section that another stage already has). Says the module and how to fix it."""


@dataclass(frozen=True, eq=False)
class Stage:
    """One stage of ``flightcheck check``, declared by its module as ``STAGE = Stage(...)``.

    - ``name``: the stage's rows' ``stage`` (``check --stage NAME``);
    - ``rows``: ``rows(ctx) -> list[Row]``, the function or its import path ``"module:function"`` (a stage
      whose code lives in a room the suite may not import, as the server's, names it by path);
    - ``depends``: globs of repository paths whose change can move its rows, besides :data:`SHARED` and
      its own module (``check --since``);
    - ``report``: the report section its rows feed (None: the summary table only);
    - ``expects``: the sections of ``expectations.json`` it compares, each with what one figure must
      look like (words, and a test of a figure);
    - ``needs_model``: it runs the real model (``--quick`` skips it);
    - ``kills``: globs of engine files whose mutants ``flightcheck mutate`` runs it on, ``kill_rank``
      its place among those stages (the cheapest kills first).

    For example::

        >>> s = Stage("demo", "tests.demo:rows", depends=("spec/**",), report="verdicts")
        >>> s.path, s.depends_on("spec/model.py"), s.depends_on("impl/pages.py")
        ('tests.demo:rows', True, False)
    """

    name: str
    rows: Callable[..., list[Any]] | str
    depends: tuple[str, ...] = ()
    report: str | None = None
    expects: dict[str, tuple[str, Callable[[Any], bool]]] = field(default_factory=dict)
    needs_model: bool = False
    kills: tuple[str, ...] = ()
    kill_rank: int = 0
    module: str = ""  # the module that declared it (set by :func:`stages`)

    @property
    def path(self) -> str:
        """The rows function's import path, ``"module:function"``."""
        if isinstance(self.rows, str):
            return self.rows
        return f"{self.rows.__module__}:{self.rows.__name__}"

    @property
    def expects_sections(self) -> tuple[str, ...]:
        """The sections of ``expectations.json`` it compares."""
        return tuple(self.expects)

    @property
    def own_files(self) -> tuple[str, ...]:
        """Its declaring module's file and its rows function's, relative to the repository."""
        names = dict.fromkeys(m for m in (self.module, self.path.partition(":")[0]) if m)
        return tuple(p for p in map(module_file, names) if p is not None)

    def depends_on(self, path: str) -> bool:
        """Whether a change to ``path`` (relative to the repository) can move its rows."""
        return path in self.own_files or any(matches(g, path) for g in self.depends + SHARED)

    def kills_mutants_of(self, path: str) -> bool:
        """Whether ``flightcheck mutate`` runs it on a mutant of ``path`` (``impl/NAME.py``)."""
        return any(matches(g, path) for g in self.kills)


@lru_cache(maxsize=None)
def _regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*|\*|\?)", pattern)
    out = {"**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(out.get(p, re.escape(p)) for p in parts) + r"\Z")


def matches(pattern: str, path: str) -> bool:
    """Whether ``path`` matches the glob ``pattern``: ``*`` and ``?`` within one folder, ``**`` across
    folders (``spec/**`` is everything under ``spec/``)."""
    return _regex(pattern).match(path) is not None


def module_file(module: str) -> str | None:
    """The file of a module, relative to the repository (None when it lies outside it or cannot be
    found). A ``flightcheck`` module is found by its name alone, without importing it or its package."""
    import importlib.util

    parts = module.split(".")
    if parts[0] == "flightcheck" and len(parts) > 1:
        for candidate in ("/".join(parts[1:]) + ".py", "/".join(parts[1:]) + "/__init__.py"):
            if (ROOT / candidate).is_file():
                return candidate
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        return Path(spec.origin).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None


def stages() -> list[Stage]:
    """Every stage, in the order they run: the ``STAGE`` of each module of :data:`STAGE_MODULES`
    (:class:`StageError` for a module that declares none, or a name or section declared twice)."""
    out: list[Stage] = []
    names: set[str] = set()
    sections: dict[str, str] = {}
    for module in STAGE_MODULES:
        stage = getattr(importlib.import_module(module), "STAGE", None)
        if not isinstance(stage, Stage):
            raise StageError(f"{module} declares no stage: give it STAGE = Stage(name, rows, ...) "
                             "(flightcheck.checks.suite.registry.Stage)")
        if stage.name in names:
            raise StageError(f"{module}: a stage named {stage.name!r} is declared twice; give it another name")
        for section in stage.expects:
            if section in sections:
                raise StageError(f"{module}: the expectations section {section!r} is already the "
                                 f"{sections[section]} stage's; name another")
            sections[section] = stage.name
        names.add(stage.name)
        out.append(replace(stage, module=module))
    return out


def stage_named(name: str) -> Stage:
    """The stage called ``name`` (KeyError naming the known ones otherwise)."""
    for stage in stages():
        if stage.name == name:
            return stage
    raise KeyError(f"no stage {name!r}; known: {', '.join(s.name for s in stages())}")
