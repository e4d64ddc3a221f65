"""The engine's counters, recounted from its events: what a user reads off ``engine.counters`` must be true.

The engine keeps counters of its reuse and coordination (lookups, hits, recovered tokens, pages
published, deduplicated, evicted and allocated, flights opened, followers released, pins, promotions,
expiries, failures, prompt and decode tokens, prefix coordination's waits and released waiters). Each follows from the events the monitor checks, read
against the spec's states (a published page that was already cached is a deduplication, the pages a
prefill or decode step allocates come from the spec's pool arithmetic), so :class:`ReferenceCounters`
counts them again, event by event, and :meth:`ReferenceCounters.differences` names every counter the
engine got wrong.

For example::

    >>> ref = ReferenceCounters(page_size=16, caching=True)
    >>> engine_counters = dict.fromkeys(COUNTED, 0) | {"num_flights_opened": 1}
    >>> ref.counts["num_flights_opened"], ref.differences(engine_counters)
    (0, ['num_flights_opened: the engine counts 1, its events 0'])
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from flightcheck.spec import pool
from flightcheck.spec.state import BLOCKED

COUNTED = ("num_prefix_lookups", "num_prefix_hits", "num_hit_pages", "num_recovered_tokens", "num_pages_published",
           "num_pages_deduplicated", "num_pages_evicted", "num_pages_allocated", "num_flights_opened",
           "num_followers_released", "num_pinned_pages", "num_promotions", "num_expiries", "num_failures",
           "num_prefill_tokens", "num_decode_tokens", "num_via_waits", "num_waiters_released")


class ReferenceCounters:
    """The counters an engine's events imply, kept up to date by :meth:`observe`."""

    def __init__(self, page_size: int, caching: bool) -> None:
        self.page_size = page_size
        self.caching = caching
        self.counts = {name: 0 for name in COUNTED}
        # A request whose forward pass fails had allocated pages for that pass, which no event shows.
        self.exact_allocations = True

    def observe(self, spec: Any, event: dict[str, Any], action: Any, before: Any, after: Any) -> None:
        """Count one checked event (the spec states before and after its action), by its action's entry
        of :data:`COUNT`."""
        COUNT[action.name](self, Seen(spec, event, action.arg, spec.view(before), spec.view(after)))

    @staticmethod
    def _published_slots(spec: Any, b: Any, a: Any, i: int) -> list[int]:
        upto = spec.published_upto(b, i)
        return [k for p, k in enumerate(spec.pages_of(i)) if b.pubd[i] <= p < upto]

    def differences(self, engine_counters: dict[str, int], planned_pages: int = 0) -> list[str]:
        """One line per counter whose engine value differs from what its events imply (a step allocates
        before its events, so ``planned_pages`` it holds for work not yet reported count as allocated)."""
        want = dict(self.counts, num_pages_allocated=self.counts["num_pages_allocated"] + planned_pages)
        return [f"{name}: the engine counts {engine_counters.get(name)}, its events {value}"
                for name, value in want.items() if engine_counters.get(name) != value
                and (self.exact_allocations or name != "num_pages_allocated")]


class Seen(NamedTuple):
    """One checked event as a counter reads it: the spec, the event, the action's argument ``i`` and the
    spec's views before (``b``) and after (``a``) it."""

    spec: Any
    event: dict[str, Any]
    i: int
    b: Any
    a: Any


def _arrive(ref: ReferenceCounters, s: Seen) -> None:
    ref.counts["num_flights_opened"] += 1 if s.event.get("role") == "leader" else 0
    ref.counts["num_via_waits"] += 1 if s.a.via[s.i] else 0


def _admit(ref: ReferenceCounters, s: Seen) -> None:
    if ref.caching:  # without prefix caching there is no lookup
        c, hits = ref.counts, s.event.get("hit_pages", 0)
        c["num_prefix_lookups"] += 1
        c["num_prefix_hits"] += 1 if hits else 0
        c["num_hit_pages"] += hits
        c["num_recovered_tokens"] += hits * ref.page_size


def _prefill(ref: ReferenceCounters, s: Seen) -> None:
    ref.counts["num_prefill_tokens"] += s.event.get("num_tokens", 0)
    ref.counts["num_pages_allocated"] += s.a.done[s.i] - s.b.done[s.i]


def _publish(ref: ReferenceCounters, s: Seen) -> None:
    # A finish publishes what remains (on-completion), counted alike: a page already cached is a deduplication.
    for k in ref._published_slots(s.spec, s.b, s.a, s.i):
        ref.counts["num_pages_deduplicated" if s.b.pg[k] != 0 else "num_pages_published"] += 1


def _release(ref: ReferenceCounters, s: Seen) -> None:
    spec, b, i = s.spec, s.b, s.i
    released = [j for j in range(spec.num_requests) if j != i and b.mem[j] == i + 1 and b.ph[j] == BLOCKED]
    # A lost leader's waiters handed on (the heir's wait inherited, the others waiting via the heir) stay blocked.
    waiters = [j for j in range(spec.num_requests) if j != i and b.via[j] == i + 1 and b.ph[j] == BLOCKED
               and s.a.ph[j] != BLOCKED]
    ref.counts["num_followers_released"] += len(released)
    ref.counts["num_waiters_released"] += len(waiters)
    ref.counts["num_pinned_pages"] += sum(s.a.pubd[j] for j in released + waiters)


def _promote(ref: ReferenceCounters, s: Seen) -> None:
    ref.counts["num_promotions"] += 1
    ref.counts["num_pinned_pages"] += s.a.pubd[s.i]


def _decode(ref: ReferenceCounters, s: Seen) -> None:
    ref.counts["num_decode_tokens"] += 1
    ref.counts["num_pages_allocated"] += pool.block_table(s.spec, s.a, s.i) - pool.block_table(s.spec, s.b, s.i)


def _evict(ref: ReferenceCounters, s: Seen) -> None:
    ref.counts["num_pages_evicted"] += 1


def _expire(ref: ReferenceCounters, s: Seen) -> None:
    ref.counts["num_expiries"] += 1
    ref.counts["num_pinned_pages"] += s.a.pubd[s.i]


def _fail(ref: ReferenceCounters, s: Seen) -> None:
    ref.counts["num_failures"] += 1
    ref.exact_allocations = False  # the failed pass had allocated pages that no event shows


def _nothing(ref: ReferenceCounters, s: Seen) -> None:
    """An action no counter reads (an abort, a termination notice)."""


# What each action adds to the counters, one entry per spec action (tests/test_registries.py holds the
# keys equal to the spec's action names).
COUNT: dict[str, Callable[[ReferenceCounters, Seen], None]] = {
    "arrive": _arrive, "admit": _admit, "prefill": _prefill, "publish": _publish, "release": _release,
    "promote": _promote, "decode": _decode, "finish": _publish, "evict": _evict, "abort": _nothing,
    "notify": _nothing, "expire": _expire, "fail": _fail,
}
