"""The named properties of the flight coordinator.

A :class:`Property` is built only through :func:`always`, :func:`sometimes`, :func:`eventually` or
:func:`deadlock_free`, as in Stateright. ``always`` properties are invariants written with
:mod:`flightcheck.spec.expr`, so the explorer evaluates them on every state and the z3 checks prove
them symbolically. ``sometimes`` properties must hold in at least one reachable state, so a property
that passes vacuously is noticed. ``eventually`` (every arrived request terminates) is checked under
weak fairness of the engine's own steps; ``deadlock_free`` asks that no state with a live request has
no engine step left.

Known limits, plainly: properties are checked on the scenario's finite graph only (the z3 checks lift
the invariants to unbounded depth); ``eventually`` holds only under weak fairness of the engine's steps,
never of the environment's (a client that never cancels is allowed); with symmetry reduction on,
``eventually`` is checked as "no fair cycle keeps some request live", which cannot tell which request.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> [p.name for p in properties_for(spec) if p.kind == "always"][:3]
    ['one_flight_per_input', 'follower_waits_for_release', 'single_prefill']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from flightcheck.spec import pool
from flightcheck.spec.expr import And, Implies, Not, Or, Sum
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.state import BLOCKED, CLOSED, FINISHED, NOT_CACHED, OPEN, RESERVED, WAITING, View

Check = Callable[[FlightSpec, View], Any]


@dataclass(frozen=True)
class Property:
    """A named property: its kind, its predicate over a state view, and when it applies."""

    name: str
    kind: str  # "always" | "sometimes" | "eventually" | "deadlock_free"
    check: Check | None
    story: str
    applies: Callable[[FlightSpec], bool] = lambda spec: True

    def holds(self, spec: FlightSpec, state: Any) -> Any:
        """The predicate on one state (a bool, or a z3 Bool for a symbolic state)."""
        assert self.check is not None, f"{self.name} is not a state predicate"
        return self.check(spec, spec.view(state))


def always(name: str, story: str, applies=lambda spec: True):
    """Decorator: an invariant that must hold in every reachable state."""
    return lambda fn: Property(name, "always", fn, story, applies)


def sometimes(name: str, story: str, applies=lambda spec: True):
    """Decorator: a predicate that must hold in at least one reachable state."""
    return lambda fn: Property(name, "sometimes", fn, story, applies)


def eventually(name: str, story: str, applies=lambda spec: True) -> Property:
    """Every request that arrives eventually terminates, under weak fairness of the engine's steps."""
    return Property(name, "eventually", None, story, applies)


def deadlock_free(name: str, story: str) -> Property:
    """No reachable state with a live request lacks an enabled engine step (background eviction aside)."""
    return Property(name, "deadlock_free", None, story)


def _single_flight(spec: FlightSpec) -> bool:
    return spec.policy.single_flight


def _has_pair(spec: FlightSpec) -> bool:
    classes = spec.layout.req_class
    return any(classes.count(c) > 1 for c in set(classes))


@always("one_flight_per_input", "At most one active flight per input, and the index names exactly the open flights.")
def one_flight_per_input(spec: FlightSpec, s: View) -> Any:
    n, lay = spec.num_requests, spec.layout
    conds = []
    for c in range(len(lay.classes)):
        mine = [f for f in range(n) if lay.req_class[f] == c]
        conds.append(Sum(s.fl[f] == OPEN for f in mine) <= 1)
        conds.append(Or(s.idx[c] == 0, *[And(s.idx[c] == f + 1, s.fl[f] == OPEN) for f in mine]))
        conds += [Implies(s.fl[f] == OPEN, s.idx[c] == f + 1) for f in mine]
    return And(*conds)


@always("follower_waits_for_release", "A follower of an open flight is blocked: it never runs before its flight is released.")
def follower_waits_for_release(spec: FlightSpec, s: View) -> Any:
    n = spec.num_requests
    return And(*[
        Implies(And(s.mem[i] == f + 1, s.fl[f] == OPEN), s.ph[i] == BLOCKED)
        for i in range(n) for f in range(n) if f != i
    ])


@always("single_prefill", "With single-flight, no shareable page is prefilled while a copy is cached or held by another live "
        "request, except by design: after a follower's wait expired, or when a lost leader's followers are all released.",
        _single_flight)
def single_prefill(spec: FlightSpec, s: View) -> Any:
    return s.g_dup == 0


@always("visible_after_compute", "A page is visible in the prefix cache only after its KV was computed.")
def visible_after_compute(spec: FlightSpec, s: View) -> Any:
    return And(*[s.pg[k] != RESERVED for k in range(len(spec.layout.page_slots))])


