"""The page pool and prefix cache, without a model: states, refcounts, dedupe, leaf-first LRU eviction."""

import pytest

from flightcheck.impl.events import chain_keys
from flightcheck.impl.pages import PagePool

PS = 16


def _publish_chain(pool, tokens, num_pages):
    """Allocates and publishes the first num_pages pages of tokens as one request would; returns page ids."""
    keys = chain_keys(tokens, num_pages, PS)
    page_ids = pool.allocate(num_pages)
    out = []
    for i, (pid, key) in enumerate(zip(page_ids, keys)):
        out.append(pool.publish(pid, key, keys[i - 1] if i else None, tokens[i * PS:(i + 1) * PS], i))
    return out, keys


def test_allocate_and_drop_return_private_pages_to_free_list():
    pool = PagePool(8)
    ids = pool.allocate(3)
    assert pool.num_free == 5 and all(pool.pages[i].ref_count == 1 for i in ids)
    assert not pool.can_allocate(6)
    pool.drop(ids)
    assert pool.num_free == 8
    pool.check_invariants()


def test_published_pages_stay_cached_with_zero_refs_and_hit_on_lookup():
    pool = PagePool(8)
    tokens = list(range(40))
    ids, keys = _publish_chain(pool, tokens, 2)
    pool.drop(ids)
    assert pool.num_free == 6 and pool.num_evictable == 2 and pool.num_available == 8
    assert pool.lookup(tokens, keys) == ids
    # A prompt that diverges in page 1 hits page 0 only.
    other = tokens[:16] + [99] * 24
    assert pool.lookup(other, chain_keys(other, 2, PS)) == ids[:1]
    pool.check_invariants()


def test_lookup_checks_token_equality_not_just_the_key():
    pool = PagePool(4)
    tokens = list(range(20))
    ids, keys = _publish_chain(pool, tokens, 1)
    forged = [7] * 20  # same key presented with other tokens: a collision must be a miss
    assert pool.lookup(forged, keys) == []
    assert pool.lookup(tokens, keys) == ids


def test_publish_of_an_already_cached_key_deduplicates_onto_the_cached_page():
    pool = PagePool(8)
    tokens = list(range(33))
    first, keys = _publish_chain(pool, tokens, 2)
    second, _ = _publish_chain(pool, tokens, 2)
    assert second == first  # the second copy was dropped and the cached pages referenced
    assert [pool.pages[i].ref_count for i in first] == [2, 2]
    assert pool.num_free == 6
    pool.check_invariants()


def test_shared_pages_are_never_private_and_free_only_after_eviction():
    pool = PagePool(4)
    ids, _ = _publish_chain(pool, list(range(16)), 1)
    pool.acquire(ids)
    pool.drop(ids)
    pool.drop(ids)
    assert pool.pages[ids[0]].is_cached and pool.num_free == 3
    with pytest.raises(AssertionError):
        pool.drop(ids)  # no references left


def test_eviction_is_lru_among_leaves_only():
    pool = PagePool(6)
    a = list(range(48))
    a_ids, a_keys = _publish_chain(pool, a, 3)   # chain a0 <- a1 <- a2
    b = [200] * 16
    b_ids, _ = _publish_chain(pool, b, 1)        # lone b0
    pool.drop(a_ids)
    pool.drop(b_ids)
    pool.acquire([a_ids[0]])                     # a0 is now the most recently used ...
    pool.drop([a_ids[0]])
    # ... but only leaves are candidates: a2 (older) goes before b0, then a1, then b0 / a0 by age.
    order = [pool.evict(pool.victim()).page_id for _ in range(4)]
    assert order == [a_ids[2], a_ids[1], b_ids[0], a_ids[0]]
    assert pool.num_free == 6 and not pool.cached
    pool.check_invariants()


def test_referenced_pages_are_never_evicted():
    pool = PagePool(2)
    ids, _ = _publish_chain(pool, list(range(32)), 2)
    assert not pool.can_evict()
    pool.drop([ids[1]])
    assert pool.can_evict()
    assert pool.evict(pool.victim()).page_id == ids[1]
    assert not pool.can_evict()  # page 0 is still referenced


def test_orphan_page_is_not_published():
    pool = PagePool(4)
    tokens = list(range(32))
    keys = chain_keys(tokens, 2, PS)
    (pid,) = pool.allocate(1)
    assert pool.publish(pid, keys[1], keys[0], tokens[16:32], 1) == pid
    assert not pool.pages[pid].is_cached  # its parent is not cached: it could never be hit
