"""What the spec's guards, updates and properties read off a state: the derived facts of the correct design.

:class:`DerivedFacts` is the half of :class:`~flightcheck.spec.model.FlightSpec` that holds no action:
which pages a request has, whether it is live, known, lost or leading an open flight, whether a flight
waits for its settlement, what a release pins, and when a duplicated prefill is by design. Each is one
expression over a :class:`~flightcheck.spec.state.View`, so it runs on plain values (the explorer) and
on z3 terms (the proofs) alike; variants override single facts as they override single actions.

For example::

    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> s = spec.view(spec.initial())
    >>> spec.is_live(s, 0), spec.is_known(s, 0), list(spec.pages_of(1))
    (False, False, [0, 1])
"""

from __future__ import annotations

from typing import Any

from flightcheck.spec import pool
from flightcheck.spec.expr import And, If, Min, Not, Or, Sum
from flightcheck.spec.state import ABORTED, BLOCKED, DECODE, FINISHED, OPEN, View


class DerivedFacts:
    """Facts about a state that every action's guard and update, and every property, may ask."""

    def cls(self, i: int) -> int:
        """Class slot of request ``i``."""
        return self.layout.req_class[i]

    def shareable(self, i: int) -> int:
        """Shareable pages of request ``i``."""
        return self.layout.num_shareable[self.cls(i)]

    def pages_of(self, i: int) -> list[int]:
        """Page slots of request ``i``'s shareable pages, in order (shared with other classes where the
        prompt tree says so)."""
        return self.layout.class_pages[self.cls(i)]

    def num_shared(self, i: int, j: int) -> int:
        """How many shareable pages the prompts of requests ``i`` and ``j`` have in common, from the front."""
        return self.layout.shared[self.cls(i)][self.cls(j)]

    def first_of(self, s: View, ranked: list[tuple[int, int]], ok: Any) -> Any:
        """The candidate chosen among ``ranked`` (``(rank, x)`` pairs, the lowest rank best) for which ``ok(x)``
        holds (``x + 1``, or 0 for none): the best rank, and among equals the earliest arrived (``seq``, in
        a scenario that can meet such a tie) or else the lowest index, which is the same thing wherever
        no two candidates of one rank can both hold."""
        choice: Any = 0
        if not self.layout.has_via_ties:
            for _rank, x in reversed(sorted(ranked)):
                choice = If(ok(x), x + 1, choice)
            return choice
        levels: dict[int, list[int]] = {}
        for rank, x in sorted(ranked):
            levels.setdefault(rank, []).append(x)
        for rank in sorted(levels, reverse=True):
            tied = levels[rank]
            for x in reversed(tied):
                earliest = And(ok(x), *[Or(Not(ok(y)), s.seq[x] < s.seq[y]) for y in tied if y != x])
                choice = If(earliest, x + 1, choice)
        return choice

    def can_wait_via(self, j: int, f: int) -> bool:
        """Under prefix coordination, ``j`` could wait via a flight led by ``f``: another prompt with at
        least ``min_shared_pages`` shareable pages in common with ``j``'s (static: the scenario decides)."""
        return (self.policy.prefix_flights and self.cls(f) != self.cls(j)
                and self.num_shared(j, f) >= self.policy.min_shared_pages)

    def flights_for(self, j: int) -> list[int]:
        """The flight slots ``j`` may be a member of, or wait via: the same prompt's, or a sharing one's."""
        return [f for f in range(self.num_requests)
                if f != j and (self.cls(f) == self.cls(j) or self.can_wait_via(j, f))]

    def is_live(self, s: View, i: int) -> Any:
        """Request ``i`` has arrived and not terminated."""
        return And(s.ph[i] >= BLOCKED, s.ph[i] <= DECODE)

    def is_terminated(self, s: View, i: int) -> Any:
        """Request ``i`` finished, was aborted or failed."""
        return s.ph[i] >= FINISHED

    def is_lost(self, s: View, i: int) -> Any:
        """Request ``i`` ended without finishing (aborted or failed)."""
        return s.ph[i] >= ABORTED

    def is_quiescent(self, s: View) -> Any:
        """Nothing in flight: no live request and no engine step pending (a release may trail a finish)."""
        idle = And(*[Not(self.is_live(s, i)) for i in range(self.num_requests)])
        if idle is False:
            return False  # the explorer's common case, decided without evaluating every guard
        pending = [getattr(self, "g_" + a.name)(s, a.arg) for a in self.actions if self.is_progress(a)]
        return And(idle, Not(Or(*pending)))

    def num_running(self, s: View) -> Any:
        """Requests in prefill or decode."""
        return Sum(If(pool.is_running(s, j), 1, 0) for j in range(self.num_requests))

    def is_known(self, s: View, i: int) -> Any:
        """The coordinator knows ID ``i``: a member of an open flight, or released and not terminated."""
        if i >= self.num_requests:
            return False
        return Or(s.mem[i] != 0, s.rel[i] == 1)

    def accepts(self, s: View, i: int) -> Any:
        """The coordinator's verdict on a termination of ID ``i``: accept only known IDs."""
        return self.is_known(s, i)

    def published_upto(self, s: View, i: int) -> Any:
        """How many of ``i``'s shareable pages it has computed (or recovered): what it can publish."""
        if not self.policy.prefix_caching:
            return 0
        return Min(s.done[i], self.shareable(i))

    def leads_open_flight(self, s: View, i: int) -> Any:
        """``i`` leads an open flight and is still its live leader."""
        return And(s.fl[i] == OPEN, s.mem[i] == i + 1)

    def is_orphaned(self, s: View, f: int) -> Any:
        """Flight ``f`` is open but its leader has terminated: its release or hand-over is due now."""
        return And(s.fl[f] == OPEN, self.is_terminated(s, f))

    def calm(self, s: View) -> Any:
        """No flight waits for its release or hand-over (the engine does that in the leader's own call)."""
        if not self.policy.single_flight:
            return True
        known = s.__dict__.get("_calm")  # every guard asks; a view answers once
        if known is None:
            known = s.__dict__["_calm"] = Not(Or(*[self.is_orphaned(s, f) for f in range(self.num_requests)]))
        return known

    def holds_pages(self, s: View, i: int) -> Any:
        """``i`` holds references on its first ``pubd`` pages: it is live, or a terminated leader whose
        flight is still pending."""
        return Or(self.is_live(s, i), And(self.is_terminated(s, i), s.fl[i] == OPEN))

    def at_release_point(self, s: View, f: int) -> Any:
        """The flight's leader reached the release point, or terminated."""
        terminated = self.is_terminated(s, f)
        if self.policy.release == "after-prefill":
            published = And(s.ph[f] == DECODE, s.pubd[f] >= self.shareable(f))
            return Or(terminated, published)
        return terminated

    def waiting_followers(self, s: View, f: int) -> list[Any]:
        """For each request that could be promoted in flight ``f``: it is a blocked member of it."""
        return [And(s.mem[j] == f + 1, s.ph[j] == BLOCKED) for j in range(self.num_requests)
                if j != f and self.cls(j) == self.cls(f)]

    def releases_everyone(self, s: View, f: int) -> Any:
        """A terminated leader's flight is released (not handed on): it finished, or the policy is
        ``release-all``, or no follower is left to promote."""
        if self.policy.leader_loss != "promote":
            return True
        return Or(s.ph[f] == FINISHED, Not(Or(*self.waiting_followers(s, f))))

    def excuses(self, s: View, j: int) -> Any:
        """Request ``j`` makes a duplicated prefill of the pages it is coordinated on a duplicate by design:
        its wait expired (it computes what its leader has not), or (release-all) it was lost, so the
        followers released from its flight compute what it had not published. Both are kept after ``j``
        terminates: the copies it caused may still be computed or cached."""
        if self.policy.leader_loss == "release-all":
            return Or(s.exp[j] == 1, self.is_lost(s, j))
        return s.exp[j] == 1

    def duplicates_excused(self, s: View) -> Any:
        """Some request excuses a duplicate somewhere (:meth:`excuses`): the runs ``single_prefill``'s
        lemmas do not speak of strictly."""
        return Or(*[self.excuses(s, j) for j in range(self.num_requests)])
