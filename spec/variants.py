"""The design's history, kept as named variants of the correct spec.

Each variant is a small change to :class:`~flightcheck.spec.model.FlightSpec`: one overridden method.
Two are correct (the final design and the ``FlightState`` design it was refactored from); the others
are the mistakes the seed's story walks through, each with the property it must violate.

For example::

    >>> [v.name for v in VARIANTS.values() if v.expected_violation is None]
    ['correct', 'draining']
    >>> VARIANTS["forget-at-release"].expected_violation
    'termination_validated'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flightcheck.spec import pool
from flightcheck.spec.expr import And, If, Not, Or, Sum
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import Policy, Scenario
from flightcheck.spec.state import BLOCKED, CLOSED, DECODE, DRAINING, FINISHED, NOT_CACHED, OPEN, READY, RESERVED, WAITING, Edit, View


class DrainingSpec(FlightSpec):
    """``FlightState { Active, Draining { leader: Option } }``: a released flight stays, draining, and
    keeps its members until each terminates; the last one to go deletes it. Correct, and kept so that
    the refactor to a separate released set can be proved to preserve behaviour."""

    variant_name = "draining"

    def release_member(self, s: View, e: Edit, f: int, j: int, member: Any) -> None:
        # Members stay in the (now draining) flight; nothing moves to a released set.
        pass

    def u_release(self, s: View, f: int) -> Any:
        state = super().u_release(s, f)
        e = self.view(state).edit()
        anyone = Or(*[s.mem[j] == f + 1 for j in range(self.num_requests)])
        e.fl[f] = If(anyone, DRAINING, CLOSED)
        return e.build()

    def forget(self, s: View, e: Edit, i: int, accepted: Any) -> None:
        super().forget(s, e, i, accepted)
        for g in range(self.num_requests):
            others = [s.mem[j] == g + 1 for j in range(self.num_requests) if j != i]
            last = And(accepted, s.mem[i] == g + 1, s.fl[g] == DRAINING, Not(Or(*others)))
            e.fl[g] = If(last, CLOSED, e.fl[g])


class ForgetAtReleaseSpec(FlightSpec):
    """The first implementation: the flight record is deleted at release and nothing is tracked, so a
    released follower's legitimate termination is rejected as unknown."""

    variant_name = "forget-at-release"

    def release_member(self, s: View, e: Edit, f: int, j: int, member: Any) -> None:
        e.mem[j] = If(member, 0, s.mem[j])


class NoUnknownCheckSpec(FlightSpec):
    """The AI's proposed fix for the above: drop the unknown-ID check, which also accepts terminations
    carrying genuinely invalid IDs."""

    variant_name = "no-unknown-check"

    def accepts(self, s: View, i: int) -> Any:
        return True


class InsertOnMissSpec(FlightSpec):
    """Pages are published when allocated rather than after their KV is computed: a concurrent lookup
    can hit a page whose contents are not written yet."""

    variant_name = "insert-on-miss"

    def admit_extra(self, s: View, e: Edit, i: int, h: Any) -> None:
        for p, k in enumerate(self.pages_of(i)):
            miss = p >= h
            e.pg[k] = If(And(miss, s.pg[k] == NOT_CACHED), RESERVED, e.pg[k])
            e.ref[k] = e.ref[k] + If(miss, 1, 0)
        e.pubd[i] = self.shareable(i)

    def prefill_extra(self, s: View, e: Edit, i: int, new_done: Any) -> None:
        for p, k in enumerate(self.pages_of(i)):
            computed = And(s.done[i] <= p, p < new_done, s.pg[k] == RESERVED)
            e.pg[k] = If(computed, READY, e.pg[k])


class EarlyReleaseSpec(FlightSpec):
    """Followers released as soon as the leader's prefill completes, before its pages are published."""

    variant_name = "early-release"

    def release_guard(self, s: View, f: int) -> Any:
        if self.policy.release == "after-prefill":
            return Or(self.is_terminated(s, f), s.ph[f] == DECODE)
        return self.is_terminated(s, f)


class StrandedFollowersSpec(FlightSpec):
    """A leader that aborts before its release point leaves the flight waiting for a leader that is
    gone: its followers are blocked forever."""

    variant_name = "stranded-followers"

    def release_guard(self, s: View, f: int) -> Any:
        finished = s.ph[f] == FINISHED
        if self.policy.release == "after-prefill":
            reached = Or(finished, And(s.ph[f] == DECODE, s.pubd[f] >= self.shareable(f)))
        else:
            reached = finished
        return And(reached, If(self.is_terminated(s, f), self.releases_everyone(s, f), self.calm(s)))


class UnpinnedReleaseSpec(FlightSpec):
    """The design before pinned release: released followers hold nothing until they are admitted, so
    the cache can evict the leader's pages in between and several followers prefill them again."""

    variant_name = "unpinned-release"

    def pins_at_release(self, s: View, f: int) -> Any:
        return 0


