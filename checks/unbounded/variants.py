"""The design-history variants in the relational model: one small override each, keyed by variant name.

Each class mirrors the override of the same name in :mod:`flightcheck.spec.variants` (the drift check
runs each against its finite twin). :data:`NOT_MODELLED` gives, for every other variant, why the
relational model does not carry it.

For example::

    >>> sorted(MODELLED)[:3]
    ['correct', 'early-release', 'evict-referenced']
    >>> NOT_MODELLED["admit-ignores-reservations"].startswith("the page pool")
    True
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.unbounded.relational import RelModel
from flightcheck.checks.unbounded.state import RelState
from flightcheck.spec.expr import And, If, Not, Or
from flightcheck.spec.state import BLOCKED, DECODE, FINISHED, NOT_CACHED, READY, RESERVED, WAITING
from flightcheck.spec.variants import VARIANTS, Variant


class ForgetAtRelease(RelModel):
    """The flight is deleted at release and nothing is tracked."""

    variant_name = "forget-at-release"

    def release_members(self, s: RelState, f: Any) -> dict[str, Any]:
        return dict(mem=lambda j, g: And(Not(s.mem(j, f)), s.mem(j, g)))


class NoUnknownCheck(RelModel):
    """Every termination is accepted, an unknown ID's too."""

    variant_name = "no-unknown-check"

    def accepts(self, s: RelState, x: Any) -> Any:
        return True

    def accepts_unknown(self, s: RelState) -> Any:
        return True


class InsertOnMiss(RelModel):
    """Pages are published (reserved in the cache) when allocated, before their KV is computed."""

    variant_name = "insert-on-miss"

    def admit_extra(self, s: RelState, t: RelState, i: Any) -> RelState:
        miss = lambda k: And(self.on_path(i, k), Not(self.hit(s, i, k)))  # noqa: E731
        return t.update(pg=lambda k: If(And(miss(k), s.pg(k) == NOT_CACHED), RESERVED, t.pg(k)),
                        hold=lambda x, k: If(x == i, self.on_path(i, k), t.hold(x, k)))

    def prefill_extra(self, s: RelState, t: RelState, i: Any) -> RelState:
        computed = lambda k: And(self.next_page(s, i, k), s.pg(k) == RESERVED)  # noqa: E731
        return t.update(pg=lambda k: If(computed(k), READY, t.pg(k)))


class EarlyRelease(RelModel):
    """Followers released as soon as the leader's prefill completes, before its pages are published."""

    variant_name = "early-release"

    def release_guard(self, s: RelState, f: Any) -> Any:
        if self.config.release == "after-prefill":
            return Or(self.terminated(s, f), s.ph(f) == DECODE)
        return self.terminated(s, f)


class UnpinnedRelease(RelModel):
    """Released followers pin nothing."""

    variant_name = "unpinned-release"

    def pins(self, s: RelState, f: Any, k: Any) -> Any:
        return False


class PromoteReleased(RelModel):
    """Promotion picks any live request of the input, a released one included."""

    variant_name = "promote-released"

    def g_promote(self, s: RelState, j: Any) -> Any:
        if not (self.config.single_flight and self.config.leader_loss == "promote"):
            return False
        lost = lambda f: And(f != j, self.sig.cls(f) == self.sig.cls(j), self.orphaned(s, f),  # noqa: E731
                             s.ph(f) != FINISHED)
        candidate = Or(s.ph(j) == BLOCKED, And(s.rel(j), self.live(s, j)))
        return And(candidate, self.sig.exists("R", lost))

    def u_promote(self, s: RelState, j: Any) -> RelState:
        cj = self.sig.cls(j)
        orphan = lambda g: And(g != j, self.sig.cls(g) == cj, self.orphaned(s, g), s.ph(g) != FINISHED)  # noqa: E731
        moved = lambda m: self.sig.exists("R", lambda f: And(orphan(f), s.mem(m, f)))  # noqa: E731
        return s.update(
            fl=lambda g: If(g == j, True, And(Not(orphan(g)), s.fl(g))),
            hold=lambda g, k: And(Not(orphan(g)), s.hold(g, k)),
            mem=lambda m, g: If(m == j, g == j, If(moved(m), g == j, s.mem(m, g))),
            idx=lambda c, g: If(c == cj, g == j, s.idx(c, g)),
            ph=lambda x: If(And(x == j, s.ph(j) == BLOCKED), WAITING, s.ph(x)),
        )


