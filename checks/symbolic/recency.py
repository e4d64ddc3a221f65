"""The eviction order as an obligation of each command: the engine's own LRU contract, one step at a time.

The spec lets any unreferenced cached leaf be evicted (its pool abstracts the recency order away), so a
command can match the spec's update while keeping the wrong recency. The conform room checks the order
from outside over a whole run (:mod:`flightcheck.checks.conform.recency`); here the same rule is an
obligation of one command at one engine state, read from the engine's own clock:

- **refresh**: every page that gains a holder in the command (a block table that now lists it: an
  allocation, a cache hit, a follower's pins, a publication merged into a cached page) is stamped more
  recently than every page was before it; a promotion only hands references over, so a command that
  promotes is not held to it;
- **victim**: an eviction the command makes before anything else takes a least recently used page among
  the unreferenced cached leaves it could have taken (ties may go either way).

For example::

    >>> from flightcheck.impl.engine import Engine, EngineConfig
    >>> from flightcheck.spec.actions import SUBMISSIONS
    >>> eng = Engine.tiny(EngineConfig(num_pages=16))
    >>> _ = eng.add_request([7] * 40)
    >>> before = snapshot(eng)
    >>> _ = eng.step()
    >>> recency_problem(before, eng, [e for e in eng.events.events if e["action"] not in SUBMISSIONS])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flightcheck.spec.actions import SLOT_ACTIONS


@dataclass(frozen=True)
class PoolView:
    """What the recency rules read of an engine: each page's holders and clock stamp, and the leaves an
    eviction could take."""

    holders: dict[int, frozenset]
    last_used: dict[int, int]
    evictable: frozenset  # unreferenced cached leaves


def snapshot(engine: Any) -> PoolView:
    """The engine's pool as the rules read it (taken before a command runs on a copy)."""
    sched = engine.scheduler
    holders: dict[int, set] = {}
    for rid, request in sched.requests.items():
        for page_id in request.block_table:
            holders.setdefault(page_id, set()).add(rid)
    pool = sched.pool
    parents = {pool.pages[p].parent_key for p in pool.cached.values()}
    evictable = frozenset(p for p in pool.cached.values()
                          if pool.pages[p].ref_count == 0 and pool.pages[p].key not in parents)
    return PoolView({p: frozenset(h) for p, h in holders.items()}, {p.page_id: p.last_used for p in pool.pages},
                    evictable)


def recency_problem(before: PoolView, after: Any, events: list[dict]) -> str | None:
    """Why the command whose ``events`` took the engine from ``before`` to ``after`` broke a rule, or None."""
    actions = [e["action"] for e in events]
    if actions and actions[0] in SLOT_ACTIONS:
        victim = events[0]["page_id"]
        if victim in before.evictable:
            oldest = min(before.last_used[p] for p in before.evictable)
            if before.last_used[victim] > oldest:
                rival = min(before.evictable, key=lambda p: before.last_used[p])
                return (f"it evicted page {victim} (last used at {before.last_used[victim]}) while page {rival}, "
                        f"also an unreferenced cached leaf, was last used earlier (at {oldest})")
    if "promote" in actions:
        return None
    newest = max(before.last_used.values(), default=0)
    now = snapshot(after)
    for page_id, holders in sorted(now.holders.items()):
        if holders <= before.holders.get(page_id, frozenset()):
            continue
        if now.last_used[page_id] <= newest:
            gained = sorted(holders - before.holders.get(page_id, frozenset()))
            return (f"page {page_id} gained holder(s) {gained} but was not made recently used (its stamp "
                    f"{now.last_used[page_id]} is not after the newest before the command, {newest}): eviction "
                    "would take it before pages unused for longer")
    return None


__all__ = ["PoolView", "recency_problem", "snapshot"]
