"""The batched explorer's set of visited states: packed keys numbered in discovery order.

:class:`VisitedSet` stores every state's key once, by id, and finds keys through an open-addressing
hash table of ids (linear probing, load at most one half). A batch of candidate successors is
inserted at once, by one loop compiled with numba that touches the slots and stored keys of the
candidates a few places ahead, so that their cache misses overlap (a numpy version of the same
probing, one vectorized step per probe round, was 1.3 times slower on the seven-request burst, and
a plain compiled loop no faster than that). Duplicates inside the batch and states seen before
resolve to one id, and the new states are numbered in the order of their *first* candidate's rank
(parent, then action), which is the order in which the reference explorer's queue meets them. So
both explorers give every state the same position in the breadth-first order.

For example::

    >>> import numpy as np
    >>> v = VisitedSet(words=1)
    >>> ids, new = v.insert(np.array([[7, 5, 7]], dtype=np.uint64), np.array([2, 0, 1]))
    >>> ids.tolist(), new.tolist(), v.block(0, v.size)[0].tolist()
    ([1, 0, 1], [1, 2], [5, 7])
"""

from __future__ import annotations

import numpy as np
from numba import njit

from flightcheck.checks.explore.packing import hash_keys

_EMPTY = -1


class VisitedSet:
    """Keys by id and a hash table from key to id.

    Keys are stored a row per state (``words`` consecutive integers), so that checking a probe
    against a stored key touches one cache line however many words a key has.
    """

    def __init__(self, words: int, capacity: int = 1 << 12) -> None:
        self.words = words
        self.size = 0
        self.keys = np.empty((capacity, words), dtype=np.uint64)
        self.hashes = np.empty(capacity, dtype=np.uint32)  # high half of each key's hash, to rehash fast
        self._bits = 12
        self.table = np.full(1 << self._bits, _EMPTY, dtype=np.int32)

    @property
    def nbytes(self) -> int:
        """Bytes held by the keys and the table."""
        return self.keys.nbytes + self.hashes.nbytes + self.table.nbytes

    def block(self, start: int, stop: int) -> np.ndarray:
        """The keys of ids ``start .. stop - 1`` as ``(words, stop - start)``, one row per word: always
        a copy, never a view (the store is reallocated in place when it grows)."""
        return self.keys[start:stop].T.copy()

    def bytes_needed(self, extra: int) -> int:
        """Bytes held after ``extra`` more states are added (growth included)."""
        n = self.size + extra
        cap = self.keys.shape[0]
        while cap < n:
            cap *= 2
        return (self.words * 8 + 4) * cap + 4 * (1 << self._table_bits(n))

    def _table_bits(self, n: int) -> int:
        """Table size for ``n`` keys: load at most 1/2; grown fourfold up to 2**26 slots, to rehash less."""
        bits = self._bits
        while (1 << bits) < 2 * n:
            bits += 2 if bits < 26 else 1
        return bits

    def _reserve_keys(self, n: int, used: int) -> None:
        """Room for ``n`` keys, keeping the first ``used`` (the stored ones and a batch's new ones)."""
        if n > self.keys.shape[0]:
            cap = self.keys.shape[0]
            while cap < n:
                cap *= 2
            # resize reallocates in place (mremap for large blocks): no copy of the stored keys.
            # No view of these arrays outlives a call (block() copies), so refcheck is not needed.
            self.keys.resize((cap, self.words), refcheck=False)
            self.hashes.resize(cap, refcheck=False)

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The id of each key ``(words, n)``, or -1 where it was never inserted."""
        keys = np.ascontiguousarray(keys)
        out = np.empty(keys.shape[1], dtype=np.int64)
        _find(self.table, self._bits, self.keys, keys, hash_keys(keys), out)
        return out

    def insert(self, keys: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Insert a batch of candidate keys ``(words, E)``, each with a distinct ``rank``.

        Returns the id of every candidate and, for each new state in id order, the index of the
        candidate that discovered it first (the smallest rank among those that resolve to it).
        The table and the key store grow during the batch as new states are claimed, so they are
        sized by the states added, not by the candidates (most of which are states seen before).
        """
        num = keys.shape[1]
        base = self.size
        keys = np.ascontiguousarray(keys)
        h = hash_keys(keys)
        rank = np.ascontiguousarray(rank, dtype=np.int64)
        ids = np.empty(num, dtype=np.int64)
        first_rank = np.empty(num, dtype=np.int64)  # per provisional id base + q: its smallest rank,
        first_cand = np.empty(num, dtype=np.int64)  # the candidate that has it,
        claim = np.empty(num, dtype=np.int64)       # and its table slot
        sink = np.zeros(1, dtype=np.int64)
        k = nprov = 0
        while True:
            limit = min(1 << (self._bits - 1), self.keys.shape[0])
            k, nprov = _probe(self.table, self._bits, self.keys, self.hashes, base, nprov, keys, h, rank, k,
                              limit, ids, first_rank, first_cand, claim, sink)
            if k == num:
                break
            # Out of room: a bigger key store, or a bigger table with every id placed again
            # (the provisional ones' slots move with them).
            if base + nprov >= self.keys.shape[0]:
                self._reserve_keys(base + nprov + 1, base + nprov)
            if base + nprov >= 1 << (self._bits - 1):
                self._bits = self._table_bits(base + nprov + 1)
                self.table = np.full(1 << self._bits, _EMPTY, dtype=np.int32)
                _rehash(self.table, self._bits, self.hashes, base + nprov, base, claim)
        if not nprov:
            return ids, np.empty(0, dtype=np.int64)
        # Number the new states by their first discovery, as a breadth-first queue would.
        order = np.argsort(first_rank[:nprov], kind="stable")
        inverse = np.empty(nprov, dtype=np.int64)
        inverse[order] = np.arange(nprov)
        self.keys[base: base + nprov] = np.take(self.keys, base + order, axis=0)
        self.hashes[base: base + nprov] = self.hashes[base + order]
        self.table[claim[:nprov][order]] = base + np.arange(nprov, dtype=np.int32)
        fresh = ids >= base
        ids[fresh] = base + inverse[ids[fresh] - base]
        self.size = base + nprov
        return ids, first_cand[:nprov][order]


