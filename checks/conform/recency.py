"""The eviction order, kept from the outside: the victim must be the least recently referenced leaf.

The spec lets any unreferenced cached leaf be evicted (its pool is a sound abstraction: an exact LRU
order would multiply the state space), so an engine that keeps the wrong recency (a clock that does
not advance, a reference that does not refresh a page, a comparison the wrong way round) breaks no
spec property; its cache just keeps the wrong pages. :class:`Recency` keeps an order of its own from
what the engine does, not from its clock: after every event it notes which pages gained a holder
(a block table that now lists the page: an allocation, a cache hit, a follower's pins, a publication
that merged a page into an existing one; not a promotion, which hands the lost leader's references
over without taking any), stamped with the event's number. When the engine evicts,
the victim must have the oldest stamp among the pages it could have taken then (the unreferenced
cached leaves just before the eviction). Pages stamped by one event tie, and either may go: the engine
orders references within one call by its own clock, which this coarser order does not see.

For example::

    >>> from flightcheck.impl.engine import Engine, EngineConfig
    >>> eng = Engine.tiny(EngineConfig(num_pages=16))
    >>> rec = Recency()
    >>> _ = eng.add_request([7] * 40)
    >>> _ = eng.step(); rec.observe(eng.scheduler, 1)
    >>> sorted(rec.stamp.values())
    [1, 1, 1]
    >>> handed_over = Recency()
    >>> handed_over.observe(eng.scheduler, 7, refresh=False)  # a promotion takes no reference
    >>> handed_over.stamp
    {}
"""

from __future__ import annotations

from typing import Any


class Recency:
    """Per page, the number of the last event at which it gained a holder; and the eviction check."""

    def __init__(self) -> None:
        self.stamp: dict[int, int] = {}
        self._holders: dict[int, set[Any]] = {}
        self._parent: dict[str, str | None] = {}  # cached page key -> its parent's key, as last seen

    def observe(self, sched: Any, tick: int, *, refresh: bool = True) -> None:
        """Note the holders of every page after event ``tick``. ``refresh=False`` for an event that
        only hands references over (a promotion gives the lost leader's pages to the new leader): no
        reference is taken, so no page becomes more recently used."""
        holders: dict[int, set[Any]] = {}
        for rid, r in sched.requests.items():
            for page_id in r.block_table:
                holders.setdefault(page_id, set()).add(rid)
        for page_id, now in holders.items():
            if refresh and not now <= self._holders.get(page_id, set()):
                self.stamp[page_id] = tick
        self._holders = holders
        for page_id in sched.pool.cached.values():
            page = sched.pool.pages[page_id]
            self._parent[page.key] = page.parent_key

    def eviction_problem(self, sched: Any, page_id: int, key: str) -> str | None:
        """Why evicting ``page_id`` (cached under ``key``) was not the LRU choice, or None. Called at the
        eviction's event, so the pool is as the eviction left it: the candidates before it are the
        unreferenced cached leaves now, less the victim's parent (a leaf only since the victim left),
        plus the victim."""
        pool = sched.pool
        parent = self._parent.get(key)
        candidates = {pid for pid in pool.cached.values() if pool.pages[pid].ref_count == 0
                      and pool.pages[pid].key not in pool.num_cached_children and pool.pages[pid].key != parent}
        mine = self.stamp.get(page_id)
        older = [(self.stamp[c], c) for c in candidates if c in self.stamp and mine is not None and self.stamp[c] < mine]
        if not older:
            return None
        when, other = min(older)
        return (f"evicted page {page_id} (last referenced at event {mine}) while page {other} had been unreferenced "
                f"longer (last referenced at event {when}): not the least recently used leaf")
