"""The page pool, derived from the state: free, private, cached and evictable pages, reservations, need.

Nothing here is a state variable of its own: every figure follows from the requests' progress and the
cached pages, so the spec cannot hold two accounts that disagree (the engine keeps a free list, a cache
and per-request reservations, and the conformance check compares each with the figure derived here).

- A running request's block table holds one page per prefill unit it has computed or recovered, plus
  the pages its decode steps started (:meth:`~flightcheck.spec.scenario.Request.pages_after`).
- Its first ``pubd`` shareable pages are cached pages it references; the rest are *private*.
- ``free = pool - private pages - cached pages``; cached pages with no reference are *evictable*.
- Admission reserves everything a request may still need (``lifetime - block table``), so the sum of
  reservations never exceeds ``free + evictable`` (the property ``admission_has_room``).
- An allocation finds too few free pages (*pressure*) only when the running requests' next steps need
  more than the free pages; only then does the engine evict.

Every function reads a :class:`~flightcheck.spec.state.View` through the expression layer, so the
explorer evaluates it on tuples and the z3 checks on terms.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> spec = FlightSpec(SCENARIOS["mixed3-pool"])
    >>> s = spec.initial()
    >>> for a in ("arrive(0)", "admit(0)"):
    ...     s = spec.apply(s, Action(a.split("(")[0], 0))
    >>> free_pages(spec, spec.view(s)), reserved(spec, spec.view(s), 0)
    (4, 3)
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from flightcheck.spec.expr import And, If, Sum, pick
from flightcheck.spec.scenario import Request
from flightcheck.spec.state import DECODE, NOT_CACHED, PREFILL, READY, View

if TYPE_CHECKING:
    from flightcheck.spec.model import FlightSpec


def is_running(s: View, i: int) -> Any:
    """Request ``i`` is in prefill or decode (it has a block table)."""
    return And(s.ph[i] >= PREFILL, s.ph[i] <= DECODE)


@lru_cache(maxsize=1 << 14)
def _decode_pages(r: Request) -> tuple[int, ...]:
    """The pages ``r``'s decode steps have started after 0, 1, ... ``num_decode`` of them (every guard
    and property that counts the pool asks, for every request: computed once per request shape)."""
    return tuple(r.pages_after(d) - r.num_units for d in range(r.num_decode + 1))


@lru_cache(maxsize=1 << 14)
def _decode_starts(r: Request) -> tuple[int, ...]:
    """Whether decode step ``d + 1`` of ``r`` starts a page (0 or 1), for each ``d``; 0 after the last."""
    return tuple(r.pages_after(d + 1) - r.pages_after(d) for d in range(r.num_decode)) + (0,)


def block_table(spec: FlightSpec, s: View, i: int) -> Any:
    """Pages in a running request's block table: its prefill units, plus the pages decode started."""
    return s.done[i] + pick(_decode_pages(spec.scenario.requests[i]), s.dec[i])


def private_pages(spec: FlightSpec, s: View, i: int) -> Any:
    """Pages only request ``i`` holds: its block table beyond the cached prefix it references."""
    return If(is_running(s, i), block_table(spec, s, i) - s.pubd[i], 0)


def num_cached(spec: FlightSpec, s: View) -> Any:
    """Pages in the prefix cache."""
    return Sum(s.pg[k] != NOT_CACHED for k in range(len(spec.layout.page_slots)))


def num_evictable(spec: FlightSpec, s: View) -> Any:
    """Cached pages nobody references."""
    return Sum(And(s.pg[k] == READY, s.ref[k] == 0) for k in range(len(spec.layout.page_slots)))


def free_pages(spec: FlightSpec, s: View) -> Any:
    """Pages on the free list: the pool less every private and every cached page."""
    n = spec.num_requests
    return spec.scenario.num_pages - Sum(private_pages(spec, s, i) for i in range(n)) - num_cached(spec, s)


def reserved(spec: FlightSpec, s: View, i: int) -> Any:
    """Pages admission reserved for request ``i`` that it has not allocated yet."""
    r = spec.scenario.requests[i]
    return If(is_running(s, i), r.num_lifetime_pages - block_table(spec, s, i), 0)


def total_reserved(spec: FlightSpec, s: View) -> Any:
    """Reservations of every running request."""
    return Sum(reserved(spec, s, i) for i in range(spec.num_requests))


def prefill_need(spec: FlightSpec, s: View, i: int) -> Any:
    """Pages the next prefill of ``i`` allocates: one per unit of the chunk."""
    units = spec.scenario.requests[i].num_units
    left = units - s.done[i]
    return If(left < spec.policy.chunk, left, spec.policy.chunk)


def decode_need(spec: FlightSpec, s: View, i: int) -> Any:
    """Pages the next decode step of ``i`` allocates (0 or 1: whether its position starts a page)."""
    return pick(_decode_starts(spec.scenario.requests[i]), s.dec[i])


def next_need(spec: FlightSpec, s: View, i: int) -> Any:
    """What request ``i``'s next step allocates (0 when it is not running)."""
    return If(s.ph[i] == PREFILL, prefill_need(spec, s, i), If(s.ph[i] == DECODE, decode_need(spec, s, i), 0))


def under_pressure(spec: FlightSpec, s: View) -> Any:
    """The running requests' next steps need more pages than are free: an allocation would evict."""
    return Sum(next_need(spec, s, i) for i in range(spec.num_requests)) > free_pages(spec, s)
