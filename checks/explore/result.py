"""Result objects of the explorer: per-property verdicts and statistics, apart from presentation.

For example::

    >>> r = PropertyResult("p", "always", "a story", holds=True, counterexample=None)
    >>> r.verdict
    'holds'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from flightcheck.checks.explore.counterexample import Counterexample


@dataclass
class PropertyResult:
    """One property's verdict: whether it holds, and its shortest counterexample (or witness)."""

    name: str
    kind: str
    story: str
    holds: bool
    counterexample: Counterexample | None
    witness: Counterexample | None = None

    @property
    def verdict(self) -> str:
        """``holds``, ``violated``, or for ``sometimes`` properties ``found`` / ``never``."""
        if self.kind == "sometimes":
            return "found" if self.holds else "never"
        return "holds" if self.holds else "violated"

    def to_json(self, spec: Any) -> dict[str, Any]:
        """A JSON-ready form of the verdict and its path."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "verdict": self.verdict, "holds": self.holds}
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample.to_json(spec)
        if self.witness is not None:
            out["witness_length"] = len(self.witness)
        return out


@dataclass
class Stats:
    """How big the graph was and how fast it was explored."""

    states: int
    edges: int
    depth: int
    seconds: float
    explore_seconds: float
    states_per_second: float
    symmetry: bool

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"states": self.states, "edges": self.edges, "depth": self.depth,
                "seconds": round(self.seconds, 4), "explore_seconds": round(self.explore_seconds, 4),
                "states_per_second": round(self.states_per_second, 1), "symmetry": self.symmetry}


@dataclass
class ExploreResult:
    """Everything one exploration found: the graph, each property's verdict, the statistics."""

    spec: Any
    graph: nx.DiGraph
    initial: Any
    properties: list[PropertyResult]
    stats: Stats
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every property holds (every ``sometimes`` found)."""
        return all(p.holds for p in self.properties)

    @property
    def violations(self) -> list[PropertyResult]:
        """The properties that failed, shortest counterexample first."""
        bad = [p for p in self.properties if not p.holds]
        return sorted(bad, key=lambda p: len(p.counterexample) if p.counterexample else 10**9)

    def result(self, name: str) -> PropertyResult:
        """The verdict of one property by name (KeyError naming the known ones otherwise)."""
        for p in self.properties:
            if p.name == name:
                return p
        raise KeyError(f"no property {name!r} in this result; have {', '.join(p.name for p in self.properties)}")

    def quiescent_states(self) -> list[Any]:
        """States with nothing in flight (no live request, no engine step pending)."""
        spec = self.spec
        return [s for s in self.graph if spec.is_quiescent(spec.view(s))]

    def to_json(self) -> dict[str, Any]:
        """One JSON object: verdict, each property, the first counterexample's actions, statistics."""
        first = self.violations[0] if self.violations else None
        return {
            "verdict": "ok" if self.ok else "violated",
            "properties": [p.to_json(self.spec) for p in self.properties],
            "counterexample": (first.counterexample.actions if first and first.counterexample else None),
            "violated": [p.name for p in self.violations],
            "stats": self.stats.to_json(),
            **self.extra,
        }
