"""Breadth-first exploration with the visited set partitioned across Dask workers.

For scopes whose visited set does not fit one machine: each worker holds a :class:`Partition` (a Dask
actor) that owns the states whose hash falls to it, their parent pointers and its part of the frontier.
The search goes level by level: every partition expands its frontier and returns the successors bucketed
by owner; the driver routes each bucket to its owner, which keeps the states it has not seen, checks the
invariants on them, and makes them its next frontier. The levels keep the search breadth first, so every
counterexample is a shortest one; among the violating states of its first level the smallest (in the
states' own order) is taken, so the result does not depend on the number of workers or on timing. A
counterexample's path is rebuilt by asking each state's owner for its parent, then replayed concretely
(with symmetry, through the representatives' permutations) as the single-machine explorer does.

Checked: ``always`` properties and ``deadlock_free`` (both decided state by state). ``eventually`` needs
the strongly connected components of the whole graph, which a level-synchronous partitioned search does
not hold; it stays with the single-machine explorers, and :func:`explore_distributed` refuses it.

A worker lost mid-run takes its part of the visited set with it: the exploration starts again on the
workers that remain (at most :data:`RESTARTS` times), so the result is whole or an error, never partial.

For example::

    >>> from flightcheck.checks.cluster import Cluster
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.properties import safety_properties
    >>> with Cluster(workers=1) as c:
    ...     r = explore_distributed(FlightSpec(SCENARIOS["burst2"]), c, symmetry=False)
    >>> r.ok, r.stats.states, r.extra["engine"]
    (True, 102, 'distributed')
"""

from __future__ import annotations

import time
from typing import Any

from flightcheck.checks.cluster import Cluster, ClusterError
from flightcheck.checks.explore.counterexample import Counterexample, replay_representatives
from flightcheck.checks.explore.explorer import StateLimitExceeded
from flightcheck.checks.explore.result import ExploreResult, PropertyResult, Stats
from flightcheck.spec.properties import Property, properties_for

#: How many times an exploration starts again after losing a worker.
RESTARTS = 2
#: The property kinds decided state by state, which a partitioned search can check.
KINDS = ("always", "deadlock_free")


def owner(state: Any, parts: int) -> int:
    """The partition that owns ``state`` (a tuple of ints, whose hash is the same in every process)."""
    return hash(state) % parts


class Partition:
    """One worker's share of the search: the states it owns, their parents, its frontier.

    Used as a Dask actor; every method runs on the worker that holds it.
    """

    def __init__(self, spec: Any, symmetry: bool, index: int, parts: int, invariants: list[str],
                 deadlock: bool) -> None:
        self.spec, self.index, self.parts = spec, index, parts
        self.sym = spec.symmetry() if symmetry else None
        props = {p.name: p for p in properties_for(spec)}
        self.invariants = [props[name] for name in invariants]
        self.check_deadlock = deadlock
        self.parent: dict[Any, tuple[Any, Any] | None] = {}
        self.frontier: list[Any] = []
        self.incoming: list[Any] = []

    def _canon(self, state: Any) -> Any:
        return self.sym.canonical(state)[0] if self.sym is not None else state

    def start(self) -> dict[str, Any]:
        """Take the initial state if this partition owns it."""
        init = self._canon(self.spec.initial())
        if owner(init, self.parts) != self.index:
            return {"new": 0, "bad": {}}
        return self.insert([(init, None, None)])

    def expand(self) -> dict[str, Any]:
        """Successors of the frontier, canonical and bucketed by owner; the deadlocked frontier states."""
        spec, buckets, deadlocked, edges = self.spec, [[] for _ in range(self.parts)], [], 0
        for s in self.frontier:
            succ = spec.successors(s)
            edges += len(succ)
            if self.check_deadlock:
                view = spec.view(s)
                live = any(spec.is_live(view, i) for i in range(spec.num_requests))
                if live and not any(spec.is_progress(a) for a, _ in succ):
                    deadlocked.append(s)
            for a, t in succ:
                c = self._canon(t)
                buckets[owner(c, self.parts)].append((c, s, a))
        self.frontier = []
        return {"buckets": buckets, "deadlocked": min(deadlocked) if deadlocked else None, "edges": edges}

    def insert(self, items: list[tuple[Any, Any, Any]]) -> dict[str, Any]:
        """Keep the states not seen before, check the invariants on them; the smallest violating state per
        property. A state reached several ways in this level keeps the smallest (parent, action): the
        items arrive in an order that depends on the partitioning, the paths rebuilt from them must not."""
        bad: dict[str, Any] = {}
        fresh: dict[Any, tuple[Any, str]] = {}
        for c, s, a in items:
            if c in fresh:
                if (s, str(a)) < fresh[c]:
                    fresh[c] = (s, str(a))
                    self.parent[c] = (s, a)
                continue
            if c in self.parent:
                continue
            self.parent[c] = (s, a) if s is not None else None
            fresh[c] = (s, str(a)) if s is not None else ((), "")
            self.incoming.append(c)
            for p in self.invariants:
                if not p.holds(self.spec, c) and (p.name not in bad or c < bad[p.name]):
                    bad[p.name] = c
        return {"new": len(fresh), "bad": bad}

    def advance(self) -> int:
        """The states inserted this level become the frontier; their number."""
        self.frontier, self.incoming = sorted(self.incoming), []
        return len(self.frontier)

    def parent_of(self, state: Any) -> tuple[Any, Any] | None:
        """``(previous state, action)`` of an owned state, None for the initial state."""
        return self.parent[state]

    def size(self) -> dict[str, int]:
        """States owned, and this worker process's resident memory in bytes."""
        import psutil

        return {"states": len(self.parent), "rss": psutil.Process().memory_info().rss}