class PromoteLosesFollowers(RelModel):
    """Promotion moves only the promoted follower; the others follow the old, closed flight."""

    variant_name = "promote-loses-followers"

    def promoted_members(self, s: RelState, j: Any) -> Any:
        return lambda m, g: If(m == j, g == j, s.mem(m, g))


class ExpireForgets(RelModel):
    """An expired follower leaves its flight but is not put in the released set."""

    variant_name = "expire-forgets"

    def expire_member(self, s: RelState, j: Any) -> dict[str, Any]:
        return dict(mem=lambda x, g: And(x != j, s.mem(x, g)))


class EvictReferenced(RelModel):
    """Eviction takes any cached leaf, referenced or not."""

    variant_name = "evict-referenced"

    def g_evict(self, s: RelState, k: Any) -> Any:
        return And(s.pg(k) == READY, self.is_leaf(s, k), self.calm(s))


class ViaUnshared(RelModel):
    """Prefix coordination waits via any other prompt's open flight, however few pages they share."""

    variant_name = "via-unshared"

    def via_candidate(self, s: RelState, i: Any, g: Any) -> Any:
        return And(self.config.prefix_flights, self.sig.cls(g) != self.sig.cls(i), s.fl(g))


class WaiterPinsUnpublished(RelModel):
    """A waiter pins every page its prompt shares with the flight's, held by the leader or not."""

    variant_name = "waiter-pins-unpublished"

    def waiter_pins(self, s: RelState, f: Any, j: Any, k: Any) -> Any:
        return And(self.on_path(j, k), self.sig.onp(self.sig.cls(f), k))


class WaitersAllFreed(RelModel):
    """A lost leader's flight released with nobody to promote frees every request waiting via it."""

    variant_name = "waiters-all-freed"

    def hands_on_waiters(self) -> bool:
        return False


MODELLED: dict[str, type] = {cls.variant_name: cls for cls in (
    RelModel, ForgetAtRelease, NoUnknownCheck, InsertOnMiss, EarlyRelease, UnpinnedRelease, PromoteReleased,
    PromoteLosesFollowers, ExpireForgets, EvictReferenced, ViaUnshared, WaiterPinsUnpublished, WaitersAllFreed,
)}

NOT_MODELLED: dict[str, str] = {
    "draining": "a correct design with a different state (draining flights keep their members); the relational "
                "model is the final design's, and `flightcheck equiv correct draining` proves the two equivalent",
    "stranded-followers": "it violates no_deadlock, which is not a safety invariant of the relational model "
                          "(admission reads a counter the model leaves unconstrained)",
    "admit-ignores-reservations": "the page pool (admission_has_room) needs exact cardinalities",
    "sibling-under-parent-key": "it publishes a page under another page's key: the relational model names "
                                "pages, not their keys, so a page cannot be cached under the wrong name",
}


def build_model(variant: str, sig: Any, config: Any) -> RelModel:
    """The relational model of ``variant`` over ``sig`` under ``config``."""
    try:
        return MODELLED[variant](sig, config)
    except KeyError:
        why = NOT_MODELLED.get(variant, "unknown variant")
        raise ValueError(f"variant {variant!r} is not modelled: {why}") from None


def spec_variant(name: str) -> Variant:
    """The finite spec's variant of the same name."""
    return VARIANTS[name]
