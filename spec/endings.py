"""How flights and requests end: a flight's release and hand-over, and a request's abort, failure, bogus
termination notice and expiry.

:class:`FlightEndings` holds these actions' guards and updates for :class:`~flightcheck.spec.model.FlightSpec`
(the rest of the actions, arrival to eviction, stay in :mod:`flightcheck.spec.model`). They are where the
design's history happened (pinned release, the leader-loss policy, expiry, termination validation), so
most variants override one of them. Written in :mod:`flightcheck.spec.expr` like every action: plain
values for the explorer, z3 terms for the proofs.

For example::

    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2-abort"])
    >>> s = spec.view(spec.initial())
    >>> spec.g_release(s, 0), spec.g_notify(s, 2), spec.accepts(s, 2)
    (False, True, False)
"""

from __future__ import annotations

from typing import Any

from flightcheck.spec import pool
from flightcheck.spec.expr import And, If, Min, Not, Or, Sum
from flightcheck.spec.state import (
    ABORTED, BLOCKED, CLOSED, FAILED, FINISHED, OPEN, READY, TERM_BOGUS_ACCEPTED, TERM_LEGIT_REJECTED, WAITING, Edit,
    View,
)


class FlightEndings:
    """Release and promotion of flights; abort, failure, notification and expiry of requests."""

    # ------------------------------------------------------------------ release, promote
    def g_release(self, s: View, f: int) -> Any:
        if not self.policy.single_flight:
            return False
        return And(s.fl[f] == OPEN, self.release_guard(s, f))

    def release_guard(self, s: View, f: int) -> Any:
        """When the engine releases flight ``f`` (variants weaken it): at the release point, at once
        after the leader's termination (unless the flight is handed on), never while another is pending."""
        pending = If(self.is_terminated(s, f), self.releases_everyone(s, f), self.calm(s))
        return And(self.at_release_point(s, f), pending)

    def pins_at_release(self, s: View, f: int) -> Any:
        """How many pages each released follower pins: all its leader holds."""
        return s.pubd[f]

    def released_early(self, s: View, f: int) -> Any:
        """Releasing flight ``f`` now is early, read from what its followers would find, never from the
        release guard (a wrong guard must not excuse itself): on completion, the leader has not
        terminated; after prefill, the leader is live and some page of its prompt is not published (ready
        in the cache). A terminated leader's flight may go at once (a lost one's pages are recomputed)."""
        live = Not(self.is_terminated(s, f))
        if self.policy.release == "after-prefill":
            return And(live, Or(*[s.pg[k] != READY for k in self.pages_of(f)]))
        return live

    def u_release(self, s: View, f: int) -> Any:
        e = s.edit()
        e.set("g_early", If(self.released_early(s, f), 1, s.g_early))
        e.fl[f] = CLOSED
        e.idx[self.cls(f)] = 0
        pins = self.pins_at_release(s, f)
        lost = self.is_terminated(s, f)
        gains = [0] * len(self.layout.page_slots)
        heir = self.waiter_heir(s, f) if self.hands_on_waiters() else 0
        for j in range(self.num_requests):
            member = s.mem[j] == f + 1
            blocked = And(member, s.ph[j] == BLOCKED)
            if j != f and self.cls(j) == self.cls(f):
                freed, mine = blocked, pins
            elif self.can_wait_via(j, f):
                # A request waiting via this flight pins what the leader holds of the pages they share; a
                # lost leader's waiters are handed on instead, when the design does (hand_on_waiters).
                waiting = And(s.via[j] == f + 1, s.ph[j] == BLOCKED)
                stays, rewait = self.rewait_at_release(s, f, j, waiting, self.is_lost(s, f), heir)
                freed, mine = And(waiting, Not(stays)), self.waiter_pins(s, f, j, pins)
                e.via[j] = If(freed, 0, If(stays, rewait, s.via[j]))
            else:
                freed, mine = False, 0
            if freed is not False:
                e.ph[j] = If(freed, WAITING, s.ph[j])
                e.pubd[j] = If(freed, mine, s.pubd[j])
                for p, k in enumerate(self.pages_of(j)):
                    gains[k] = gains[k] + If(And(freed, p < mine), 1, 0)
            self.release_member(s, e, f, j, member)
        for k in range(len(gains)):
            e.ref[k] = s.ref[k] + gains[k]
        for p, k in enumerate(self.pages_of(f)):
            e.ref[k] = e.ref[k] - If(And(lost, p < s.pubd[f]), 1, 0)
        e.pubd[f] = If(lost, 0, s.pubd[f])
        e.via[f] = 0
        return e.build()

    def hands_on_waiters(self) -> bool:
        """Under prefix coordination with the ``promote`` policy, a lost leader's flight released with
        nobody to promote hands its waiters on: the waiter whose prompt shares the most pages with it
        (the earliest on a tie) takes over, and the others wait via that one's flight. Freeing them all
        at once would have two prompts compute the pages they share (the design before: variant
        ``waiters-all-freed``)."""
        return self.policy.prefix_flights and self.policy.leader_loss == "promote"

    def waiter_heir(self, s: View, f: int) -> Any:
        """The waiter of flight ``f`` that takes over its waiters (``j + 1``, or 0 for none): the one whose
        prompt shares the most pages with ``f``'s, the earliest arrived on a tie (as a request picks the
        flight it waits via)."""
        ranked = [(-self.num_shared(j, f), j) for j in range(self.num_requests) if self.can_wait_via(j, f)]
        return self.first_of(s, ranked, lambda j: And(s.via[j] == f + 1, s.ph[j] == BLOCKED))

    def rewait_at_release(self, s: View, f: int, j: int, waiting: Any, lost: Any, heir: Any) -> tuple[Any, Any]:
        """Whether waiter ``j`` of flight ``f`` keeps waiting when ``f`` is released, and via what (``g + 1``):
        handed on (:meth:`hands_on_waiters`), the heir (:meth:`waiter_heir`) inherits the flight ``f`` itself
        waited via (if any) and every other waiter waits via the heir's flight."""
        if not self.hands_on_waiters():
            return False, 0
        is_heir = heir == j + 1
        stays = And(waiting, lost, Or(Not(is_heir), s.via[f] != 0))
        return stays, If(is_heir, s.via[f], heir)

    def waiter_pins(self, s: View, f: int, j: int, pins: Any) -> Any:
        """How many pages a request waiting via flight ``f`` pins at its release: what the leader holds of
        the pages their prompts share."""
        return Min(pins, self.num_shared(j, f))

    def release_member(self, s: View, e: Edit, f: int, j: int, member: Any) -> None:
        """What the coordinator keeps of a released member: its ID, in the released set."""
        e.mem[j] = If(member, 0, s.mem[j])
        e.rel[j] = If(member, 1, s.rel[j])

    def g_promote(self, s: View, j: int) -> Any:
        if not (self.policy.single_flight and self.policy.leader_loss == "promote"):
            return False
        lost = [And(s.mem[j] == f + 1, self.is_orphaned(s, f), s.ph[f] != FINISHED)
                for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j)]
        return And(s.ph[j] == BLOCKED, Or(*lost))

    def u_promote(self, s: View, j: int) -> Any:
        e = s.edit()
        flights = [f for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j)]
        held = Sum(If(s.mem[j] == f + 1, s.pubd[f], 0) for f in flights)
        inherited = Sum(If(s.mem[j] == f + 1, s.via[f], 0) for f in flights)  # what the old leader waited via
        for f in flights:
            e.fl[f] = If(s.mem[j] == f + 1, CLOSED, s.fl[f])
            e.pubd[f] = If(s.mem[j] == f + 1, 0, s.pubd[f])
            e.via[f] = If(s.mem[j] == f + 1, 0, s.via[f])
        for m in range(self.num_requests):
            if m != j:
                e.mem[m] = If(And(s.mem[m] != 0, s.mem[m] == s.mem[j]), j + 1, s.mem[m])
            if self.can_wait_via(m, j):  # who waited via the old leader's flight waits via the new one's
                e.via[m] = If(And(s.via[m] != 0, s.via[m] == s.mem[j]), j + 1, s.via[m])
        e.mem[j] = j + 1
        e.fl[j] = OPEN
        e.idx[self.cls(j)] = j + 1
        e.ph[j] = WAITING
        if self.policy.prefix_flights:
            e.ph[j] = If(inherited != 0, BLOCKED, WAITING)
            e.via[j] = inherited
        e.pubd[j] = held  # the old leader's references are the new leader's pins: no count changes
        return e.build()

    # ------------------------------------------------------------------ abort, fail, notify, expire
    def g_abort(self, s: View, i: int) -> Any:
        return And(self.is_live(s, i), self.calm(s))

    def u_abort(self, s: View, i: int) -> Any:
        return self._lose(s, i, ABORTED)

    def g_fail(self, s: View, i: int) -> Any:
        return And(pool.is_running(s, i), self.calm(s))

    def u_fail(self, s: View, i: int) -> Any:
        return self._lose(s, i, FAILED)

    def _lose(self, s: View, i: int, phase: int) -> Any:
        """A live request ends without finishing: its private pages are freed, its references dropped
        (a flight leader's once its flight is released or handed on)."""
        e = s.edit()
        leading = self.leads_open_flight(s, i)
        for p, k in enumerate(self.pages_of(i)):
            e.ref[k] = s.ref[k] - If(And(Not(leading), p < s.pubd[i]), 1, 0)
        self._terminate(s, e, i, phase, leading)
        return e.build()

    def g_notify(self, s: View, i: int) -> Any:
        if i >= self.num_requests:
            return self.calm(s)
        return And(Not(self.is_live(s, i)), self.calm(s))

    def u_notify(self, s: View, i: int) -> Any:
        accepted = self.accepts(s, i)
        e = s.edit()
        e.set("g_term", If(And(accepted, s.g_term == 0), TERM_BOGUS_ACCEPTED, s.g_term))
        if i < self.num_requests:
            self.forget(s, e, i, accepted)
        return e.build()

    def g_expire(self, s: View, j: int) -> Any:
        return And(s.ph[j] == BLOCKED, self.calm(s))

    def u_expire(self, s: View, j: int) -> Any:
        e = s.edit()
        held = Sum(If(s.mem[j] == f + 1, s.pubd[f], 0)
                   for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j))
        vias = [f for f in range(self.num_requests) if self.can_wait_via(j, f)]
        held = held + Sum(If(s.via[j] == f + 1, Min(s.pubd[f], self.num_shared(j, f)), 0) for f in vias)
        e.ph[j] = WAITING
        e.pubd[j] = held
        for p, k in enumerate(self.pages_of(j)):
            e.ref[k] = s.ref[k] + If(p < held, 1, 0)
        e.exp[j] = 1
        if vias:
            # A leader waiting via another flight stops waiting, and still leads its own.
            waiting_via = s.via[j] != 0
            e.via[j] = 0
            self.expire_member(s, e, j)
            e.mem[j] = If(waiting_via, s.mem[j], e.mem[j])
            e.rel[j] = If(waiting_via, s.rel[j], e.rel[j])
        else:
            self.expire_member(s, e, j)
        return e.build()

    def expire_member(self, s: View, e: Edit, j: int) -> None:
        """An expired follower leaves its flight for the released set, so its termination is still known."""
        e.mem[j] = 0
        e.rel[j] = 1

    def _terminate(self, s: View, e: Edit, i: int, phase: int, keep_pages: Any = False) -> None:
        """A live request ends: the coordinator must accept its termination exactly once."""
        accepted = self.accepts(s, i)
        e.set("g_term", If(And(Not(accepted), s.g_term == 0), TERM_LEGIT_REJECTED, s.g_term))
        e.ph[i] = phase
        # A terminated request's history no longer matters (forgetting it keeps the graph small), but a
        # flight leader's references stay until its flight is released or handed on.
        e.hit[i] = 0
        e.done[i] = 0
        e.pubd[i] = If(keep_pages, e.pubd[i], 0)
        e.via[i] = If(keep_pages, s.via[i], 0)  # a lost leader's wait passes to the follower it promotes
        e.dec[i] = 0
        self.forget(s, e, i, accepted)

    def forget(self, s: View, e: Edit, i: int, accepted: Any) -> None:
        """An accepted termination removes ``i`` from its flight or from the released set."""
        e.mem[i] = If(accepted, 0, s.mem[i])
        e.rel[i] = If(accepted, 0, s.rel[i])
