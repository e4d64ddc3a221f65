"""Counterexamples of the batched explorer, rebuilt from parent indices and confirmed by the spec.

A path in the batched explorer's graph is a list of (action, representative) pairs read off the
breadth-first tree. :class:`PathRebuilder` turns it into a concrete path the way the reference
explorer does: with symmetry, each representative action is renamed through the running
permutation (the reference :class:`~flightcheck.spec.symmetry.Symmetry` on plain tuples) and the
renamed state is checked to have the representative the graph holds. The concrete actions are then
replayed from the initial state by :meth:`Counterexample.from_actions`, which evaluates every guard
and update with the plain interpretation, so every path shown is confirmed by the original semantics
and not by the numpy one.

For example::

    >>> from flightcheck.spec.variants import VARIANTS
    >>> from flightcheck.checks.explore.batched import explore_batched
    >>> spec = VARIANTS["insert-on-miss"].demo_spec()
    >>> explore_batched(spec).result("visible_after_compute").counterexample.actions
    ['arrive(0)', 'admit(0)']
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.explore.counterexample import Counterexample, replay_representatives
from flightcheck.checks.explore.state_graph import StateGraph


class PathRebuilder:
    """Concrete, replayed paths to states of a (possibly symmetry-reduced) :class:`StateGraph`."""

    def __init__(self, spec: Any, graph: StateGraph, symmetry: Any = None) -> None:
        self.spec, self.graph, self.sym = spec, graph, symmetry

    def canonical_path(self, sid: int) -> list[tuple[Any, tuple[int, ...]]]:
        """The breadth-first tree's path to ``sid``: (action, representative reached) pairs."""
        g = self.graph
        out = []
        while g.parent[sid] >= 0:
            out.append((g.actions[g.parent_action[sid]], g.state(sid)))
            sid = int(g.parent[sid])
        return out[::-1]

    def concrete(self, cpath: list, start: Any = None, perm: Any = None) -> tuple[list, Any, Any]:
        """Concrete actions for a representative path from ``start`` (the initial state by default)."""
        steps, s, perm = replay_representatives(self.spec, self.sym, cpath, start, perm)
        return [step.action for step in steps], s, perm

    def path_to(self, sid: int) -> Counterexample:
        """A shortest concrete path from the initial state to (a renaming of) state ``sid``."""
        actions, _s, _perm = self.concrete(self.canonical_path(sid))
        return Counterexample.from_actions(self.spec, actions)

    def lasso(self, entry: int, cycle: list) -> Counterexample:
        """The path to ``entry`` followed by ``cycle`` (action, representative) pairs as its loop."""
        stem, s, perm = self.concrete(self.canonical_path(entry))
        loop, _s, _perm = self.concrete(cycle, start=s, perm=perm)
        whole = Counterexample.from_actions(self.spec, stem + loop)
        return Counterexample(whole.steps[: len(stem)], whole.steps[len(stem):])
