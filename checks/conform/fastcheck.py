"""The safety properties on one concrete state, in time linear in the requests: the validator's hot path.

Trace validation checks every invariant of :mod:`flightcheck.spec.properties` after every event
(:func:`~flightcheck.checks.conform.explain.violated`). Written once for every reading of the spec
(plain values, z3 terms, numpy columns), several properties range over every pair of requests
(``follower_waits_for_release``, ``blocked_in_open_flight``, ``waits_for_shared_pages``) or every
request and every page slot, building a term per pair; on a server's log (hundreds of requests, the
spec grown with each) that was most of ``flightcheck validate``'s 60 ms an event.

Each function here decides one property on a plain tuple state exactly as its definition does, by
skipping only the conjuncts (or summands) that are true (or 0) whatever the request's other slots
hold: ``Implies(mem[i] == f + 1 and fl[f] == OPEN, ...)`` needs looking at for one ``f`` only (the
one ``mem[i]`` names), ``If(is_running(i), block_table(i) - pubd[i], 0)`` only for running requests.
Whatever a spec design may override (``holds_pages``, ``pages_of``, ``can_wait_via``,
``is_orphaned``, ``is_quiescent``, the pool's ``block_table``) is called, never re-derived.

:func:`holds` answers for the property objects of :data:`FAST` (looked up by the objects themselves: a
property redefined or replaced, say with a weakened check, has no fast form and is evaluated by its
definition), None for the others. The validator still names every violation by the definition itself
(a fast "violated" is re-evaluated), so a diagnosis is the definition's word for word; a fast "holds" is
trusted, and the tests compare both readings on the states of long logs, on perturbed copies of them and
on the explored states of every design variant (tests/conform/test_validate_large.py). With
:data:`CROSS_CHECK` set (or ``FLIGHTCHECK_CROSS_CHECK=1`` in the environment) every fast answer is
compared with the definition's, an AssertionError on any difference.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from flightcheck.spec import pool
from flightcheck.spec import properties as P
from flightcheck.spec.state import BLOCKED, CLOSED, DECODE, NOT_CACHED, OPEN, PREFILL, READY, RESERVED, View

# Tests set it (or FLIGHTCHECK_CROSS_CHECK=1): every fast answer is compared with the property's definition.
CROSS_CHECK = os.environ.get("FLIGHTCHECK_CROSS_CHECK") == "1"


def _fields(spec: Any, state: tuple, *names: str) -> list:
    out = []
    for name in names:
        off, size, _lo, _hi = spec.layout.fields[name]
        out.append(state[off:off + size])
    return out


def _follower_waits_for_release(spec: Any, s: View, state: tuple) -> bool:
    # And over i, f != i of Implies(mem[i] == f + 1 and fl[f] == OPEN, ph[i] == BLOCKED): only f = mem[i] - 1.
    n = spec.num_requests
    mem, fl, ph = _fields(spec, state, "mem", "fl", "ph")
    for i in range(n):
        m = mem[i]
        if 1 <= m <= n and m - 1 != i and fl[m - 1] == OPEN and ph[i] != BLOCKED:
            return False
    return True


def _blocked_in_open_flight(spec: Any, s: View, state: tuple) -> bool:
    # A blocked j needs some f != j with (mem[j] == f + 1 or via[j] == f + 1) and fl[f] == OPEN.
    n = spec.num_requests
    mem, via, fl, ph = _fields(spec, state, "mem", "via", "fl", "ph")
    for j in range(n):
        if ph[j] != BLOCKED:
            continue
        m, v = mem[j], via[j]
        if not ((1 <= m <= n and m - 1 != j and fl[m - 1] == OPEN) or (1 <= v <= n and v - 1 != j and fl[v - 1] == OPEN)):
            return False
    return True


def _waits_for_shared_pages(spec: Any, s: View, state: tuple) -> bool:
    # For every j and f: via[j] != f + 1 unless j can wait via f; only f = via[j] - 1 has a conjunct that can fail.
    n = spec.num_requests
    via, fl, ph, mem = _fields(spec, state, "via", "fl", "ph", "mem")
    for j in range(n):
        v = via[j]
        if not 1 <= v <= n:
            continue
        f = v - 1
        if not spec.can_wait_via(j, f):
            return False
        waiting = ph[j] == BLOCKED and mem[j] == j + 1 and fl[j] == OPEN
        if not (fl[f] == OPEN and (waiting or spec.is_orphaned(s, j))):
            return False
    return True


def _one_flight_per_input(spec: Any, s: View, state: tuple) -> bool:
    n, lay = spec.num_requests, spec.layout
    fl, idx = _fields(spec, state, "fl", "idx")
    members: list[list[int]] = [[] for _ in lay.classes]
    for f in range(n):
        members[lay.req_class[f]].append(f)
    for c, mine in enumerate(members):
        open_ = [f for f in mine if fl[f] == OPEN]
        if len(open_) > 1:
            return False
        if idx[c] != 0 and not any(idx[c] == f + 1 for f in open_):
            return False
        if any(idx[c] != f + 1 for f in open_):
            return False
    return True


def _visible_after_compute(spec: Any, s: View, state: tuple) -> bool:
    (pg,) = _fields(spec, state, "pg")
    return RESERVED not in pg[:len(spec.layout.page_slots)]


def _in_use_never_evicted(spec: Any, s: View, state: tuple) -> bool:
    # Implies(holds_pages(i) and p < pubd[i], pg[k] != NOT_CACHED): nothing to check where pubd[i] == 0.
    pubd, pg = _fields(spec, state, "pubd", "pg")
    for i in range(spec.num_requests):
        if pubd[i] <= 0 or not spec.holds_pages(s, i):
            continue
        for p, k in enumerate(spec.pages_of(i)):
            if p < pubd[i] and pg[k] == NOT_CACHED:
                return False
    return True


def _refcounts_exact(spec: Any, s: View, state: tuple) -> bool:
    # ref[k] == the holders of k (requests whose pages_of has k) holding pages with p < pubd, p = page_slots[k][1].
    lay = spec.layout
    pubd, ref = _fields(spec, state, "pubd", "ref")
    count = [0] * len(lay.page_slots)
    for i in range(spec.num_requests):
        if pubd[i] <= 0 or not spec.holds_pages(s, i):
            continue
        for k in set(spec.pages_of(i)):
            if lay.page_slots[k][1] < pubd[i]:
                count[k] += 1
    return all(ref[k] == count[k] for k in range(len(lay.page_slots)))


def _pool_figures(spec: Any, s: View, state: tuple) -> tuple[int, int, int]:
    """:func:`pool.free_pages`, :func:`pool.total_reserved` and :func:`pool.num_evictable` of a concrete
    state: their sums of ``If(is_running(i), ..., 0)`` over the running requests only."""
    lay = spec.layout
    ph, pubd, pg, ref = _fields(spec, state, "ph", "pubd", "pg", "ref")
    private = reserved = 0
    for i in range(spec.num_requests):
        if PREFILL <= ph[i] <= DECODE:
            table = pool.block_table(spec, s, i)
            private += table - pubd[i]
            reserved += spec.scenario.requests[i].num_lifetime_pages - table
    pages = range(len(lay.page_slots))
    cached = sum(1 for k in pages if pg[k] != NOT_CACHED)
    evictable = sum(1 for k in pages if pg[k] == READY and ref[k] == 0)
    return spec.scenario.num_pages - private - cached, reserved, evictable


def free_pages(spec: Any, state: Any) -> Any:
    """:func:`pool.free_pages` of ``state`` (linear in the requests for a concrete state)."""
    if type(state) is not tuple:
        return pool.free_pages(spec, spec.view(state))
    free = _pool_figures(spec, spec.view(state), state)[0]
    if CROSS_CHECK:
        assert free == pool.free_pages(spec, spec.view(state)), "fast free_pages differs from pool.free_pages"
    return free


def _admission_has_room(spec: Any, s: View, state: tuple) -> bool:
    free, reserved, evictable = _pool_figures(spec, s, state)
    return free >= 0 and reserved <= free + evictable


def _known_once(spec: Any, s: View, state: tuple) -> bool:
    mem, rel = _fields(spec, state, "mem", "rel")
    return not any(mem[i] != 0 and rel[i] == 1 for i in range(spec.num_requests))


def _expired_never_blocked(spec: Any, s: View, state: tuple) -> bool:
    exp, ph, mem = _fields(spec, state, "exp", "ph", "mem")
    return all(ph[j] != BLOCKED and (mem[j] == 0 or mem[j] == j + 1)
               for j in range(spec.num_requests) if exp[j] == 1)


def _quiescent_clean(spec: Any, s: View, state: tuple) -> bool:
    # Implies(is_quiescent, clean): when clean holds, is_quiescent (every progress guard, once idle) is moot.
    lay = spec.layout
    n, c, k = spec.num_requests, len(lay.classes), len(lay.page_slots)
    fl, mem, via, rel, idx, ref = _fields(spec, state, "fl", "mem", "via", "rel", "idx", "ref")
    if (all(fl[f] == CLOSED for f in range(n)) and not any(mem[:n]) and not any(via[:n]) and not any(rel[:n])
            and not any(idx[:c]) and not any(ref[:k])):
        return True
    return not spec.is_quiescent(s)


FAST: dict[Any, Callable[[Any, View, tuple], bool]] = {
    P.follower_waits_for_release: _follower_waits_for_release,
    P.blocked_in_open_flight: _blocked_in_open_flight,
    P.waits_for_shared_pages: _waits_for_shared_pages,
    P.one_flight_per_input: _one_flight_per_input,
    P.visible_after_compute: _visible_after_compute,
    P.in_use_never_evicted: _in_use_never_evicted,
    P.refcounts_exact: _refcounts_exact,
    P.admission_has_room: _admission_has_room,
    P.quiescent_clean: _quiescent_clean,
    P.known_once: _known_once,
    P.expired_never_blocked: _expired_never_blocked,
}


def holds(prop: Any, spec: Any, state: tuple) -> bool | None:
    """Whether ``prop`` holds in concrete ``state`` by its fast form; None when it has none (or the
    state is not a plain tuple of ints)."""
    fast = FAST.get(prop)
    if fast is None or type(state) is not tuple:
        return None
    s = spec.view(state)
    answer = fast(spec, s, state)
    if CROSS_CHECK:
        want = bool(prop.holds(spec, state))
        assert answer == want, f"fast {prop.name} says {answer}, its definition {want}, in {state}"
    return answer