@njit(nogil=True, cache=True)
def _same_key(store, t, keys, k):  # pragma: no cover - compiled by numba
    """Whether stored key ``t`` equals candidate ``k`` (column ``k`` of ``keys``)."""
    for w in range(keys.shape[0]):
        if store[t, w] != keys[w, k]:
            return False
    return True


@njit(nogil=True, cache=True)
def _probe(table, bits, store, hashes, base, nprov, keys, h, rank, start, limit, ids, first_rank, first_cand,
           claim, sink):  # pragma: no cover - compiled by numba; tested through insert
    """Look every candidate ``start ..`` up, claiming a new id for a key not stored; stops early (and
    says where) when ``limit`` ids are in use, so that the caller can grow the store or the table.
    ``sink[0]`` receives a sum of the touched values, so that the compiler keeps the touches."""
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    words, num = keys.shape
    touched = 0
    for k in range(start, num):
        # Touch what later candidates will read (their table slots, and the stored key a slot
        # names), so that those cache misses overlap this candidate's work.
        if k + 16 < num:
            touched += table[np.int64(h[k + 16] >> shift)]
        if k + 8 < num:
            t8 = table[np.int64(h[k + 8] >> shift)]
            if t8 >= 0:
                touched += store[t8, 0] & 1
        s = np.int64(h[k] >> shift)
        while True:
            t = table[s]
            if t == _EMPTY:
                p = base + nprov
                if p >= limit:
                    sink[0] = touched
                    return k, nprov
                table[s] = p
                for w in range(words):
                    store[p, w] = keys[w, k]
                hashes[p] = np.uint32(h[k] >> np.uint64(32))
                ids[k] = p
                first_rank[nprov] = rank[k]
                first_cand[nprov] = k
                claim[nprov] = s
                nprov += 1
                break
            if _same_key(store, t, keys, k):
                ids[k] = t
                q = t - base
                if q >= 0 and rank[k] < first_rank[q]:
                    first_rank[q] = rank[k]
                    first_cand[q] = k
                break
            s = (s + 1) & mask
    sink[0] = touched
    return num, nprov


@njit(nogil=True, cache=True)
def _rehash(table, bits, hashes, count, base, claim):  # pragma: no cover - compiled
    """Place ids ``0 .. count - 1`` into an empty ``table`` by their stored hashes; the slots of the
    provisional ids ``base ..`` go to ``claim``."""
    mask = (np.int64(1) << bits) - 1
    shift = np.uint32(32 - bits)
    for i in range(count):
        s = np.int64(hashes[i] >> shift)
        while table[s] != _EMPTY:
            s = (s + 1) & mask
        table[s] = i
        if i >= base:
            claim[i - base] = s


@njit(nogil=True, cache=True)
def _find(table, bits, store, keys, h, out):  # pragma: no cover - compiled by numba
    """``out[k]``: the id stored for candidate ``k``, or -1."""
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    for k in range(keys.shape[1]):
        s = np.int64(h[k] >> shift)
        out[k] = _EMPTY
        while table[s] != _EMPTY:
            t = table[s]
            if _same_key(store, t, keys, k):
                out[k] = t
                break
            s = (s + 1) & mask