@always("in_use_never_evicted", "Every page a request references (hit, published or pinned) is still cached.")
def in_use_never_evicted(spec: FlightSpec, s: View) -> Any:
    return And(*[
        Implies(And(spec.holds_pages(s, i), p < s.pubd[i]), s.pg[k] != NOT_CACHED)
        for i in range(spec.num_requests) for p, k in enumerate(spec.pages_of(i))
    ])


@always("refcounts_exact", "Each cached page's reference count equals the number of requests holding it.")
def refcounts_exact(spec: FlightSpec, s: View) -> Any:
    conds = []
    for k, (_c, p) in enumerate(spec.layout.page_slots):
        # Every request whose prompt passes through the page: a shared parent counts each child's holders.
        holders = [i for i in range(spec.num_requests) if k in spec.pages_of(i)]
        conds.append(s.ref[k] == Sum(And(spec.holds_pages(s, i), p < s.pubd[i]) for i in holders))
    return And(*conds)


@always("admission_has_room", "With a pool: every running request can still allocate what it reserved (the reservations "
        "never exceed the free and evictable pages), and no allocation overdraws the free list.",
        lambda spec: spec.scenario.has_pool)
def admission_has_room(spec: FlightSpec, s: View) -> Any:
    free = pool.free_pages(spec, s)
    return And(free >= 0, pool.total_reserved(spec, s) <= free + pool.num_evictable(spec, s))


@always("blocked_in_open_flight", "A blocked request follows an open flight: promotion or release never loses a follower.",
        _single_flight)
def blocked_in_open_flight(spec: FlightSpec, s: View) -> Any:
    n = spec.num_requests
    return And(*[
        Implies(s.ph[j] == BLOCKED, Or(*[And(s.mem[j] == f + 1, s.fl[f] == OPEN) for f in range(n) if f != j],
                                       *[And(s.via[j] == f + 1, s.fl[f] == OPEN) for f in range(n) if f != j]))
        for j in range(n)
    ])


@always("waits_for_shared_pages", "Under prefix coordination, a request waits via another flight only while it leads its own "
        "open flight, is blocked (or, lost, hands its wait on in the same call), and the flight it waits via is open and "
        "its prompt shares at least min_shared_pages pages with the request's.",
        lambda spec: spec.policy.prefix_flights)
def waits_for_shared_pages(spec: FlightSpec, s: View) -> Any:
    n = spec.num_requests
    conds = []
    for j in range(n):
        for f in range(n):
            if not spec.can_wait_via(j, f):
                conds.append(s.via[j] != f + 1)
                continue
            waiting = And(s.ph[j] == BLOCKED, s.mem[j] == j + 1, s.fl[j] == OPEN)
            conds.append(Implies(s.via[j] == f + 1, And(s.fl[f] == OPEN, Or(waiting, spec.is_orphaned(s, j)))))
    return And(*conds)


@always("known_once", "The coordinator knows a live request once: as a member of a flight or in the released set, never both.")
def known_once(spec: FlightSpec, s: View) -> Any:
    return And(*[Not(And(s.mem[i] != 0, s.rel[i] == 1)) for i in range(spec.num_requests)])


@always("expired_never_blocked", "A follower whose wait expired is never blocked again: it is in no flight.",
        lambda spec: spec.scenario.expiry and spec.policy.single_flight)
def expired_never_blocked(spec: FlightSpec, s: View) -> Any:
    # A follower leaves its flight; a leader that stopped waiting via another flight still leads its own.
    return And(*[Implies(s.exp[j] == 1, And(s.ph[j] != BLOCKED, Or(s.mem[j] == 0, s.mem[j] == j + 1)))
                 for j in range(spec.num_requests)])


@always("termination_validated", "Every termination of a known live request is accepted once; every other one is rejected with the state unchanged.")
def termination_validated(spec: FlightSpec, s: View) -> Any:
    return s.g_term == 0


@always("release_after_publication", "After-prefill releases a live leader's flight only once every page of the leader's prompt is published (ready in the cache); a terminated leader's flight may go at once.",
        lambda spec: spec.policy.single_flight and spec.policy.release == "after-prefill")
def release_after_publication(spec: FlightSpec, s: View) -> Any:
    """Read from the pages, not the guard: the ghost ``g_early`` is set by a release whose leader is live
    while some page of its prompt is not ready in the cache (``FlightEndings.released_early``), so a design
    that misreads its own release point, or evicts a leader's page before its release, fails here. It does
    not cover a terminated leader's flight (a lost leader's pages are recomputed by design), nor pages of
    a waiter's prompt that its leader's prompt lacks (those the waiter computes itself)."""
    return s.g_early == 0


@always("release_on_completion", "On-completion releases only when the leader terminates.",
        lambda spec: spec.policy.single_flight and spec.policy.release == "on-completion")
