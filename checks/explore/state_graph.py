"""The batched explorer's state graph, kept as integer arrays.

States are numbered in breadth-first order (the order of the reference explorer's queue). A
:class:`StateGraph` holds each state's packed key, its parent and the action from the parent (the
breadth-first tree, from which every shortest path is rebuilt), the first id of every depth, and
optionally every edge as three arrays (source id, target id, action index), one entry per enabled
(state, action) pair, as the reference counts edges. :meth:`StateGraph.to_networkx` gives the same
``networkx.DiGraph`` the reference explorer builds (nodes in the same order, each edge with its
``actions``), for rendering and for the small graphs people look at.

:class:`BatchedExploreResult` is an :class:`~flightcheck.checks.explore.result.ExploreResult` whose
``graph`` is built from the arrays only when something asks for it, and refused above a size.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.checks.explore.batched import explore_batched
    >>> res = explore_batched(FlightSpec(SCENARIOS["burst2"]))
    >>> g = res.state_graph
    >>> g.num_states, g.depth_of(g.num_states - 1), res.graph.number_of_nodes()
    (52, 13, 52)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from flightcheck.checks.explore.packing import StateCodec
from flightcheck.checks.explore.result import ExploreResult

# Above this many states a networkx graph is not built unless asked for with a larger bound.
NETWORKX_LIMIT = 200_000


class GraphTooLarge(RuntimeError):
    """A networkx graph was asked for on a result too large to hold one."""


@dataclass
class StateGraph:
    """Keys, breadth-first tree, depth boundaries and (optionally) edges of an explored graph."""

    codec: StateCodec
    actions: tuple
    keys: np.ndarray          # (words, num_states) uint64, by id
    parent: np.ndarray        # (num_states,) int32, -1 for the initial state
    parent_action: np.ndarray  # (num_states,) int16 index into actions, -1 for the initial state
    level_start: np.ndarray   # first id of each depth, then num_states
    src: np.ndarray | None = None
    dst: np.ndarray | None = None
    act: np.ndarray | None = None

    @property
    def num_states(self) -> int:
        """How many states."""
        return self.keys.shape[1]

    @property
    def has_edges(self) -> bool:
        """True when the edges were kept (needed for liveness and pictures)."""
        return self.src is not None

    def state(self, sid: int) -> tuple[int, ...]:
        """The state tuple of id ``sid``."""
        return self.codec.unpack_states(self.keys[:, sid: sid + 1])[0]

    def depth_of(self, sid: int) -> int:
        """The breadth-first depth of id ``sid``."""
        return int(np.searchsorted(self.level_start, sid, side="right") - 1)

    def depths(self) -> np.ndarray:
        """The depth of every state, by id."""
        out = np.empty(self.num_states, dtype=np.int32)
        for d in range(len(self.level_start) - 1):
            out[self.level_start[d]: self.level_start[d + 1]] = d
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        arrays = [self.keys, self.parent, self.parent_action, self.src, self.dst, self.act]
        return sum(a.nbytes for a in arrays if a is not None)

    def to_networkx(self, max_states: int = NETWORKX_LIMIT) -> nx.DiGraph:
        """The reference explorer's graph: state tuples as nodes, edges carrying their ``actions``."""
        if self.num_states > max_states:
            raise GraphTooLarge(f"{self.num_states:,} states is too many for a networkx graph "
                                f"(limit {max_states:,}); use the integer arrays of the state graph instead")
        if not self.has_edges:
            raise GraphTooLarge("the edges were not kept in this exploration (keep_edges=False)")
        states = self.codec.unpack_states(self.keys)
        g = nx.DiGraph()
        g.add_nodes_from(states)
        order = np.lexsort((self.act, self.src))
        names = [str(a) for a in self.actions]
        edges: dict[tuple, list[str]] = {}
        for e in order.tolist():
            edges.setdefault((states[self.src[e]], states[self.dst[e]]), []).append(names[self.act[e]])
        g.add_edges_from((u, v, {"actions": acts}) for (u, v), acts in edges.items())
        return g


class BatchedExploreResult(ExploreResult):
    """An exploration result whose networkx ``graph`` is built from :attr:`state_graph` on request."""

    def __init__(self, *, state_graph: StateGraph, **kwargs: Any) -> None:
        self.state_graph = state_graph
        self._graph: nx.DiGraph | None = None
        super().__init__(graph=None, **kwargs)

    @property
    def graph(self) -> nx.DiGraph:  # type: ignore[override]
        """The networkx graph (built once, on first use; :class:`GraphTooLarge` above the limit)."""
        if self._graph is None:
            self._graph = self.state_graph.to_networkx()
        return self._graph

    @graph.setter
    def graph(self, value: nx.DiGraph | None) -> None:
        self._graph = value
