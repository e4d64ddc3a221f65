"""Deliberately broken engines: one small patch each, and the spec property that must catch it.

Each :class:`Mutant` patches one method of the real engine (the scheduler, the coordinator or the
engine API) the way a plausible mistake would, and names the property conformance checking must report.
``mutant.apply(setattr_fn)`` installs it with any ``setattr``-like function (pytest's
``monkeypatch.setattr``), :meth:`Mutant.patched` is a context manager that undoes it. ``variant`` names
the spec variant (:mod:`flightcheck.spec.variants`) telling the same story, when there is one, so that
the variant's counterexample can be replayed against the mutant (``flightcheck replay --mutant``).

For example::

    >>> sorted(MUTANTS)[:2]
    ['accept-unknown-termination', 'admit-ignores-reservations']
    >>> MUTANTS["forget-released"].property
    'termination_validated'
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from flightcheck.impl.coordinator import Coordinator
from flightcheck.impl.engine import Engine
from flightcheck.impl.flights import FlightLifecycle
from flightcheck.impl.pages import PagePool
from flightcheck.impl.request import Phase
from flightcheck.impl.scheduler import Admission, Scheduler

Setattr = Callable[[Any, str, Any], None]


def _follower_admitted_early(setattr_fn: Setattr) -> None:
    original = Scheduler.arrive

    def arrive(self: Scheduler, request: Any) -> None:
        original(self, request)
        if request.phase is Phase.BLOCKED:  # the mistake: a follower queued at once
            request.phase = Phase.WAITING
            self.waiting.append(request)

    setattr_fn(Scheduler, "arrive", arrive)


def _publish_before_compute(setattr_fn: Setattr) -> None:
    original = Scheduler.plan_prefill

    def plan(self: Scheduler, request: Any, budget_units: int) -> Any:
        work = original(self, request, budget_units)
        saved = request.num_computed
        request.num_computed = work.chunk.end_pos  # the mistake: publish what is only planned
        try:
            if self.can_publish(request):
                self.publish(request)
        finally:
            request.num_computed = saved
        return work

    setattr_fn(Scheduler, "plan_prefill", plan)


def _forget_released(setattr_fn: Setattr) -> None:
    original = Coordinator.release

    def release(self: Coordinator, flight_id: int) -> list[int]:
        flight = self.flights[flight_id]
        members = set(flight.follower_request_ids) | ({flight.leader_request_id} if flight.is_leader_live else set())
        followers = original(self, flight_id)
        self.released_request_ids -= members  # the mistake: nobody enters the released set
        return followers

    setattr_fn(Coordinator, "release", release)


def _leak_ref_on_abort(setattr_fn: Setattr) -> None:
    original = FlightLifecycle.abort

    def abort(self: Scheduler, request_id: int) -> None:
        request = self.requests.get(request_id)
        if request is not None and request.phase.is_live and not self.leads_open_flight(request):
            # the mistake: the cached pages keep the aborted request's references
            request.block_table = [p for p in request.block_table if not self.pool.pages[p].is_cached]
        original(self, request_id)

    setattr_fn(Scheduler, "abort", abort)


def _strand_followers(setattr_fn: Setattr) -> None:
    def settle(self: Scheduler, termination: Any, reason: str) -> None:
        if termination.kind == "leader" and reason == "on-completion":  # the mistake: a lost leader releases nobody
            FlightLifecycle._settle(self, termination, reason)

    setattr_fn(Scheduler, "_settle", settle)


def _unpinned_release(setattr_fn: Setattr) -> None:
    def held_pages(request: Any) -> list[int]:  # the mistake: followers are released holding nothing
        return []

    setattr_fn(Scheduler, "held_pages", staticmethod(held_pages))


def _promote_loses_followers(setattr_fn: Setattr) -> None:
    original = Coordinator.promote

    def promote(self: Coordinator, flight_id: int) -> int:
        request_id = original(self, flight_id)
        self.flights[flight_id].follower_request_ids.clear()  # the mistake: the other followers are dropped
        return request_id

    setattr_fn(Coordinator, "promote", promote)


def _expire_forgets(setattr_fn: Setattr) -> None:
    def expire(self: Coordinator, flight_id: int, request_id: int) -> None:
        self.flights[flight_id].follower_request_ids.remove(request_id)  # the mistake: not in the released set

    setattr_fn(Coordinator, "expire", expire)


def _admit_ignores_reservations(setattr_fn: Setattr) -> None:
    def fit(self: Scheduler, request: Any) -> Any:
        hit_ids = self._lookup(request)
        num_unreferenced_hits = sum(1 for p in hit_ids if self.pool.pages[p].ref_count == 0)
        # the mistake: what running requests reserved is not subtracted
        if self.pool.num_available - num_unreferenced_hits < request.num_lifetime_pages - len(hit_ids):
            return None
        return Admission(request, hit_ids)

    setattr_fn(Scheduler, "_fit", fit)


def _evict_referenced(setattr_fn: Setattr) -> None:
    def victim(self: PagePool) -> int | None:
        best = None
        for page_id in self.cached.values():  # the mistake: referenced pages are candidates too
            page = self.pages[page_id]
            if page.key not in self.num_cached_children and (best is None or page.last_used < best.last_used):
                best = page
        return None if best is None else best.page_id

    setattr_fn(PagePool, "victim", victim)


def _lru_stale_hit(setattr_fn: Setattr) -> None:
    def acquire(self: PagePool, page_ids: Any) -> None:
        for page_id in page_ids:
            page = self.pages[page_id]
            page.ref_count += 1  # the mistake: a cache hit does not make the page recently used

    setattr_fn(PagePool, "acquire", acquire)


def _accept_unknown_termination(setattr_fn: Setattr) -> None:
    original = Engine.abort

    def abort(self: Engine, request_id: int) -> None:
        request = self.scheduler.requests.get(request_id)
        if request is None or not request.phase.is_live:
            return  # the mistake: unknown IDs are silently accepted
        original(self, request_id)

    setattr_fn(Engine, "abort", abort)


def _waiter_pins_leader_tail(setattr_fn: Setattr) -> None:
    def shared_pins(self: Any, request: Any, leader: Any) -> list[int]:
        return self.held_pages(leader)  # the mistake: the leader's own pages past the shared part too

    setattr_fn(FlightLifecycle, "shared_pins", shared_pins)


def _waiter_unpinned(setattr_fn: Setattr) -> None:
    def shared_pins(self: Any, request: Any, leader: Any) -> list[int]:
        return []  # the mistake: a released waiter holds nothing until admission

    setattr_fn(FlightLifecycle, "shared_pins", shared_pins)


def _via_earliest_flight(setattr_fn: Setattr) -> None:
    from flightcheck.impl.coordinator import num_shared

    def can_wait_via(self: Coordinator, page_keys: Any) -> tuple[int | None, int]:
        # The mistake: the earliest flight that shares enough pages, not the one that shares the most.
        k = self.min_shared_pages - 1
        flight_ids = self.by_page_key.get(page_keys[k]) if k < len(page_keys) else None
        if not flight_ids:
            return None, 0
        f = min(flight_ids, key=lambda g: self.flights[g].leader_request_id)
        return f, num_shared(page_keys, self.flights[f].page_keys)

    setattr_fn(Coordinator, "can_wait_via", can_wait_via)


def _heir_earliest_waiter(setattr_fn: Setattr) -> None:
    original = Coordinator.hand_on_waiters

    def hand_on_waiters(self: Coordinator, flight_id: int) -> tuple[int, int | None]:
        # The mistake: the earliest waiter inherits, not the one sharing the most pages with the lost flight.
        # Put it first by making every other waiter look as if it shared nothing, then restore the lists.
        flight = self.flights[flight_id]
        earliest = min(flight.via_request_ids)
        keys = {w: self.flights[self.flight_led_by(w)].page_keys for w in flight.via_request_ids}
        try:
            for w in keys:
                if w != earliest:
                    self.flights[self.flight_led_by(w)].page_keys = ()
            return original(self, flight_id)
        finally:
            for w, k in keys.items():
                self.flights[self.flight_led_by(w)].page_keys = k

    setattr_fn(Coordinator, "hand_on_waiters", hand_on_waiters)


def _eos_ignored(setattr_fn: Setattr) -> None:
    original = Scheduler.can_finish

    def can_finish(self: Scheduler, request: Any) -> str | None:
        reason = original(self, request)
        if reason == "eos" and len(request.output_token_ids) < request.sampling.max_tokens:
            return None  # the mistake: an end-of-sequence token does not end the request
        return reason

    setattr_fn(Scheduler, "can_finish", can_finish)


def _stop_reported_as_length(setattr_fn: Setattr) -> None:
    original = Scheduler.can_finish

    def can_finish(self: Scheduler, request: Any) -> str | None:
        reason = original(self, request)
        return "length" if reason == "stop" else reason  # the mistake: a stop string is reported as length

    setattr_fn(Scheduler, "can_finish", can_finish)


@dataclass(frozen=True)
class Mutant:
    """A broken engine: its name, the property that must catch it, the story, and the patch."""

    name: str
    property: str
    story: str
    patch: Callable[[Setattr], None]
    variant: str | None = None
    policy: tuple[tuple[str, str], ...] = ()   # the engine settings under which the mistake shows

    def apply(self, setattr_fn: Setattr) -> None:
        """Install the patch with ``setattr_fn(obj, name, value)`` (e.g. ``monkeypatch.setattr``)."""
        self.patch(setattr_fn)

    @contextmanager
    def patched(self) -> Iterator["Mutant"]:
        """Install the patch for the duration of a ``with`` block."""
        missing = object()
        saved: list[tuple[Any, str, Any]] = []

        def setattr_fn(obj: Any, name: str, value: Any) -> None:
            saved.append((obj, name, obj.__dict__.get(name, missing)))  # an inherited one is not in __dict__
            setattr(obj, name, value)

        self.patch(setattr_fn)
        try:
            yield self
        finally:
            for obj, name, value in reversed(saved):
                if value is missing:
                    delattr(obj, name)
                else:
                    setattr(obj, name, value)


MUTANTS: dict[str, Mutant] = {m.name: m for m in (
    Mutant("follower-admitted-early", "follower_waits_for_release",
           "A follower is queued for admission at arrival instead of waiting for its flight's release.",
           _follower_admitted_early, policy=(("coordination", "single-flight"),)),
    Mutant("publish-before-compute", "visible_after_compute",
           "Pages are published when their prefill is planned, before the forward pass writes their KV.",
           _publish_before_compute, "insert-on-miss", (("publication", "incremental"),)),
    Mutant("forget-released", "termination_validated",
           "A released flight's members are not kept in the released set: their terminations are rejected.",
           _forget_released, "forget-at-release", (("coordination", "single-flight"),)),
    Mutant("leak-ref-on-abort", "refcounts_exact",
           "An aborted request keeps its references on shared (cached) pages.", _leak_ref_on_abort),
    Mutant("strand-followers", "no_deadlock",
           "An aborted leader's flight is never released: its followers stay blocked forever.",
           _strand_followers, "stranded-followers", (("coordination", "single-flight"),)),
    Mutant("accept-unknown-termination", "termination_validated",
           "A termination for an unknown or already-terminated ID is silently accepted.",
           _accept_unknown_termination, "no-unknown-check"),
    Mutant("unpinned-release", "refcounts_exact",
           "Released followers take no references on their leader's pages (the design before pinned release).",
           _unpinned_release, "unpinned-release", (("coordination", "single-flight"),)),
    Mutant("promote-loses-followers", "blocked_in_open_flight",
           "Promotion keeps the promoted follower and drops the others from the flight.",
           _promote_loses_followers, "promote-loses-followers",
           (("coordination", "single-flight"), ("leader_loss", "promote"))),
    Mutant("expire-forgets", "termination_validated",
           "An expired follower leaves its flight but never enters the released set.",
           _expire_forgets, "expire-forgets", (("coordination", "single-flight"),)),
    Mutant("admit-ignores-reservations", "admission_has_room",
           "Admission does not subtract what running requests reserved.",
           _admit_ignores_reservations, "admit-ignores-reservations"),
    Mutant("evict-referenced", "in_use_never_evicted",
           "Eviction takes the least recently used leaf even when a request still references it.",
           _evict_referenced, "evict-referenced"),
    Mutant("stop-as-length", "visible_after_compute",
           "A request that completes a stop string finishes, but with reason length.",
           _stop_reported_as_length),
    Mutant("lru-stale-hit", "evicts_least_recently_used",
           "A cache hit takes its reference without making the page recently used, so eviction takes "
           "a page just hit before one unused for longer.", _lru_stale_hit),
    Mutant("waiter-pins-leader-tail", "refcounts_exact",
           "A request released from its wait via another prompt's flight pins every page that leader holds, "
           "its own tail included.", _waiter_pins_leader_tail, policy=(("coordination", "prefix"),)),
    Mutant("waiter-unpinned", "refcounts_exact",
           "A request released from its wait via another prompt's flight pins nothing: the shared pages can "
           "go before it is admitted.", _waiter_unpinned, policy=(("coordination", "prefix"),)),
    Mutant("via-earliest-flight", "waits_for_shared_pages",
           "Prefix coordination waits via the earliest flight sharing enough pages, not the one sharing the most.",
           _via_earliest_flight, policy=(("coordination", "prefix"),)),
    Mutant("heir-earliest-waiter", "follower_waits_for_release",
           "A lost leader's flight, handed on, makes its earliest waiter the heir, not the one sharing the most pages.",
           _heir_earliest_waiter, policy=(("coordination", "prefix"), ("leader_loss", "promote"))),
    Mutant("eos-ignored", "visible_after_compute",
           "A request whose output is an end-of-sequence token goes on decoding to its max_tokens.",
           _eos_ignored),
)}


def get_mutant(name: str) -> Mutant:
    """The mutant called ``name``, or a ValueError listing the known names."""
    try:
        return MUTANTS[name]
    except KeyError:
        raise ValueError(f"unknown mutant {name!r}; known: {', '.join(MUTANTS)}") from None
