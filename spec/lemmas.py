"""Auxiliary invariants (lemmas) that strengthen the safety properties into inductive ones.

Most safety properties of :mod:`flightcheck.spec.properties` are true of every reachable state but
not *inductive*: some unreachable state satisfies them and steps into a violation (a terminated
request still counted as a page holder, a follower pointing at a closed flight, ...). Each lemma below
rules out one such family of unreachable states. They are written with :mod:`flightcheck.spec.expr`
like everything else in spec/, so the explorer can check them on every reachable state and the z3
checks prove them by k-induction together with the properties (``flightcheck prove`` reports each
lemma's own verdict: a lemma is only ever assumed once it is itself proved).

The lemmas speak of the final design (flights, index, released set). ``DRAINING_LEMMAS`` replace the
membership lemmas for the ``draining`` variant, whose released followers stay in a draining flight.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> [l.name for l in lemmas_for(spec)][:2]
    ['absent_is_blank', 'terminated_is_forgotten']
    >>> all(l.holds(spec, spec.initial()) for l in lemmas_for(spec))
    True
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

from flightcheck.spec.expr import And, If, Implies, Not, Or, Sum
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.state import ABSENT, BLOCKED, CLOSED, DECODE, DRAINING, NOT_CACHED, OPEN, PREFILL, WAITING, View


@dataclass(frozen=True)
class Lemma:
    """A named auxiliary invariant: a predicate over a state view, and the designs it speaks of."""

    name: str
    story: str
    check: Callable[[FlightSpec, View], Any]
    designs: tuple[str, ...] = ("correct", "draining")
    on_trees: bool = True
    prefix_only: bool = False

    def applies(self, spec: FlightSpec) -> bool:
        """True when the lemma speaks of ``spec``'s design (the buggy variants are attempts at the
        final design, so its lemmas are tried on them too, and simply fail where the bug bites), of
        its scenario (some are stated per prompt and are false where prompts share pages) and of its
        coordination (some speak of waits via other prompts' flights only)."""
        design = "draining" if getattr(spec, "variant_name", "correct") == "draining" else "correct"
        return (design in self.designs and (self.on_trees or not spec.scenario.prefixes)
                and (spec.policy.prefix_flights or not self.prefix_only))

    def holds(self, spec: FlightSpec, state: Any) -> Any:
        """The predicate on one state (a bool, or a z3 Bool for a symbolic state)."""
        return self.check(spec, spec.view(state))


def lemma(story: str, designs: tuple[str, ...] = ("correct", "draining"), *, on_trees: bool = True,
          prefix_only: bool = False):
    """Decorator: the function's name becomes the lemma's name. ``on_trees=False``: the lemma is stated
    per prompt and does not apply to a scenario whose prompts share pages (a prompt tree).
    ``prefix_only``: it applies under prefix coordination only."""
    return lambda fn: Lemma(fn.__name__, story, fn, designs, on_trees, prefix_only)


def _per_request(spec: FlightSpec) -> range:
    return range(spec.num_requests)


@lemma("A request that has not arrived holds nothing: no progress, no flight, not released, never expired.")
def absent_is_blank(spec: FlightSpec, s: View) -> Any:
    return And(*[
        Implies(s.ph[i] == ABSENT, And(s.hit[i] == 0, s.done[i] == 0, s.pubd[i] == 0, s.dec[i] == 0,
                                       s.mem[i] == 0, s.rel[i] == 0, s.fl[i] == CLOSED, s.exp[i] == 0,
                                       s.via[i] == 0))
        for i in _per_request(spec)
    ])


@lemma("A terminated request's progress is cleared and the coordinator has forgotten it; only a leader whose "
       "flight is still pending holds pages.")
def terminated_is_forgotten(spec: FlightSpec, s: View) -> Any:
    return And(*[
        Implies(spec.is_terminated(s, i), And(s.hit[i] == 0, s.done[i] == 0, s.dec[i] == 0, s.mem[i] == 0,
                                              s.rel[i] == 0, Or(s.pubd[i] == 0, s.fl[i] == OPEN),
                                              Or(s.via[i] == 0, s.fl[i] == OPEN)))
        for i in _per_request(spec)
    ])


@lemma("Progress matches the phase: a blocked follower holds nothing, a waiting request only its pins, hit <= "
       "published <= computed while running, decoding only after the prompt.")
def progress_matches_phase(spec: FlightSpec, s: View) -> Any:
    conds = []
    for i, r in enumerate(spec.scenario.requests):
        queued = Or(s.ph[i] == BLOCKED, s.ph[i] == WAITING)
        running = And(s.ph[i] >= PREFILL, s.ph[i] <= DECODE)
        conds += [
            Implies(queued, And(s.hit[i] == 0, s.done[i] == 0, s.dec[i] == 0)),
            Implies(s.ph[i] == BLOCKED, s.pubd[i] == 0),
            Implies(s.ph[i] == PREFILL, And(s.done[i] < r.num_units, s.dec[i] == 0)),
            Implies(s.ph[i] == DECODE, s.done[i] == r.num_units),
            Implies(running, And(s.hit[i] <= s.pubd[i], s.pubd[i] <= spec.published_upto(s, i))),
        ]
        if spec.policy.publication == "incremental" and spec.policy.prefix_caching:
            # Incremental publication: at most the last computed chunk is still private.
            conds.append(Implies(running, s.done[i] - s.pubd[i] <= spec.policy.chunk))
        if not spec.policy.prefix_caching:
            conds.append(s.pubd[i] == 0)
    return And(*conds)


@lemma("The prefix cache is prefix-closed: a cached page's predecessors are cached.")
def cache_prefix_closed(spec: FlightSpec, s: View) -> Any:
    return And(*[
        Implies(s.pg[child] != NOT_CACHED, s.pg[k] != NOT_CACHED)
        for k, children in enumerate(spec.layout.page_children) for child in children
    ])


@lemma("Without prefix caching nothing is ever cached or referenced.")
def nothing_cached_without_caching(spec: FlightSpec, s: View) -> Any:
    if spec.policy.prefix_caching:
        return True
    return And(*[And(s.pg[k] == NOT_CACHED, s.ref[k] == 0) for k in range(len(spec.layout.page_slots))])


@lemma("Every live request is known to the coordinator: a member of a flight, or released (never both).",
       ("correct",))
def live_is_known(spec: FlightSpec, s: View) -> Any:
    return And(*[
        And(Implies(spec.is_live(s, i), Or(s.mem[i] != 0, s.rel[i] == 1)), Or(s.mem[i] == 0, s.rel[i] == 0))
        for i in _per_request(spec)
    ])


@lemma("Members belong to an open flight of their own class; only an open flight's leader runs, the others are "
       "blocked (and a leader only while it waits via another prompt's flight); an open flight's slot is its live "
       "leader's, or a terminated leader's whose flight is pending.",
       ("correct",))
def members_of_open_flights(spec: FlightSpec, s: View) -> Any:
    n = spec.num_requests
    conds = []
    for i in range(n):
        same = [f for f in range(n) if spec.cls(f) == spec.cls(i)]
        conds.append(Or(s.mem[i] == 0, *[And(s.mem[i] == f + 1, s.fl[f] == OPEN) for f in same]))
        follows = And(s.mem[i] != 0, s.mem[i] != i + 1)
        waits_via = And(s.via[i] != 0, s.mem[i] == i + 1)
        conds.append(Implies(s.ph[i] == BLOCKED, Or(follows, waits_via)))
        conds.append(Implies(follows, And(s.ph[i] == BLOCKED, s.via[i] == 0)))
        conds.append(Implies(s.fl[i] == OPEN, And(s.ph[i] != ABSENT, Or(s.ph[i] != BLOCKED, s.via[i] != 0),
                                                  Or(s.mem[i] == i + 1, spec.is_terminated(s, i)))))
        conds.append(Implies(s.mem[i] == i + 1, s.fl[i] == OPEN))
        conds.append(s.fl[i] != DRAINING)
    return And(*conds)


@lemma("A request waits via another flight only under prefix coordination, via an open flight whose prompt shares "
       "enough pages with its own, while it leads its own open flight and is blocked (or, lost, until its flight is "
       "settled).")
def waits_via_open_flights(spec: FlightSpec, s: View) -> Any:
    n = spec.num_requests
    conds = []
    for j in range(n):
        allowed = [f for f in range(n) if spec.can_wait_via(j, f)]
        conds.append(Or(s.via[j] == 0, *[s.via[j] == f + 1 for f in allowed]))
        blocked = And(s.ph[j] == BLOCKED, s.mem[j] == j + 1, s.fl[j] == OPEN)
        for f in allowed:
            conds.append(Implies(s.via[j] == f + 1, And(s.fl[f] == OPEN, Or(blocked, spec.is_orphaned(s, j)))))
    return And(*conds)


@lemma("Waits form no cycle: no requests wait via each other's flights round a loop (a lost leader's heir inherits "
       "its wait, which would close one if waits could already form one).", prefix_only=True)
def waits_are_acyclic(spec: FlightSpec, s: View) -> Any:
    n = spec.num_requests
    loops = []
    for size in range(2, n + 1):
        for ring in itertools.permutations(range(n), size):
            edges = list(zip(ring, ring[1:] + ring[:1]))
            if ring[0] == min(ring) and all(spec.can_wait_via(j, f) for j, f in edges):
                loops.append(And(*[s.via[j] == f + 1 for j, f in edges]))
    return Not(Or(*loops)) if loops else True


@lemma("At most one flight is pending (its leader terminated, its release or hand-over due): the engine settles "
       "it in the same call.")
def one_pending_flight(spec: FlightSpec, s: View) -> Any:
    if not spec.policy.single_flight:
        return True
    return Sum(If(spec.is_orphaned(s, f), 1, 0) for f in _per_request(spec)) <= 1


@lemma("Draining design: a member's flight is open or draining, of its own class; only an open flight's followers are blocked.",
       ("draining",))
def draining_members(spec: FlightSpec, s: View) -> Any:
    n = spec.num_requests
    conds = []
    for i in range(n):
        same = [f for f in range(n) if spec.cls(f) == spec.cls(i)]
        conds.append(Or(s.mem[i] == 0, *[And(s.mem[i] == f + 1, s.fl[f] != CLOSED) for f in same]))
        conds.append(Implies(spec.is_live(s, i), s.mem[i] != 0))
        conds.append(s.rel[i] == 0)
        waits_via = And(s.via[i] != 0, s.mem[i] == i + 1)
        conds.append(Implies(s.ph[i] == BLOCKED, Or(And(s.mem[i] != 0, s.mem[i] != i + 1), waits_via)))
        blocked_in = [And(s.mem[i] == f + 1, s.fl[f] == OPEN) for f in same if f != i]
        conds.append(Implies(s.ph[i] == BLOCKED, Or(waits_via, *blocked_in)))
        conds.append(Implies(s.fl[i] == OPEN, And(s.ph[i] != ABSENT, Or(s.mem[i] == i + 1, spec.is_terminated(s, i)))))
        # A draining flight still has a member (the last one to go closes it).
        conds.append(Implies(s.fl[i] == DRAINING, Or(*[s.mem[j] == i + 1 for j in range(n)])))
    return And(*conds)


@lemma("Without coordination there are no flights: no flight slot, membership or index entry is ever set.")
def uncoordinated_has_no_flights(spec: FlightSpec, s: View) -> Any:
    if spec.policy.single_flight:
        return True
    n = spec.num_requests
    return And(*[s.fl[f] == CLOSED for f in range(n)], *[s.mem[i] == 0 for i in range(n)],
               *[s.idx[c] == 0 for c in range(len(spec.layout.classes))])


def _strict(spec: FlightSpec, s: View, c: int) -> Any:
    """The runs single_prefill speaks of strictly for prompt class ``c``: no request of that class excuses a
    duplicate (spec/derived.py's ``excuses``; these lemmas are for exact single-flight, where a duplicate of
    a class's page is excused only by its own class)."""
    return Not(Or(*[spec.excuses(s, j) for j in _per_request(spec) if spec.cls(j) == c]))


def _all_cached(spec: FlightSpec, s: View, c: int) -> Any:
    return And(*[s.pg[k] != NOT_CACHED for k in spec.layout.class_pages[c]])


def is_released(spec: FlightSpec, s: View, j: int) -> Any:
    """``j`` was released from its flight: in the released set, or (draining design) a member of a
    draining flight."""
    n = spec.num_requests
    return Or(s.rel[j] == 1, *[And(s.mem[j] == f + 1, s.fl[f] == DRAINING) for f in range(n)])


def is_busy(spec: FlightSpec, s: View, j: int) -> Any:
    """``j`` may still compute a shareable page, or holds one it has not published: waiting while its
    pins do not cover its shareable pages, prefilling short of them, or holding private pages."""
    h = spec.shareable(j)
    return Or(
        And(s.ph[j] == WAITING, s.pubd[j] < h, Not(_all_cached(spec, s, spec.cls(j)))),
        And(s.ph[j] == PREFILL, s.done[j] < h),
        And(spec.is_live(s, j), s.pubd[j] < spec.published_upto(s, j)),
    )


@lemma("Single-flight, strict runs of an input: at most one request per input is busy computing or holding unpublished shareable pages.", on_trees=False)
def one_busy_per_input(spec: FlightSpec, s: View) -> Any:
    if not spec.policy.single_flight:
        return True
    conds = []
    for c in range(len(spec.layout.classes)):
        mine = [j for j in _per_request(spec) if spec.cls(j) == c]
        conds.append(Implies(_strict(spec, s, c), Sum(If(is_busy(spec, s, j), 1, 0) for j in mine) <= 1))
    return And(*conds)


@lemma("Single-flight, strict runs: the next page a prefilling request computes is not cached.", on_trees=False)
def next_page_uncached(spec: FlightSpec, s: View) -> Any:
    if not spec.policy.single_flight:
        return True
    conds = []
    for i in _per_request(spec):
        for p, k in enumerate(spec.pages_of(i)):
            conds.append(Implies(And(_strict(spec, s, spec.cls(i)), s.ph[i] == PREFILL, s.done[i] == p),
                                 s.pg[k] == NOT_CACHED))
    return And(*conds)


@lemma("Single-flight, strict runs: a released request holds every shareable page of its input (a follower pins "
       "them, then hits them; a leader released after its prefill has published them), so it never computes one.", on_trees=False)
def released_hold_all(spec: FlightSpec, s: View) -> Any:
    if not spec.policy.single_flight:
        return True
    conds = [Implies(And(_strict(spec, s, spec.cls(j)), is_released(spec, s, j), s.ph[j] >= WAITING, s.ph[j] <= DECODE),
                     s.pubd[j] == spec.shareable(j))
             for j in _per_request(spec)]
    return And(*conds)


@lemma("Single-flight: a waiting leader holds pins only after a hand-over; a fresh one holds nothing.", ("correct",))
def waiting_leader_pins(spec: FlightSpec, s: View) -> Any:
    if not spec.policy.single_flight or spec.policy.leader_loss == "promote":
        return True
    # Under prefix coordination a leader released from its wait via another flight pins the shared pages.
    return And(*[Implies(And(s.ph[j] == WAITING, s.mem[j] == j + 1), s.pubd[j] == 0) for j in _per_request(spec)
                 if not any(spec.can_wait_via(j, f) for f in _per_request(spec))])


LEMMAS: tuple[Lemma, ...] = (
    absent_is_blank, terminated_is_forgotten, progress_matches_phase, cache_prefix_closed,
    nothing_cached_without_caching, live_is_known, members_of_open_flights, waits_via_open_flights, waits_are_acyclic,
    one_pending_flight,
    draining_members, one_busy_per_input, next_page_uncached, released_hold_all,
    waiting_leader_pins, uncoordinated_has_no_flights,
)


def lemmas_for(spec: FlightSpec) -> list[Lemma]:
    """The lemmas that speak of ``spec``'s design, in a fixed order."""
    return [x for x in LEMMAS if x.applies(spec)]
