"""Liveness on the integer state graph: fair strongly connected components, found with scipy.

The semantics are the reference explorer's (``_fair_cycle`` in :mod:`flightcheck.checks.explore.explorer`):
for each request (or, with symmetry, for "some request"), take the subgraph of states where it is
live and its strongly connected components; a component is *fair* when every engine step enabled in
all of its states is taken by an edge inside it (weak fairness of the engine's steps; a single state
without a self-loop is fair only when no engine step is enabled there, i.e. the run stutters). A fair
component means a run on which the request never terminates. The components come from
``scipy.sparse.csgraph.connected_components`` on the sparse graph; the enabled sets are bit rows,
AND-reduced per component, and the taken sets are OR-scattered from the edges, all vectorized.

The entry reported is the shallowest state of a fair component (ties: the smallest state tuple), so
the counterexample's length is the reference's; its loop is a shortest cycle through the entry
inside the component (a self-loop if there is one), or none when the run stutters.

For example::

    >>> from flightcheck.spec.variants import VARIANTS
    >>> from flightcheck.checks.explore.batched import explore_batched
    >>> cx = explore_batched(VARIANTS["stranded-followers"].demo_spec()).result("eventually_terminates").counterexample
    >>> cx.actions, cx.stutters
    (['arrive(0)', 'arrive(1)', 'abort(0)'], True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from flightcheck.checks.explore.state_graph import StateGraph


@dataclass
class FairCycle:
    """Where a live request can stay forever: the entry state, and the loop from it ([] to stutter)."""

    entry: int
    cycle: list
    stutters: bool


def find_fair_cycle(graph: StateGraph, live_bits: np.ndarray, engine_bits: np.ndarray,
                    engine_pos: np.ndarray, num_requests: int, per_request: bool) -> FairCycle | None:
    """The fair component with the shallowest entry, or None when every live request terminates.

    ``live_bits[s]`` has bit ``i`` set when request ``i`` is live in state ``s``; ``engine_bits[s]``
    is the packed row of enabled engine steps (bit ``engine_pos[k]`` for action ``k``, -1 for the
    environment's actions).
    """
    src, dst, act = graph.src, graph.dst, graph.act
    n = graph.num_states
    depth = graph.depths()
    groups = [1 << i for i in range(num_requests)] if per_request else [(1 << num_requests) - 1]
    best: tuple | None = None
    for group in groups:
        node = (live_bits & np.uint64(group)) != 0
        nodes = np.flatnonzero(node)
        if not len(nodes):
            continue
        inside = node[src] & node[dst]
        s, d, a = src[inside], dst[inside], act[inside]
        adj = csr_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(n, n))
        _ncomp, label = connected_components(adj, directed=True, connection="strong")
        lab = label[nodes]
        order = np.argsort(lab, kind="stable")
        members, lab = nodes[order], lab[order]
        starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
        comps = lab[starts]
        always = np.bitwise_and.reduceat(engine_bits[members], starts, axis=0)
        taken = np.zeros_like(always)
        where = np.full(label.max() + 1, -1, dtype=np.int64)
        where[comps] = np.arange(len(comps))
        pos = engine_pos[a]
        e = (label[s] == label[d]) & (pos >= 0)
        bits = (np.uint8(128) >> (pos[e] % 8).astype(np.uint8)).astype(np.uint8)
        np.bitwise_or.at(taken, (where[label[s[e]]], pos[e] // 8), bits)
        fair = ~np.any(always & ~taken, axis=1)
        if not fair.any():
            continue
        in_fair = np.repeat(fair, np.diff(np.r_[starts, len(members)]))
        cand = members[in_fair]
        dmin = depth[cand].min()
        cand = cand[depth[cand] == dmin]
        keys = graph.keys[:, cand]
        entry = int(cand[np.lexsort(keys[::-1])[0]])
        rank = (int(dmin), tuple(int(w) for w in graph.keys[:, entry]))
        if best is None or rank < best[0]:
            best = (rank, entry, label, s, d, a)
    if best is None:
        return None
    _rank, entry, label, s, d, a = best
    if not engine_bits[entry].any():
        return FairCycle(entry, [], True)
    cycle = _cycle_through(graph, entry, label, s, d, a)
    return FairCycle(entry, cycle, not cycle)


def _cycle_through(graph: StateGraph, entry: int, label: np.ndarray, s: np.ndarray, d: np.ndarray,
                   a: np.ndarray) -> list:
    """A shortest cycle through ``entry`` along edges inside its component (a self-loop first)."""
    comp = (label[s] == label[entry]) & (label[d] == label[entry])
    s, d, a = s[comp], d[comp], a[comp]
    loops = a[(s == entry) & (d == entry)]
    if len(loops):
        return [(graph.actions[int(loops.min())], graph.state(entry))]
    back = s[d == entry]
    if not len(back):
        return []
    n = graph.num_states
    adj = csr_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(n, n))
    order, pred = breadth_first_order(adj, entry, directed=True, return_predecessors=True)
    reached = np.zeros(n, dtype=bool)
    reached[order] = True
    back = back[reached[back]]
    if not len(back):
        return []
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(len(order))
    u = int(back[np.argmin(position[back])])
    nodes = [u]
    while nodes[-1] != entry:
        nodes.append(int(pred[nodes[-1]]))
    nodes = nodes[::-1] + [entry]
    out = []
    for x, y in zip(nodes, nodes[1:]):
        k = int(a[(s == x) & (d == y)].min())
        out.append((graph.actions[k], graph.state(y)))
    return out