def explore_distributed(spec: Any, cluster: Cluster, *, symmetry: bool = True, max_states: int = 50_000_000,
                        properties: list[Property] | None = None) -> ExploreResult:
    """Explore ``spec`` with its visited set partitioned over the cluster's workers (see the module).

    Raises ValueError for an ``eventually`` property (not decidable here), :class:`StateLimitExceeded`
    beyond ``max_states``, and :class:`~flightcheck.checks.cluster.ClusterError` when the workers are
    lost more often than :data:`RESTARTS` allows.
    """
    props = properties if properties is not None else [p for p in properties_for(spec) if p.kind in KINDS]
    refused = [p.name for p in props if p.kind not in KINDS + ("sometimes",)]
    if refused:
        raise ValueError(f"the distributed explorer checks safety only; {', '.join(refused)} needs the whole graph "
                         "(run it on one machine, or leave it out with --safety-only)")
    props = [p for p in props if p.kind in KINDS]
    for attempt in range(RESTARTS + 1):
        try:
            return _explore(spec, cluster, symmetry, max_states, props)
        except Exception as error:
            if not worker_lost(error):
                raise
            if attempt == RESTARTS:
                raise ClusterError(f"workers were lost {RESTARTS + 1} times during the exploration: "
                                   f"{type(error).__name__}: {error}") from None
    raise AssertionError("unreachable")


def worker_lost(error: BaseException) -> bool:
    """Whether ``error`` says an actor's worker went away (its part of the visited set is gone): Dask
    says so as ``OSError: Unable to contact Actor's worker`` on a call in flight, ``RuntimeError: Worker
    holding Actor was lost`` on a new call, or a closed connection."""
    if isinstance(error, ClusterError):
        return False
    if isinstance(error, RuntimeError) and "Actor was lost" in str(error):
        return True
    return type(error).__name__ in ("CommClosedError", "KilledWorker", "CancelledError") \
        or isinstance(error, (OSError, TimeoutError))


def _explore(spec: Any, cluster: Cluster, symmetry: bool, max_states: int, props: list[Property]) -> ExploreResult:
    invariants = [p.name for p in props if p.kind == "always"]
    deadlock = any(p.kind == "deadlock_free" for p in props)
    actors = cluster.actors(Partition, lambda k, n: (spec, symmetry, k, n, invariants, deadlock))
    t0 = time.perf_counter()  # the workers (an embedded cluster's start included) are up: the search begins
    parts = len(actors)
    first_bad: dict[str, Any] = {}
    deadlocked = None
    states = edges = depth = 0
    peak: list[dict[str, int]] = []
    level = _gather([a.start() for a in actors])
    while True:
        states += sum(r["new"] for r in level)
        if states > max_states:
            raise StateLimitExceeded(f"more than {max_states} states; use a smaller scenario or raise --max-states")
        for name in invariants:
            found = [r["bad"][name] for r in level if name in r["bad"]]
            if name not in first_bad and found:
                first_bad[name] = min(found)
        if sum(_gather([a.advance() for a in actors])) == 0:
            break
        expanded = _gather([a.expand() for a in actors])
        edges += sum(r["edges"] for r in expanded)
        stuck = [r["deadlocked"] for r in expanded if r["deadlocked"] is not None]
        if deadlocked is None and stuck:
            deadlocked = min(stuck)
        depth += 1
        level = _gather([actors[j].insert([item for r in expanded for item in r["buckets"][j]]) for j in range(parts)])
    peak = _gather([a.size() for a in actors])
    explored = time.perf_counter()
    sym = spec.symmetry() if symmetry else None

    def path_to(state: Any) -> Counterexample:
        cpath = []
        while True:
            link = _gather([actors[owner(state, parts)].parent_of(state)])[0]
            if link is None:
                break
            prev, action = link
            cpath.append((action, state))
            state = prev
        return Counterexample(replay_representatives(spec, sym, cpath[::-1])[0])

    results = []
    for p in props:
        if p.kind == "always":
            bad = first_bad.get(p.name)
            results.append(PropertyResult(p.name, p.kind, p.story, bad is None, path_to(bad) if bad is not None else None))
        else:
            cx = path_to(deadlocked) if deadlocked is not None else None
            if cx is not None:
                cx.stutters = True
            results.append(PropertyResult(p.name, p.kind, p.story, deadlocked is None, cx))
    elapsed = time.perf_counter() - t0
    stats = Stats(states=states, edges=edges, depth=depth - 1 if depth else 0, seconds=elapsed,
                  explore_seconds=explored - t0, states_per_second=states / max(explored - t0, 1e-9),
                  symmetry=sym is not None)
    return ExploreResult(spec=spec, graph=None, initial=None, properties=results, stats=stats,
                         extra={"engine": "distributed", "workers": parts,
                                "per_worker": [{"states": s["states"], "rss_mib": round(s["rss"] / 2**20, 1)}
                                               for s in peak]})


def _gather(futures: list[Any]) -> list[Any]:
    """The results of actor calls (a lost worker raises; :func:`worker_lost` tells which errors say so)."""
    return [f.result() for f in futures]
