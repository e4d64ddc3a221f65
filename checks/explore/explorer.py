"""Breadth-first exploration of a spec's reachable state graph, checking every property.

:func:`explore` walks the graph breadth first (so every counterexample it reports is a shortest one),
stores it as a networkx ``DiGraph`` whose edges carry the actions that label them, and checks:

- ``always`` properties on every state (the first, shortest violation of each is kept);
- ``deadlock_free``: no state with a live request lacks an enabled engine step (eviction aside);
- ``eventually``: no fair strongly connected component keeps a request live forever, where fair means
  weak fairness of the engine's steps (an engine step enabled in every state of the component must be
  taken inside it); a single state stutters for free, so a state with a live request and no engine
  step enabled is a violation too;
- ``sometimes`` properties at the end (a witness path, or "never").

With ``symmetry=True`` (the default) interchangeable requests are merged (see
:mod:`flightcheck.spec.symmetry`), and counterexamples are turned back into concrete paths.
Known limit: with symmetry, ``eventually`` asks that *no* request stays live on a fair cycle, since the
reduced graph cannot follow one request's identity around a cycle; verdicts agree with the full graph
on every scenario in the test suite, and ``--no-symmetry`` checks per request.

Works on any :class:`~flightcheck.checks.explore.checkable.CheckableModel` (the flight spec and its variants,
and the toy models the tests check the checker with).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> res = explore(FlightSpec(SCENARIOS["burst2"]), symmetry=False)
    >>> res.ok, res.stats.states
    (True, 102)
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable

import networkx as nx

from flightcheck.checks.explore.counterexample import Counterexample, replay_representatives
from flightcheck.checks.explore.checkable import CheckableModel
from flightcheck.checks.explore.result import ExploreResult, PropertyResult, Stats
from flightcheck.spec.model import Action
from flightcheck.spec.properties import Property, properties_for


class StateLimitExceeded(RuntimeError):
    """The graph has more states than the limit given to :func:`explore`."""


def explore(spec: CheckableModel, *, symmetry: bool = True, max_states: int = 2_000_000,
            properties: list[Property] | None = None) -> ExploreResult:
    """Explore ``spec`` exhaustively and check ``properties`` (default: all that apply to it)."""
    t0 = time.perf_counter()
    props = properties if properties is not None else properties_for(spec)
    invariants = [p for p in props if p.kind == "always"]
    sometimes = [p for p in props if p.kind == "sometimes"]
    sym = spec.symmetry() if symmetry else None
    canon: Callable[[Any], Any] = (lambda s: sym.canonical(s)[0]) if sym else (lambda s: s)

    init = canon(spec.initial())
    parent: dict[Any, tuple[Any, Action] | None] = {init: None}
    depth = {init: 0}
    edges: dict[tuple[Any, Any], list[str]] = {}
    engine_enabled: dict[Any, frozenset[str]] = {}
    first_bad: dict[str, Any] = {}
    witness: dict[str, Any] = {}
    deadlock = None
    queue = deque([init])
    num_edges = 0
    while queue:
        s = queue.popleft()
        for p in invariants:
            if p.name not in first_bad and not p.holds(spec, s):
                first_bad[p.name] = s
        for p in sometimes:
            if p.name not in witness and p.holds(spec, s):
                witness[p.name] = s
        succ = spec.successors(s)
        view = spec.view(s)
        live = any(spec.is_live(view, i) for i in range(spec.num_requests))
        if deadlock is None and live and not any(spec.is_progress(a) for a, _ in succ):
            deadlock = s
        engine_enabled[s] = frozenset(str(a) for a, _ in succ if spec.is_engine(a))
        for a, t in succ:
            c = canon(t)
            num_edges += 1
            edges.setdefault((s, c), []).append(str(a))
            if c not in parent:
                if len(parent) >= max_states:
                    raise StateLimitExceeded(f"more than {max_states} states; use a smaller scenario or raise --max-states")
                parent[c] = (s, a)
                depth[c] = depth[s] + 1
                queue.append(c)
    explored = time.perf_counter()

    graph = nx.DiGraph()
    graph.add_node(init)
    graph.add_nodes_from(parent)
    graph.add_edges_from((u, v, {"actions": acts}) for (u, v), acts in edges.items())
    path_to = _PathBuilder(spec, sym, parent)

    results: list[PropertyResult] = []
    for p in props:
        if p.kind == "always":
            bad = first_bad.get(p.name)
            results.append(PropertyResult(p.name, p.kind, p.story, bad is None,
                                          path_to(bad) if bad is not None else None))
        elif p.kind == "deadlock_free":
            cx = path_to(deadlock) if deadlock is not None else None
            if cx is not None:
                cx.stutters = True
            results.append(PropertyResult(p.name, p.kind, p.story, deadlock is None, cx))
        elif p.kind == "eventually":
            cx = _fair_cycle(spec, graph, engine_enabled, path_to, depth, per_request=sym is None)
            results.append(PropertyResult(p.name, p.kind, p.story, cx is None, cx))
        elif p.kind == "sometimes":
            w = witness.get(p.name)
            results.append(PropertyResult(p.name, p.kind, p.story, w is not None, None,
                                          witness=path_to(w) if w is not None else None))
    elapsed = time.perf_counter() - t0
    stats = Stats(states=len(parent), edges=num_edges, depth=max(depth.values()),
                  seconds=elapsed, explore_seconds=explored - t0,
                  states_per_second=len(parent) / max(explored - t0, 1e-9), symmetry=sym is not None)
    return ExploreResult(spec=spec, graph=graph, initial=init, properties=results, stats=stats)


class _PathBuilder:
    """Turns a state of the (possibly reduced) graph into a concrete shortest path from the start."""

    def __init__(self, spec: Any, sym: Any, parent: dict) -> None:
        self.spec, self.sym, self.parent = spec, sym, parent

    def canonical_path(self, state: Any) -> list[tuple[Action, Any]]:
        out = []
        while self.parent[state] is not None:
            prev, a = self.parent[state]
            out.append((a, state))
            state = prev
        return out[::-1]

    def __call__(self, state: Any) -> Counterexample:
        return Counterexample(self.concrete(self.canonical_path(state))[0])

    def concrete(self, cpath: list[tuple[Action, Any]], start: Any = None, perm=None):
        """Replay representative actions concretely, renaming each through the running permutation."""
        return replay_representatives(self.spec, self.sym, cpath, start, perm)

    def lasso(self, entry: Any, cycle: list[tuple[Action, Any]]) -> Counterexample:
        steps, s, perm = self.concrete(self.canonical_path(entry))
        loop, _s, _p = self.concrete(cycle, start=s, perm=perm)
        return Counterexample(steps, loop)


def _fair_cycle(spec: Any, graph: nx.DiGraph, engine_enabled: dict, path_to: _PathBuilder,
                depth: dict, per_request: bool) -> Counterexample | None:
    """A shortest-entry fair component in which some request stays live forever, or None."""
    groups = [[i] for i in range(spec.num_requests)] if per_request else [list(range(spec.num_requests))]
    best = None
    for reqs in groups:
        nodes = [s for s in graph if any(spec.is_live(spec.view(s), i) for i in reqs)]
        sub = graph.subgraph(nodes)
        for comp in nx.strongly_connected_components(sub):
            if len(comp) == 1:
                (s,) = comp
                inside = [(s, s, graph[s][s]["actions"])] if graph.has_edge(s, s) else []
            else:
                inside = [(u, v, d["actions"]) for u, v, d in sub.subgraph(comp).edges(data=True)]
            taken = {a for _u, _v, acts in inside for a in acts}
            always_enabled = frozenset.intersection(*(engine_enabled[s] for s in comp))
            if not always_enabled <= taken:
                continue  # weak fairness forces a step out of this component
            entry = min(comp, key=lambda s: (depth[s], s))
            if best is None or depth[entry] < depth[best[0]]:
                best = (entry, inside)
    if best is None:
        return None
    entry, inside = best
    # With no engine step enabled, the run simply stutters; any self-loop there is the environment's.
    cycle = _cycle_from(entry, inside) if engine_enabled[entry] else []
    if not cycle:
        cx = path_to(entry)
        cx.stutters = True
        return cx
    return path_to.lasso(entry, cycle)


def _cycle_from(entry: Any, inside: list) -> list[tuple[Action, Any]]:
    """A cycle through ``entry`` inside its component, as (action, next state) pairs; [] if none."""
    from flightcheck.spec.model import parse_action
    g = nx.DiGraph()
    g.add_edges_from((u, v, {"a": acts[0]}) for u, v, acts in inside)
    if g.has_edge(entry, entry):
        return [(parse_action(g[entry][entry]["a"]), entry)]
    if entry not in g:
        return []
    for succ in g.successors(entry):
        try:
            back = nx.shortest_path(g, succ, entry)
        except nx.NetworkXNoPath:
            continue
        nodes = [entry] + back
        return [(parse_action(g[u][v]["a"]), v) for u, v in zip(nodes, nodes[1:])]
    return []
