"""The page pool and the prefix cache: which KV pages are free, referenced, or cached for reuse.

A page holds the K/V of ``page_size`` consecutive positions of one sequence (the runner owns the
tensors; this module owns only the bookkeeping). Each page is in exactly one of three states:

- free: on the free list, no references, not cached;
- private: referenced by the one request that is computing it, not cached (never shared);
- cached: published under a chained key (parent key + its token ids); any number of references.
  A cached page with zero references stays reusable until it is evicted, least-recently-used
  first among *leaf* pages (a page whose chain successor is cached is never evicted before it).

Mutations come as guard/command pairs (``can_allocate``/``allocate``, ``can_evict``/``evict``);
the commands assert what their guard checks, so a caller that skips a guard fails loudly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

PAGE_SIZE = 16


@dataclass(slots=True)
class Page:
    page_id: int
    ref_count: int = 0
    key: str | None = None              # set while cached
    parent_key: str | None = None       # the key this page's key chains from (None for page 0)
    token_ids: tuple[int, ...] = ()     # kept for the token-equality check on a hit
    index: int = -1                     # position of the page in its chain (page k = tokens [16k, 16k+16))
    last_used: int = 0                  # LRU clock value of the last reference taken

    @property
    def is_cached(self) -> bool:
        return self.key is not None


@dataclass(frozen=True, slots=True)
class Eviction:
    page_id: int
    index: int
    key: str


@dataclass(slots=True)
class PagePool:
    """Fixed pool of ``num_pages`` pages with a free list and a chained-key prefix cache."""

    num_pages: int
    page_size: int = PAGE_SIZE
    pages: list[Page] = field(init=False)
    free_page_ids: deque[int] = field(init=False)
    cached: dict[str, int] = field(init=False)              # key -> page id
    num_cached_children: dict[str, int] = field(init=False)  # key -> cached pages chaining from it
    clock: int = 0

    def __post_init__(self) -> None:
        if self.num_pages < 1:
            raise ValueError(f"num_pages must be >= 1, got {self.num_pages}")
        self.pages = [Page(i) for i in range(self.num_pages)]
        self.free_page_ids = deque(range(self.num_pages))
        self.cached = {}
        self.num_cached_children = {}

    # --- queries -------------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        return len(self.free_page_ids)

    @property
    def num_evictable(self) -> int:
        return sum(1 for pid in self.cached.values() if self.pages[pid].ref_count == 0)

    @property
    def num_available(self) -> int:
        """Pages an allocation could obtain now: free ones plus unreferenced cached ones."""
        return self.num_free + self.num_evictable

    def lookup(self, token_ids: Sequence[int], keys: Sequence[str]) -> list[int]:
        """Page ids of the longest cached chain prefix: a contiguous walk from page 0 over ``keys``.

        ``keys[i]`` is the chained key of page i of ``token_ids``; a hit also checks that the cached
        page holds exactly those tokens after the same parent (a key collision is a miss).
        """
        hit_ids: list[int] = []
        parent: str | None = None
        for i, key in enumerate(keys):
            page_id = self.cached.get(key)
            if page_id is None:
                break
            page = self.pages[page_id]
            tokens = tuple(token_ids[i * self.page_size:(i + 1) * self.page_size])
            if page.token_ids != tokens or page.parent_key != parent or page.index != i:
                break
            hit_ids.append(page_id)
            parent = key
        return hit_ids

    # --- references ----------------------------------------------------------------------------
    def acquire(self, page_ids: Sequence[int]) -> None:
        """Takes one reference on each (cached) page, e.g. on a prefix-cache hit."""
        self.clock += 1
        for page_id in page_ids:
            page = self.pages[page_id]
            assert page.is_cached, f"page {page_id} is not cached; only cached pages are shared"
            page.ref_count += 1
            page.last_used = self.clock

    def drop(self, page_ids: Sequence[int]) -> None:
        """Drops one reference on each page; a private page with no references returns to the free list."""
        for page_id in page_ids:
            page = self.pages[page_id]
            assert page.ref_count > 0, f"page {page_id} dropped with no references"
            page.ref_count -= 1
            if page.ref_count == 0 and not page.is_cached:
                self._reset(page)
                self.free_page_ids.append(page_id)

    # --- allocate ------------------------------------------------------------------------------
    def can_allocate(self, num: int) -> bool:
        """Whether ``num`` pages can be taken from the free list right now (no eviction)."""
        return num <= self.num_free

    def allocate(self, num: int) -> list[int]:
        """Takes ``num`` free pages as private pages of one request (one reference each)."""
        assert self.can_allocate(num), f"allocate({num}) with {self.num_free} free pages"
        self.clock += 1
        page_ids = [self.free_page_ids.popleft() for _ in range(num)]
        for page_id in page_ids:
            page = self.pages[page_id]
            page.ref_count = 1
            page.last_used = self.clock
        return page_ids

    # --- publish -------------------------------------------------------------------------------
    def publish(self, page_id: int, key: str, parent_key: str | None, token_ids: Sequence[int], index: int) -> int:
        """Publishes a computed private page under ``key``; returns the page id the owner now references.

        If ``key`` is already cached (another request published the same page first), the owner's copy
        is dropped and the cached page gains the reference instead (dedupe): the returned id differs.
        If ``key`` is cached with different tokens (a key collision), or the parent is not cached,
        nothing is published and the page stays private.
        """
        page = self.pages[page_id]
        assert not page.is_cached and page.ref_count == 1, f"page {page_id} is not a private page"
        existing = self.cached.get(key)
        if existing is not None:
            other = self.pages[existing]
            if other.token_ids == tuple(token_ids) and other.parent_key == parent_key:
                self.acquire([existing])
                self.drop([page_id])
                return existing
            return page_id
        if parent_key is not None and parent_key not in self.cached:
            return page_id  # an orphan could never be hit (lookups walk from page 0): keep it private
        page.key, page.parent_key, page.token_ids, page.index = key, parent_key, tuple(token_ids), index
        self.cached[key] = page_id
        if parent_key is not None:
            self.num_cached_children[parent_key] = self.num_cached_children.get(parent_key, 0) + 1
        return page_id

    # --- evict ---------------------------------------------------------------------------------
    def can_evict(self) -> bool:
        """Whether an unreferenced cached page exists (then an unreferenced leaf exists too)."""
        return self.victim() is not None

    def evict(self, page_id: int) -> Eviction:
        """Evicts ``page_id``, which must be the victim ``victim()`` names, to the free list."""
        assert page_id is not None and page_id == self.victim(), f"evict({page_id}) of a page that is not the victim"
        page = self.pages[page_id]
        eviction = Eviction(page_id, page.index, page.key)
        del self.cached[page.key]
        if page.parent_key is not None:
            left = self.num_cached_children[page.parent_key] - 1
            if left:
                self.num_cached_children[page.parent_key] = left
            else:
                del self.num_cached_children[page.parent_key]
        self._reset(page)
        self.free_page_ids.append(page_id)
        return eviction

    def victim(self) -> int | None:
        """The least-recently-used unreferenced leaf page, or None."""
        # Why leaves only: evicting an inner page would strand its cached successors (a lookup walks
        # from page 0, so they could never hit again) while still holding their memory.
        best: Page | None = None
        for page_id in self.cached.values():
            page = self.pages[page_id]
            if page.ref_count == 0 and page.key not in self.num_cached_children:
                if best is None or page.last_used < best.last_used:
                    best = page
        return None if best is None else best.page_id

    @staticmethod
    def _reset(page: Page) -> None:
        page.key, page.parent_key, page.token_ids, page.index, page.ref_count = None, None, (), -1, 0

    # --- checks --------------------------------------------------------------------------------
    def snapshot(self) -> tuple:
        """A comparable picture of the whole pool (for before/after comparisons in tests)."""
        return (tuple(self.free_page_ids), tuple(sorted(self.cached.items())),
                tuple((p.ref_count, p.key, p.index) for p in self.pages))

    def check_invariants(self) -> None:
        """Asserts the three-state partition and the cache indexes (used by tests and the engine's debug mode)."""
        free = set(self.free_page_ids)
        assert len(free) == len(self.free_page_ids), "a page is on the free list twice"
        children: dict[str, int] = {}
        for page in self.pages:
            if page.page_id in free:
                assert page.ref_count == 0 and not page.is_cached, f"free page {page.page_id} is in use"
            elif page.is_cached:
                assert self.cached.get(page.key) == page.page_id, f"cached page {page.page_id} not indexed"
                if page.parent_key is not None:
                    assert page.parent_key in self.cached, f"cached page {page.page_id} has an evicted parent"
                    children[page.parent_key] = children.get(page.parent_key, 0) + 1
            else:
                assert page.ref_count > 0, f"page {page.page_id} is neither free, cached nor referenced"
        assert len(self.cached) == sum(1 for p in self.pages if p.is_cached)
        assert children == self.num_cached_children, "child counts out of date"