class PromoteReleasedSpec(FlightSpec):
    """Promotion picks any live request of the input, a released one included: the coordinator then
    knows it twice (in the released set and as a flight's leader)."""

    variant_name = "promote-released"

    def g_promote(self, s: View, j: int) -> Any:
        if not (self.policy.single_flight and self.policy.leader_loss == "promote"):
            return False
        lost = [And(self.is_orphaned(s, f), s.ph[f] != FINISHED)
                for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j)]
        candidate = Or(s.ph[j] == BLOCKED, And(s.rel[j] == 1, self.is_live(s, j)))
        return And(candidate, Or(*lost))

    def u_promote(self, s: View, j: int) -> Any:
        e = s.edit()
        flights = [f for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j)]
        for f in flights:
            orphan = And(self.is_orphaned(s, f), s.ph[f] != FINISHED)
            e.fl[f] = If(orphan, CLOSED, s.fl[f])
            e.pubd[f] = If(orphan, 0, s.pubd[f])
            for m in range(self.num_requests):
                if m != j:
                    e.mem[m] = If(And(orphan, s.mem[m] == f + 1), j + 1, e.mem[m])
        e.mem[j] = j + 1
        e.fl[j] = OPEN
        e.idx[self.cls(j)] = j + 1
        e.ph[j] = If(s.ph[j] == BLOCKED, WAITING, s.ph[j])
        return e.build()


class PromoteLosesFollowersSpec(FlightSpec):
    """Promotion renames the flight for the promoted follower only: the others still follow the old,
    closed flight, blocked with nobody left to release them."""

    variant_name = "promote-loses-followers"

    def u_promote(self, s: View, j: int) -> Any:
        state = super().u_promote(s, j)
        e = self.view(state).edit()
        for m in range(self.num_requests):
            if m != j:
                e.mem[m] = s.mem[m]
        return e.build()


class ExpireForgetsSpec(FlightSpec):
    """An expired follower leaves its flight but is not put in the released set: its later, legitimate
    termination is rejected as unknown."""

    variant_name = "expire-forgets"

    def expire_member(self, s: View, e: Edit, j: int) -> None:
        e.mem[j] = 0


class AdmitIgnoresReservationsSpec(FlightSpec):
    """Admission checks the free and evictable pages but forgets what running requests reserved: a
    running request can then find nothing to allocate."""

    variant_name = "admit-ignores-reservations"

    def fits(self, s: View, i: int) -> Any:
        if not self.scenario.has_pool:
            return True
        h = self.num_hits(s, i)
        unreferenced = Sum(And(s.pubd[i] <= p, p < h, s.ref[k] == 0) for p, k in enumerate(self.pages_of(i)))
        room = pool.free_pages(self, s) + pool.num_evictable(self, s) - unreferenced
        return room >= self.scenario.requests[i].num_lifetime_pages - h


class EvictReferencedSpec(FlightSpec):
    """Eviction takes any cached leaf, referenced or not: a running request loses a page it reads."""

    variant_name = "evict-referenced"

    def g_evict(self, s: View, k: int) -> Any:
        leaf = And(*[s.pg[child] == NOT_CACHED for child in self.layout.page_children[k]])
        return And(s.pg[k] == READY, leaf, self.calm(s))


class ViaUnsharedSpec(FlightSpec):
    """Prefix coordination that looks only at whether another prompt's flight is open, not at how many
    pages the prompts share: a request waits on a flight that will not compute the pages it needs."""

    variant_name = "via-unshared"

    def via_choice(self, s: View, i: int) -> Any:
        choice: Any = 0
        for f in reversed(range(self.num_requests)):
            if self.policy.prefix_flights and self.cls(f) != self.cls(i):
                choice = If(s.fl[f] == OPEN, f + 1, choice)
        return choice


class SiblingUnderParentKeySpec(FlightSpec):
    """A child prompt's first page of its own is published under the key of the page at the same
    position in its parent's prompt (the key chain is taken from the wrong branch): the parent's page
    becomes visible with a sibling's KV."""

    variant_name = "sibling-under-parent-key"

    def _publish_into(self, s: View, e: Edit, i: int) -> None:
        super()._publish_into(s, e, i)
        parent = self.scenario.parent_of(self.layout.classes[self.cls(i)])
        if parent is None:
            return
        pc = self.layout.class_slot[parent[0]]
        n = self.layout.shared[self.cls(i)][pc]
        if n >= min(len(self.pages_of(i)), len(self.layout.class_pages[pc])):
            return
        own, wrong = self.pages_of(i)[n], self.layout.class_pages[pc][n]
        newly = And(s.pubd[i] <= n, n < self.published_upto(s, i))
        # The page goes into the cache under the parent's key; its own key stays uncached.
        e.pg[wrong] = If(And(newly, s.pg[wrong] == NOT_CACHED), RESERVED, e.pg[wrong])
        e.ref[wrong] = e.ref[wrong] + If(newly, 1, 0)
        e.pg[own] = If(newly, s.pg[own], e.pg[own])
        e.ref[own] = If(newly, s.ref[own], e.ref[own])


