"""Which stages of ``flightcheck check`` a change can affect: ``check --since REF``.

A changed path selects stages by the folder it is in (:data:`RULES`, the first matching prefix wins),
from what each stage imports: ``explore``, ``variants``, ``prove`` and ``equiv`` import only ``spec/``
and the checkers (never ``impl/``), so a change to the engine cannot move them and selects the stages
that run it (``engine``, its guard/command pairs within a bound; ``conform``, and ``smollm2``,
conformance on the real model, which ``--quick`` skips); a change to the server (``impl/server/``) selects ``server``; a change to ``spec/`` can move
every stage; a change to a room of ``checks/`` selects the stages that import it (``checks/explore`` is
read by the proofs and the conformance's coverage too). Documentation, tests, scripts and CI files
select nothing. A path no rule knows selects everything: an unknown change is never a skipped check.

For example::

    >>> select(["impl/engine.py"], ["explore", "variants", "prove", "equiv", "engine", "conform", "server",
    ...                             "smollm2"]).stages
    ['engine', 'conform', 'smollm2']
    >>> select(["README.md", "docs/x.png"], ["explore", "conform"]).stages
    []
    >>> select(["spec/model.py"], ["explore", "conform"]).stages
    ['explore', 'conform']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL = "*"
CONFORM = ("engine", "conform", "smollm2")
GRAPH = ("explore", "variants", "prove", "equiv")

# (path prefix, stages it selects, why), the first match wins; a path matching none selects everything.
RULES: list[tuple[str, tuple[str, ...], str]] = [
    ("spec/", (ALL,), "the design every stage checks"),
    ("impl/server/", ("server",), "the server"),
    ("impl/", CONFORM, "the engine (only the engine and conformance stages run it)"),
    ("checks/explore/", GRAPH + CONFORM + ("server",), "the explorer (also read by the proofs and conformance)"),
    ("checks/proofs/", ("prove", "equiv"), "the proofs"),
    ("checks/unbounded/", ("prove",), "the proofs for all sizes (rows of the prove stage)"),
    ("checks/symbolic/", ("engine",), "the engine's code against the spec within a bound"),
    ("checks/conform/", CONFORM + ("server",), "conformance (the server's harness reads its event log)"),
    ("checks/server/", ("server",), "the server campaign"),
    ("checks/workload/", ("workload",), "the workload model"),
    ("data/", ("workload",), "the traces"),
    ("checks/review/", (), "the review (not a stage)"),
    ("checks/bench/", (), "the experiments (not a stage)"),
    ("checks/mutate/", (), "mutation testing (not a stage)"),
    ("checks/promela/", (), "the Promela export (not a stage)"),
    ("checks/cli/cmd_", (), "a command other than check's stages"),
    ("checks/", (ALL,), "shared checker code (the suite, its stages, the recorded figures, the report)"),
    ("flightcheck/", (ALL,), "the package"),
    ("pyproject.toml", (ALL,), "the package's build and dependencies"),
    ("tests/", (), "tests (run pytest)"),
    ("docs/", (), "documentation"),
    ("scripts/", (), "scripts"),
    (".github/", (), "CI"),
]
DOC_SUFFIXES = (".md", ".txt", ".rst", ".png", ".svg", ".jpg")  # documentation anywhere


@dataclass
class Selection:
    """The stages to run, in the suite's order, and why: each changed path with what it selected."""

    stages: list[str]
    reasons: dict[str, list[str]] = field(default_factory=dict)  # path -> the stages it selected
    everything: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"stages": self.stages, "everything": self.everything, "changed": self.reasons}


def stages_of(path: str) -> tuple[tuple[str, ...], str]:
    """The stages a change to ``path`` can affect (``("*",)`` for all), and why."""
    for prefix, stages, why in RULES:
        if path == prefix or path.startswith(prefix):
            return stages, why
    if path.endswith(DOC_SUFFIXES):
        return (), "documentation"
    return (ALL,), "not known to the selection (so everything runs)"


def select(paths: list[str], known: list[str]) -> Selection:
    """The stages of ``known`` (in its order) that a change to ``paths`` can affect."""
    wanted: set[str] = set()
    reasons: dict[str, list[str]] = {}
    everything = False
    for path in paths:
        stages, _why = stages_of(path)
        if ALL in stages:
            everything = True
            reasons[path] = list(known)
        else:
            reasons[path] = [s for s in known if s in stages]
        wanted |= set(reasons[path])
    return Selection([s for s in known if s in wanted], reasons, everything)
