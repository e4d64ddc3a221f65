"""Breadth-first exploration over numpy arrays: a whole level of states at a time.

:func:`explore_batched` checks the same properties as the reference
:func:`~flightcheck.checks.explore.explorer.explore` and returns the same result types, but evaluates
the spec's own guards, updates and properties over a frontier of states at once
(:mod:`~flightcheck.checks.explore.transitions`), packs states into fixed-width keys
(:mod:`~flightcheck.checks.explore.packing`), deduplicates them in bulk in a hash table
(:mod:`~flightcheck.checks.explore.visited`), renames them with a vectorized symmetry reduction
(:mod:`~flightcheck.checks.explore.canonical`), keeps the graph as integer arrays
(:mod:`~flightcheck.checks.explore.state_graph`), reads deadlock off the guard masks, and checks
liveness on strongly connected components computed by scipy (:mod:`~flightcheck.checks.explore.fairness`).

States are numbered in the reference explorer's breadth-first order, so state counts, depths, edge
counts, verdicts and counterexamples are the reference's: a safety counterexample is the very path
the reference prints, and a liveness one has the same length. Every path is rebuilt from parent
indices and replayed through the plain spec (:mod:`~flightcheck.checks.explore.paths`).

Limits: ``max_states`` (the reference's :class:`StateLimitExceeded`) and ``memory_limit`` bytes
(:class:`MemoryBoundExceeded`, naming the scope and what to do); ``keep_edges=False`` explores with
the visited set alone (safety, deadlock and ``sometimes``; liveness needs the edges).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> res = explore_batched(FlightSpec(SCENARIOS["burst2"]), symmetry=False)
    >>> res.ok, res.stats.states, res.stats.edges
    (True, 102, 210)
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from flightcheck.checks.explore.canonical import BatchedSymmetry
from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.explore.explorer import StateLimitExceeded
from flightcheck.checks.explore.fairness import find_fair_cycle
from flightcheck.checks.explore.paths import PathRebuilder
from flightcheck.checks.explore.result import PropertyResult, Stats
from flightcheck.checks.explore.state_graph import BatchedExploreResult, StateGraph
from flightcheck.checks.explore.transitions import BatchedTransitions, SpecRangeError
from flightcheck.checks.explore.visited import VisitedSet
from flightcheck.spec.properties import Property, properties_for

CHUNK = 1 << 17  # states expanded per batch: large enough to amortize numpy's per-call cost (2**15: 20% slower on burst7)


class MemoryBoundExceeded(StateLimitExceeded):
    """The exploration would need more memory than its bound allows."""


@dataclass
class Progress:
    """Where a running exploration is: states found, the depth being expanded, the rate so far."""

    states: int
    depth: int
    frontier: int
    edges: int
    seconds: float
    memory_bytes: int

    @property
    def states_per_second(self) -> float:
        """States found per second of exploration so far."""
        return self.states / max(self.seconds, 1e-9)


def default_memory_limit() -> int:
    """Three quarters of the memory available now (at least 1 GiB), in bytes."""
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        avail = 8 << 30
    return max(1 << 30, int(avail * 0.75))


def explore_batched(spec: Any, *, symmetry: bool = True, max_states: int = 2_000_000,
                    properties: list[Property] | None = None, memory_limit: int | None = None,
                    keep_edges: bool | None = None, chunk: int = CHUNK, threads: bool | None = None,
                    compiled: bool = False,
                    progress: Callable[[Progress], None] | None = None) -> BatchedExploreResult:
    """Explore ``spec`` exhaustively, a level at a time, and check ``properties`` (default: all that apply).

    ``threads`` (default: when the machine has more than one core) runs the spec's guards and updates
    on the next batch in a second thread while this one puts the last batch into the hash table
    (compiled, without the interpreter lock) and reads its properties: 1.3 times the states per
    second on the eight-request burst here. The result is the same either way.

    ``compiled`` reads the spec through :class:`~flightcheck.checks.explore.compiled.CompiledTransitions`
    (its guards, updates and properties printed as code numba compiles) instead of numpy: the same
    states in the same order, about twice the states per second on the eight-request burst (the hash
    table is then what is left), after a compile of tens of seconds that is cached per scope (worth it
    from a few million states). A slot widened mid-run (a design that
    leaves the layout's ranges) hands the rest of the run back to numpy."""
    t0 = time.perf_counter()
    props = properties if properties is not None else properties_for(spec)
    kinds = {p.kind for p in props}
    if keep_edges is None:
        keep_edges = "eventually" in kinds
    if "eventually" in kinds and not keep_edges:
        raise ValueError("liveness (eventually) needs the edges: keep_edges=True, or leave it out of properties")
    limit = memory_limit if memory_limit is not None else default_memory_limit()
    bt = BatchedTransitions(spec)
    codec, A, n_req = bt.codec, len(bt.actions), spec.num_requests
    sym = BatchedSymmetry(spec, codec.bounds) if symmetry else None
    if sym is not None and sym.is_trivial:
        sym = None
    check = _Checks(spec, bt, props, keep_edges)
    ct = None
    if compiled:
        from flightcheck.checks.explore.compiled import CompiledTransitions

        ct = CompiledTransitions(spec, codec, bt.actions, bt.progress, check.invariants + check.sometimes, bt.reads)
    compile_seconds = ct.compile_seconds if ct is not None else 0.0

    visited = VisitedSet(codec.words)
    init_cols = [np.array([v], dtype=codec.dtype) for v in spec.initial()]
    if sym is not None:
        sym.canonicalize(init_cols)
    visited.insert(codec.pack(init_cols, 1), np.zeros(1, dtype=np.int64))
    parents, pacts = [np.array([-1], dtype=np.int32)], [np.array([-1], dtype=np.int16)]
    edges: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    level_start = [0]
    num_edges = 0
    def expand(a: int, keys: np.ndarray) -> tuple:
        if ct is not None:
            readings = ct.readings(keys)
            cand, rows, act = ct.successors(keys, readings[0])
            if sym is not None:
                cols = codec.unpack(cand)
                sym.canonicalize(cols)
                cand = codec.pack(cols, len(rows))
            return a, cand, rows, act, None, readings
        cols = codec.unpack(keys)
        masks = bt.guards(cols)
        return (a,) + bt.expand(keys, cols, masks, sym) + (cols, masks)

    def widen(e: SpecRangeError) -> None:
        # A design left a slot's range (some mutants do): pack that slot wider, re-encode every state
        # found so far in the same order, and redo the batch.
        nonlocal codec, bt, sym, visited, ct
        ct = None  # the compiled reading was built for the old ranges
        new = codec.widened(e.slot, e.low, e.high)
        again = VisitedSet(new.words)
        for b0 in range(0, visited.size, 1 << 20):
            b1 = min(visited.size, b0 + (1 << 20))
            again.insert(new.pack(codec.unpack(visited.block(b0, b1)), b1 - b0), np.arange(b1 - b0))
        codec, visited = new, again
        bt = check.bt = BatchedTransitions(spec, codec)
        if sym is not None:
            sym = BatchedSymmetry(spec, codec.bounds)

    # Two stages in two threads: while the hash table takes in one batch of successors, the spec's
    # guards and updates run on the next (numpy releases the interpreter lock inside its loops).
    if threads is None:
        threads = (os.cpu_count() or 1) > 1
    pool = ThreadPoolExecutor(max_workers=1) if threads else None

    def submit(a: int, stop: int) -> Any:
        keys = visited.block(a, min(stop, a + chunk))
        return pool.submit(expand, a, keys) if pool else _Done(expand, a, keys)

    lo, hi = 0, 1
    try:
        while lo < hi:
            starts = list(range(lo, hi, chunk))
            k = 0
            pending = submit(starts[0], hi)
            while k < len(starts):
                try:
                    a, cand, rows, act, cols, masks = pending.result()
                except SpecRangeError as e:
                    widen(e)
                    pending = submit(starts[k], hi)
                    continue
                k += 1
                if k < len(starts):
                    pending = submit(starts[k], hi)
                # The properties are read here, beside the hash table's work, while the other thread
                # expands the next batch; and only once the batch's successors were all in range, so
                # a batch redone after widening is seen once.
                if cols is None:
                    check.visit_readings(a, *masks)
                else:
                    check.visit(a, cols, masks)
                num_edges += len(rows)
                need = visited.bytes_needed(len(rows)) + check.bytes_per_state * visited.size \
                    + (10 * num_edges if keep_edges else 0) + 64 * len(rows) * codec.words
                if need > limit:
                    raise MemoryBoundExceeded(_memory_message(spec, symmetry, keep_edges, need, limit,
                                                              visited.size, len(level_start) - 1))
                ids, finder = visited.insert(cand, rows * A + act)
                if visited.size > max_states:
                    raise StateLimitExceeded(f"more than {max_states} states; use a smaller scenario or raise --max-states")
                parents.append((a + rows[finder]).astype(np.int32))
                pacts.append(act[finder].astype(np.int16))
                if keep_edges:
                    edges.append(((a + rows).astype(np.int32), ids.astype(np.int32), act.astype(np.int16)))
                if progress is not None:
                    progress(Progress(visited.size, len(level_start) - 1, hi - lo, num_edges,
                                      time.perf_counter() - t0, visited.nbytes + check.bytes_per_state * visited.size))
            lo, hi = hi, visited.size
            level_start.append(lo)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    explored = time.perf_counter()
    if level_start[-1] != visited.size:
        level_start.append(visited.size)
    size = visited.size
    graph = StateGraph(codec, bt.actions, visited.block(0, size), np.concatenate(parents),
                       np.concatenate(pacts), np.array(level_start[:-1] + [size], dtype=np.int64))
    if keep_edges:
        graph.src, graph.dst, graph.act = (np.concatenate([e[i] for e in edges]) for i in range(3))
    paths = PathRebuilder(spec, graph, sym.reference if sym is not None else None)
    results = check.results(graph, paths, per_request=sym is None)
    elapsed = time.perf_counter() - t0
    depth = len(graph.level_start) - 2
    searched = explored - t0 - compile_seconds  # the compile is the kernel's build, not the search (as pan's)
    stats = Stats(states=size, edges=num_edges, depth=depth, seconds=elapsed, explore_seconds=searched,
                  states_per_second=size / max(searched, 1e-9), symmetry=sym is not None)
    extra: dict[str, Any] = {"engine": "batched"}
    if compiled:  # "compiled" False: a slot was widened mid-run and numpy read the rest
        extra.update(engine="compiled", compiled=ct is not None, compile_seconds=compile_seconds)
    return BatchedExploreResult(state_graph=graph, spec=spec, initial=graph.state(0), properties=results,
                                stats=stats, extra=extra)


class _Done:
    """A call with a future's ``result()``, for the single-threaded path (run when asked for)."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.fn, self.args = fn, args

    def result(self) -> Any:
        return self.fn(*self.args)


def _memory_message(spec: Any, symmetry: bool, keep_edges: bool, need: int, limit: int, states: int,
                    depth: int) -> str:
    title = spec.title()
    hints = [] if symmetry else ["symmetry reduction (drop --no-symmetry)"]
    if keep_edges:
        hints.append("safety only (--safety-only keeps no edges, so no liveness)")
    hints += ["a smaller scenario", "a larger --memory-limit if the machine has the memory"]
    return (f"{title}: exploring needs more than the memory bound of {_size(limit)} "
            f"(about {_size(need)} at {states:,} states, depth {depth}); try " + ", or ".join(hints))


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


class _Checks:
    """What each level's batch tells the properties: first violations, witnesses, deadlock, liveness data."""

    def __init__(self, spec: Any, bt: BatchedTransitions, props: list[Property], keep_edges: bool) -> None:
        self.spec, self.bt, self.props = spec, bt, props
        self.invariants = [p for p in props if p.kind == "always"]
        self.sometimes = [p for p in props if p.kind == "sometimes"]
        self.liveness = any(p.kind == "eventually" for p in props)
        self.first_bad: dict[str, int] = {}
        self.witness: dict[str, int] = {}
        self.deadlock: int | None = None
        self.engine_pos = np.full(len(bt.actions), -1, dtype=np.int64)
        self.engine_pos[bt.engine] = np.arange(len(bt.engine))
        self.live_bits: list[np.ndarray] = []
        self.engine_bits: list[np.ndarray] = []
        nbytes = (len(bt.engine) + 7) // 8
        self.bytes_per_state = 6 + (8 + nbytes if self.liveness else 0)

    def visit(self, base: int, cols: list, masks: list) -> None:
        """Record what holds in the batch of states ``base, base + 1, ...`` (given as columns, with
        the guards' masks)."""
        for p in self.invariants:
            if p.name not in self.first_bad:
                self._first(self.first_bad, p.name, base, ~self.bt.holds(p, cols))
        for p in self.sometimes:
            if p.name not in self.witness:
                self._first(self.witness, p.name, base, self.bt.holds(p, cols))
        live = self.bt.live(cols)
        n = len(cols[0])
        if self.deadlock is None:
            any_live = np.logical_or.reduce(live) if live else np.zeros(n, dtype=bool)
            stuck = any_live.copy()
            for k in self.bt.progress:
                stuck &= ~masks[k]
            self._deadlock(base, stuck)
        self._live(n, live, masks)

    def visit_readings(self, base: int, G: np.ndarray, P: np.ndarray, L: np.ndarray, D: np.ndarray) -> None:
        """The same from the compiled reading's arrays: guards ``G``, properties ``P`` (the
        invariants, then the ``sometimes`` ones), liveness ``L`` and deadlocks ``D``."""
        for k, p in enumerate(self.invariants):
            if p.name not in self.first_bad:
                self._first(self.first_bad, p.name, base, ~P[k])
        for k, p in enumerate(self.sometimes):
            if p.name not in self.witness:
                self._first(self.witness, p.name, base, P[len(self.invariants) + k])
        if self.deadlock is None:
            self._deadlock(base, D)
        self._live(len(D), L, G)

    @staticmethod
    def _first(found: dict[str, int], name: str, base: int, mask: np.ndarray) -> None:
        hit = np.flatnonzero(mask)
        if len(hit):
            found[name] = base + int(hit[0])

    def _deadlock(self, base: int, stuck: np.ndarray) -> None:
        hit = np.flatnonzero(stuck)
        if len(hit):
            self.deadlock = base + int(hit[0])

    def _live(self, n: int, live: Any, masks: Any) -> None:
        if self.liveness:
            bits = np.zeros(n, dtype=np.uint64)
            for i, m in enumerate(live):
                bits |= m.astype(np.uint64) << np.uint64(i)
            self.live_bits.append(bits)
            eng = np.stack([masks[k] for k in self.bt.engine]) if self.bt.engine else np.zeros((1, n), bool)
            self.engine_bits.append(np.packbits(eng, axis=0).T.copy())

    def results(self, graph: StateGraph, paths: PathRebuilder, per_request: bool) -> list[PropertyResult]:
        """Each property's verdict, with paths rebuilt and replayed."""
        out = []
        for p in self.props:
            if p.kind == "always":
                bad = self.first_bad.get(p.name)
                out.append(PropertyResult(p.name, p.kind, p.story, bad is None,
                                          paths.path_to(bad) if bad is not None else None))
            elif p.kind == "deadlock_free":
                cx = paths.path_to(self.deadlock) if self.deadlock is not None else None
                if cx is not None:
                    cx.stutters = True
                out.append(PropertyResult(p.name, p.kind, p.story, self.deadlock is None, cx))
            elif p.kind == "eventually":
                out.append(PropertyResult(p.name, p.kind, p.story, *self._liveness(graph, paths, per_request)))
            elif p.kind == "sometimes":
                w = self.witness.get(p.name)
                out.append(PropertyResult(p.name, p.kind, p.story, w is not None, None,
                                          witness=paths.path_to(w) if w is not None else None))
        return out

    def _liveness(self, graph: StateGraph, paths: PathRebuilder, per_request: bool) -> tuple[bool, Counterexample | None]:
        found = find_fair_cycle(graph, np.concatenate(self.live_bits), np.concatenate(self.engine_bits),
                                self.engine_pos, self.spec.num_requests, per_request)
        if found is None:
            return True, None
        if found.stutters:
            cx = paths.path_to(found.entry)
            cx.stutters = True
        else:
            cx = paths.lasso(found.entry, found.cycle)
        return False, cx
