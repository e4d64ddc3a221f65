"""Which stages of ``flightcheck check`` a change can affect: ``check --since REF``.

Each stage declares the paths its rows depend on (``Stage.depends``, its own module and the suite's
shared code: :mod:`flightcheck.checks.suite.registry`); a changed path selects every stage that depends
on it, so the table is the stages' own: a stage added with its declaration is selected with no edit
here; a change to the report (``checks/report/``) selects the stages whose report section it draws. A
path no stage claims selects nothing when no stage can depend on it (:data:`NO_STAGE`: tests,
documentation, scripts, CI, and the rooms of ``checks/`` that no stage imports, which the architecture
test keeps so), and everything when it lies under a source folder or is not documentation: an unknown
change is never a skipped check.

A Python file whose code is the same as at REF (the same syntax tree: only comments, blank lines or
line breaks changed) selects nothing either, whatever it is, since no stage can see the difference
(:func:`same_code`, fed by ``since_command`` from git); a spec file whose comments alone changed reruns
nothing that depends on the spec.

For example::

    >>> known = ["explore", "variants", "prove", "equiv", "engine", "conform", "server", "smollm2", "workload"]
    >>> select(["impl/pages.py"], known).stages
    ['engine', 'conform', 'server', 'smollm2']
    >>> select(["README.md", "docs/x.png"], ["explore", "conform"]).stages
    []
    >>> select(["spec/model.py"], known).stages
    ['explore', 'variants', 'prove', 'equiv', 'engine', 'conform', 'server', 'smollm2']
    >>> select(["spec/model.py"], known, same=["spec/model.py"]).stages
    []
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Iterable

from flightcheck.checks.suite.registry import Stage, matches, stages as registered

# (glob, why): paths no stage depends on (checked after the stages' own declarations).
NO_STAGE: list[tuple[str, str]] = [
    ("tests/**", "tests (run pytest)"),
    ("docs/**", "documentation"),
    ("scripts/**", "scripts"),
    (".github/**", "CI"),
    ("checks/review/**", "the review (not a stage)"),
    ("checks/bench/**", "the experiments (not a stage)"),
    ("checks/mutate/**", "mutation testing (not a stage)"),
    ("checks/promela/**", "the Promela export (not a stage)"),
    ("checks/cli/**", "the commands (no stage imports them)"),
    ("checks/interactive/**", "the explorer in the browser (not a stage)"),
    ("checks/outside/**", "the probe from outside (not a stage)"),
]
REPORT = "checks/report/**"  # selects the stages whose report section it draws
SOURCE = ("spec/", "impl/", "checks/", "flightcheck/", "data/")  # unclaimed here: everything runs
DOC_SUFFIXES = (".md", ".txt", ".rst", ".png", ".svg", ".jpg")  # documentation anywhere else
EVERYTHING = "not known to the selection (so everything runs)"


@dataclass
class Selection:
    """The stages to run, in the suite's order, and why: each changed path with what it selected."""

    stages: list[str]
    reasons: dict[str, list[str]] = field(default_factory=dict)  # path -> the stages it selected
    everything: bool = False
    same_code: list[str] = field(default_factory=list)  # paths whose code is unchanged (comments only)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"stages": self.stages, "everything": self.everything, "changed": self.reasons,
                "same_code": self.same_code}


def stages_of(path: str, table: Iterable[Stage] | None = None) -> tuple[list[str] | None, str]:
    """The names of the stages a change to ``path`` can affect (None: every stage), and why; ``table``:
    the stages (default: the registered ones)."""
    table = list(registered() if table is None else table)
    if matches(REPORT, path):
        return [s.name for s in table if s.report is not None], "the report (the stages whose sections it draws)"
    hit = [s.name for s in table if s.depends_on(path)]
    if hit:
        return hit, "what these stages declare they depend on"
    for pattern, why in NO_STAGE:
        if matches(pattern, path):
            return [], why
    if path.startswith(SOURCE):
        return None, EVERYTHING
    if path.endswith(DOC_SUFFIXES):
        return [], "documentation"
    return None, EVERYTHING


def select(paths: list[str], known: list[str], *, same: Iterable[str] = (),
           table: Iterable[Stage] | None = None) -> Selection:
    """The stages of ``known`` (in its order) that a change to ``paths`` can affect. ``same``: the paths
    among them whose code did not change (:func:`same_code`), which select nothing."""
    table = list(registered() if table is None else table)
    same = set(same)
    wanted: set[str] = set()
    reasons: dict[str, list[str]] = {}
    everything = False
    for path in paths:
        if path in same:
            reasons[path] = []
            continue
        names, _why = stages_of(path, table)
        if names is None:
            everything = True
            reasons[path] = list(known)
        else:
            reasons[path] = [s for s in known if s in names]
        wanted |= set(reasons[path])
    return Selection([s for s in known if s in wanted], reasons, everything, sorted(p for p in paths if p in same))


def same_code(before: str | None, after: str | None) -> bool:
    """Whether two versions of a Python file hold the same code: both parse to the same syntax tree (so
    only comments, blank lines, line breaks or spacing differ). A missing side, or one that does not
    parse, is not the same.

    >>> same_code("x = 1  # one\\n", "# the answer\\nx = (\\n    1)\\n"), same_code("x = 1\\n", "x = 2\\n")
    (True, False)
    """
    if before is None or after is None:
        return False
    try:
        return ast.dump(ast.parse(before)) == ast.dump(ast.parse(after))
    except (SyntaxError, ValueError):
        return False
