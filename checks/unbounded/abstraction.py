"""The abstraction function: a finite spec state read as a structure of the relational model.

:func:`signature_of` gives the finite signature of a scenario (its requests, classes and page slots;
a page's path order is its slot order), :func:`abstract` maps one state of
:class:`~flightcheck.spec.model.FlightSpec` to a :class:`~flightcheck.checks.unbounded.state.RelState`
over it. Counts become sets (``pubd[i]`` pages held, ``done[i]`` pages computed: the shareable pages
below that position), ``mem[i] == f + 1`` becomes ``mem(i, f)``, ``via[i] == f + 1`` becomes
``via(i, f)``, the reference counts, ``hit`` and ``dec`` are dropped (see
:mod:`flightcheck.checks.unbounded.state`), and the proofs' ghost order ``ord`` is read as the depths of
the chains of waits.

For example::

    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> s = spec.apply(spec.initial(), spec.actions[0])
    >>> a = abstract(spec, s)
    >>> a.ph(0), a.mem(0, 0), a.fl(0), a.idx(0, 0)
    (2, True, True, True)
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.unbounded.signature import Finite
from flightcheck.checks.unbounded.state import RelState, table_state
from flightcheck.spec.pool import is_running
from flightcheck.spec.state import DRAINING, OPEN


def signature_of(spec: Any, state: Any = None) -> Finite:
    """The finite signature of ``spec``'s scenario: its requests, class slots, page slots and their prompt
    tree, which classes may wait via each other's flights, and each request's order of preference.

    The spec prefers the flight sharing the most pages, and among equals the one whose leader arrived
    first. Where its layout keeps arrival ranks (``seq``), that order is a run's, read off ``state``: the
    requests arrived so far in their order, then the others by index (every choice compares arrived
    requests only, so one fixed order serves a whole run, as the symbolic ``prefer`` is fixed)."""
    lay = spec.layout
    shares = {(c, d) for c in range(len(lay.classes)) for d in range(len(lay.classes))
              if c != d and lay.shared[c][d] >= spec.policy.min_shared_pages}
    n = lay.num_requests
    if lay.has_via_ties and state is not None:
        seq = spec.view(state).seq
        order = [seq[f] if seq[f] else n + 1 + f for f in range(n)]
    else:
        order = list(range(n))

    def prefer(i: int, f: int, g: int) -> bool:  # the spec's via_choice: most shared pages, earliest leader
        ci = lay.req_class[i]
        return (-lay.shared[ci][lay.req_class[f]], order[f]) < (-lay.shared[ci][lay.req_class[g]], order[g])

    return Finite(lay.num_requests, lay.req_class, (), spec.policy.capacity, len(lay.classes),
                  paths=lay.class_pages, shares=shares, prefer=prefer)


def abstract(spec: Any, state: Any) -> RelState:
    """The relational structure of one finite state (see the module's docstring)."""
    lay, s = spec.layout, spec.view(state)
    n, nc, npg = lay.num_requests, len(lay.classes), len(lay.page_slots)
    pos = [p for _c, p in lay.page_slots]  # a shared page sits at the same position on every path
    for f in range(n):
        if s.fl[f] == DRAINING:
            raise ValueError("a draining flight has no reading in the relational model (the final design's)")
    mine = lambda x, k: k in lay.class_pages[lay.req_class[x]]  # noqa: E731
    depth = [_depth(s, x, n) for x in range(n)]
    tables: dict[str, Any] = {
        "ph": {(x,): s.ph[x] for x in range(n)},
        "mem": {(x, f): s.mem[x] == f + 1 for x in range(n) for f in range(n)},
        "rel": {(x,): s.rel[x] == 1 for x in range(n)},
        "fl": {(f,): s.fl[f] == OPEN for f in range(n)},
        "exp": {(x,): s.exp[x] == 1 for x in range(n)},
        "via": {(x, f): s.via[x] == f + 1 for x in range(n) for f in range(n)},
        "idx": {(c, f): s.idx[c] == f + 1 for c in range(nc) for f in range(n)},
        "pg": {(k,): s.pg[k] for k in range(npg)},
        "hold": {(x, k): mine(x, k) and pos[k] < s.pubd[x] for x in range(n) for k in range(npg)},
        "comp": {(x, k): mine(x, k) and pos[k] < s.done[x] for x in range(n) for k in range(npg)},
        "running": sum(1 for x in range(n) if is_running(s, x)),
        "g_term": s.g_term, "g_early": s.g_early == 1, "g_dup": s.g_dup == 1,
        "ord": {(x, y): depth[x] < depth[y] for x in range(n) for y in range(n)},
    }
    return table_state(tables)


def _depth(s: Any, x: int, n: int) -> float:
    """How many waits lead from ``x`` to a request that waits via nobody (the proofs' ghost ``ord`` reads
    these depths); infinite on a cycle of waits, which the lemma ``waits_are_ordered`` then rejects."""
    d = 0
    while s.via[x] and d <= n:
        x, d = s.via[x] - 1, d + 1
    return d if d <= n else float("inf")