class WaiterPinsUnpublishedSpec(FlightSpec):
    """A request waiting via another prompt's flight pins every page the two prompts share when the
    flight is released, whether or not its leader got that far (a lost leader did not): it holds
    references on pages that are not cached."""

    variant_name = "waiter-pins-unpublished"

    def waiter_pins(self, s: View, f: int, j: int, pins: Any) -> Any:
        return self.num_shared(j, f)


class WaitersAllFreedSpec(FlightSpec):
    """The design before the hand-on of waiters: a lost leader's flight released with nobody to promote
    frees every request waiting via it at once, so two other prompts sharing its pages both compute
    them (under ``promote``, which excuses no lost leader, a duplicate of the design's)."""

    variant_name = "waiters-all-freed"

    def hands_on_waiters(self) -> bool:
        return False


@dataclass(frozen=True)
class Variant:
    """A named design variant: its spec class, the property it must violate (None if correct), its story,
    and the default scenario (and policy changes) on which its story shows."""

    name: str
    spec_class: type
    expected_violation: str | None
    story: str
    demo: str = "burst2"
    demo_policy: tuple[tuple[str, str], ...] = ()

    def build(self, scenario: Scenario, policy: Policy | None = None) -> FlightSpec:
        """The variant's spec over a scenario."""
        return self.spec_class(scenario, policy)

    def demo_scenario(self) -> Scenario:
        """The smallest default scenario (and policy) that shows the variant's story: the one every
        command runs the variant on unless told otherwise."""
        from flightcheck.spec.scenario import SCENARIOS
        return SCENARIOS[self.demo].with_policy(**dict(self.demo_policy))

    def demo_spec(self) -> FlightSpec:
        """The variant over its :meth:`demo_scenario`."""
        return self.build(self.demo_scenario())


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("correct", FlightSpec, None,
            "The seed's final design: flights, an index by input, and a separate set of released IDs."),
    Variant("draining", DrainingSpec, None,
            "FlightState { Active, Draining { leader: Option } }: correct, kept for the refactor proof.",
            "burst2-abort"),
    Variant("forget-at-release", ForgetAtReleaseSpec, "termination_validated",
            "The flight is deleted at release with nothing tracked: legitimate terminations are rejected."),
    Variant("no-unknown-check", NoUnknownCheckSpec, "termination_validated",
            "The unknown-ID check is removed: terminations of invalid IDs are accepted.", "burst2-abort"),
    Variant("insert-on-miss", InsertOnMissSpec, "visible_after_compute",
            "Pages are published when allocated, before their KV is computed."),
    Variant("early-release", EarlyReleaseSpec, "release_after_publication",
            "Followers are released when the leader's prefill ends, before its pages are published.",
            "burst2", (("publication", "on-completion"),)),
    Variant("stranded-followers", StrandedFollowersSpec, "no_deadlock",
            "A leader that aborts before publishing leaves its followers blocked forever.", "burst2-abort"),
    Variant("unpinned-release", UnpinnedReleaseSpec, "single_prefill",
            "Released followers pin nothing: under eviction the leader's pages go before they are admitted.",
            "burst3-evict"),
    Variant("promote-released", PromoteReleasedSpec, "known_once",
            "A lost leader's flight is handed to a request that was already released.", "burst3-abort",
            (("leader_loss", "promote"),)),
    Variant("promote-loses-followers", PromoteLosesFollowersSpec, "blocked_in_open_flight",
            "Promotion moves only the promoted follower: the others follow a closed flight.", "burst3-abort",
            (("leader_loss", "promote"),)),
    Variant("expire-forgets", ExpireForgetsSpec, "termination_validated",
            "An expired follower is in no flight and not in the released set: its termination is rejected.",
            "burst3-expire"),
    Variant("admit-ignores-reservations", AdmitIgnoresReservationsSpec, "admission_has_room",
            "Admission forgets the running requests' reservations.", "mixed3-pool"),
    Variant("evict-referenced", EvictReferencedSpec, "in_use_never_evicted",
            "Eviction takes referenced pages too.", "burst2-evict"),
    Variant("via-unshared", ViaUnsharedSpec, "waits_for_shared_pages",
            "Prefix coordination waits on any other prompt's open flight, however few pages they share.",
            "doc2", (("min_shared_pages", 2),)),
    Variant("sibling-under-parent-key", SiblingUnderParentKeySpec, "visible_after_compute",
            "A child prompt's own page is published under its parent's key: a sibling's KV becomes visible.",
            "doc2"),
    Variant("waiter-pins-unpublished", WaiterPinsUnpublishedSpec, "in_use_never_evicted",
            "A request waiting via a lost leader's flight pins shared pages the leader never published.",
            "doc3-abort"),
    Variant("waiters-all-freed", WaitersAllFreedSpec, "single_prefill",
            "A lost leader's flight frees all its waiters at once: two other prompts both compute the pages "
            "they share with it.", "tri-abort"),
)}


def get_variant(name: str) -> Variant:
    """The variant called ``name``, or a ValueError listing the known names."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; known variants: {', '.join(VARIANTS)}") from None