def release_on_completion(spec: FlightSpec, s: View) -> Any:
    return s.g_early == 0


@always("quiescent_clean", "At quiescence (no live request, no step pending) no flight, index entry, released ID or page reference remains.")
def quiescent_clean(spec: FlightSpec, s: View) -> Any:
    n, lay = spec.num_requests, spec.layout
    clean = And(
        *[s.fl[f] == CLOSED for f in range(n)],
        *[s.mem[i] == 0 for i in range(n)],
        *[s.via[i] == 0 for i in range(n)],
        *[s.rel[i] == 0 for i in range(n)],
        *[s.idx[c] == 0 for c in range(len(lay.classes))],
        *[s.ref[k] == 0 for k in range(len(lay.page_slots))],
    )
    return Implies(spec.is_quiescent(s), clean)


def _can_share(spec: FlightSpec) -> bool:
    lay = spec.layout
    return spec.policy.prefix_caching and any(
        lay.req_class.count(c) > 1 and lay.num_shareable[c] > 0 for c in range(len(lay.classes)))


@sometimes("sometimes_recovers", "Some request does recover cached pages at admission.", _can_share)
def sometimes_recovers(spec: FlightSpec, s: View) -> Any:
    return Or(*[s.hit[i] > 0 for i in range(spec.num_requests)])


@sometimes("sometimes_follower_released", "A release does happen: a released follower waits for admission.",
           lambda spec: spec.policy.single_flight and _has_pair(spec))
def sometimes_follower_released(spec: FlightSpec, s: View) -> Any:
    # Released into the released set (final design) or still a member of a draining flight.
    return Or(*[And(s.ph[i] == WAITING, Or(s.rel[i] == 1, And(s.mem[i] != 0, s.mem[i] != i + 1)))
                for i in range(spec.num_requests)])


@sometimes("sometimes_all_finished", "Every request can finish normally.")
def sometimes_all_finished(spec: FlightSpec, s: View) -> Any:
    return And(*[s.ph[i] == FINISHED for i in range(spec.num_requests)])


@sometimes("sometimes_expires", "A follower's wait does expire.", lambda spec: spec.scenario.expiry and spec.policy.single_flight)
def sometimes_expires(spec: FlightSpec, s: View) -> Any:
    return Or(*[s.exp[j] == 1 for j in range(spec.num_requests)])


def _can_wait_via(spec: FlightSpec) -> bool:
    n = spec.num_requests
    return any(spec.can_wait_via(j, f) for j in range(n) for f in range(n))


@sometimes("sometimes_waits_via", "Under prefix coordination, a request does wait via another prompt's flight.", _can_wait_via)
def sometimes_waits_via(spec: FlightSpec, s: View) -> Any:
    return Or(*[s.via[j] != 0 for j in range(spec.num_requests)])


@sometimes("sometimes_short_of_memory", "With a pool: the running requests' next steps sometimes need more pages than are free.",
           lambda spec: spec.scenario.has_pool and spec.policy.prefix_caching)
def sometimes_short_of_memory(spec: FlightSpec, s: View) -> Any:
    return pool.under_pressure(spec, s)


EVENTUALLY_TERMINATES = eventually("eventually_terminates", "Every request that arrives eventually terminates (weak fairness of engine steps).")
NO_DEADLOCK = deadlock_free("no_deadlock", "No state with a live request is left without an engine step.")

PROPERTIES: tuple[Property, ...] = (
    one_flight_per_input, follower_waits_for_release, single_prefill, visible_after_compute,
    in_use_never_evicted, refcounts_exact, termination_validated, release_after_publication,
    release_on_completion, quiescent_clean, admission_has_room, blocked_in_open_flight, waits_for_shared_pages, known_once,
    expired_never_blocked, NO_DEADLOCK, EVENTUALLY_TERMINATES,
    sometimes_recovers, sometimes_follower_released, sometimes_all_finished, sometimes_expires,
    sometimes_short_of_memory, sometimes_waits_via,
)


def properties_for(spec: FlightSpec) -> list[Property]:
    """The properties that apply to a spec under its policy and scenario, in a fixed order."""
    return [p for p in PROPERTIES if p.applies(spec)]


def safety_properties(spec: FlightSpec) -> list[Property]:
    """The invariants (``always``) that apply to a spec."""
    return [p for p in properties_for(spec) if p.kind == "always"]


def get_property(name: str) -> Property:
    """The property called ``name``, or a ValueError listing the known names."""
    for p in PROPERTIES:
        if p.name == name:
            return p
    raise ValueError(f"unknown property {name!r}; known: {', '.join(p.name for p in PROPERTIES)}")
