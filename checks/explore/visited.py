"""The batched explorer's set of visited states: packed keys numbered in discovery order.

:class:`VisitedSet` stores every state's key once, by id, and finds keys through an open-addressing
hash table of ids (linear probing, load at most one half), all in vectorized numpy steps. A batch
of candidate successors is inserted at once; duplicates inside the batch and states seen before
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
        """The keys of ids ``start .. stop - 1`` as ``(words, stop - start)``, one row per word."""
        return np.ascontiguousarray(self.keys[start:stop].T)

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

    def _reserve_keys(self, n: int) -> None:
        if n > self.keys.shape[0]:
            cap = self.keys.shape[0]
            while cap < n:
                cap *= 2
            keys = np.empty((cap, self.words), dtype=np.uint64)
            keys[: self.size] = self.keys[: self.size]
            hashes = np.empty(cap, dtype=np.uint32)
            hashes[: self.size] = self.hashes[: self.size]
            self.keys, self.hashes = keys, hashes

    def _grow_table(self, n: int, stored: int) -> np.ndarray | None:
        """Make the table hold ``n`` keys at load 1/2, re-placing ids ``0 .. stored - 1``; returns
        where each of them went (None when the table was big enough)."""
        bits = self._table_bits(n)
        if bits == self._bits:
            return None
        # Taking the ids in the order of the old table's slots keeps the writes into the new table
        # nearly sequential: a key's new home slot extends its old one by the next bits of its hash.
        old = self.table
        ids = old[old != _EMPTY].astype(np.int64)
        self._bits = bits
        self.table = np.full(1 << bits, _EMPTY, dtype=np.int32)
        home = (self.hashes[ids] >> np.uint32(32 - bits)).astype(np.int64)
        where = np.empty(stored, dtype=np.int64)
        where[ids] = self._place(home, ids, fresh=True)
        return where
    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more states (keys array and table), keeping the load under 1/2."""
        self._reserve_keys(self.size + extra)
        self._grow_table(self.size + extra, self.size)

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        return self._home(hash_keys(keys))

    def _home(self, h: np.ndarray) -> np.ndarray:
        return (h >> np.uint64(64 - self._bits)).astype(np.int64)

    def _place(self, slot: np.ndarray, ids: np.ndarray, fresh: bool = False) -> np.ndarray:
        """Write distinct new ``ids`` into free slots, probing from ``slot``; returns where each went.
        ``fresh``: the table is empty, so the first round needs no look at it."""
        mask = (1 << self._bits) - 1
        where = np.empty(len(ids), dtype=np.int64)
        pending = np.arange(len(ids))
        slot = slot.copy()
        while len(pending):
            s = slot[pending]
            if fresh:
                cand, cs, busy = pending, s, pending[:0]
                fresh = False
            else:
                free = self.table[s] == _EMPTY
                cand, cs, busy = pending[free], s[free], pending[~free]
            vals = ids[cand].astype(np.int32)
            self.table[cs] = vals
            won = self.table[cs] == vals
            where[cand[won]] = cs[won]
            lost = np.concatenate([busy, cand[~won]])
            slot[lost] = (slot[lost] + 1) & mask
            pending = lost
        return where

    def _equal(self, ids: np.ndarray, keys: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Whether stored key ``ids[m]`` equals candidate ``keys[:, cand[m]]``, for each m."""
        stored = np.take(self.keys, ids, axis=0)  # one row per key: much faster than keys[ids]
        eq = stored[:, 0] == keys[0, cand]
        for w in range(1, self.words):
            eq &= stored[:, w] == keys[w, cand]
        return eq

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The id of each key, or -1 where it was never inserted."""
        mask = (1 << self._bits) - 1
        slot = self._slots(keys)
        out = np.full(keys.shape[1], -1, dtype=np.int64)
        pending = np.arange(keys.shape[1])
        while len(pending):
            s = slot[pending]
            t = self.table[s]
            empty = t == _EMPTY
            occ, to = pending[~empty], t[~empty]
            eq = self._equal(to, keys, occ)
            out[occ[eq]] = to[eq]
            pending = occ[~eq]
            slot[pending] = (slot[pending] + 1) & mask
        return out

    def insert(self, keys: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Insert a batch of candidate keys ``(words, E)``, each with a distinct ``rank``.

        Returns the id of every candidate and, for each new state in id order, the index of the
        candidate that discovered it first (the smallest rank among those that resolve to it).
        The table grows during the batch as new states are claimed, so it is sized by the states
        added, not by the candidates (most of which are states seen before).
        """
        num = keys.shape[1]
        self._reserve_keys(self.size + num)
        base = self.size
        h = hash_keys(keys)
        slot = self._home(h)
        ids = np.full(num, -1, dtype=np.int64)
        claim = np.empty(num, dtype=np.int64)  # table slot of provisional id base + k
        nprov = 0
        pending = np.arange(num)
        first_round = True
        while len(pending):
            mask = (1 << self._bits) - 1
            s = slot if first_round else slot[pending]
            first_round = False
            t = self.table[s]
            empty = t == _EMPTY
            occ, so, to = pending[~empty], s[~empty], t[~empty]
            cand, cs = pending[empty], s[empty]
            eq = self._equal(to, keys, occ)
            ids[occ[eq]] = to[eq]
            moved = occ[~eq]
            slot[moved] = (so[~eq] + 1) & mask
            if not len(cand):
                pending = moved
                continue
            where = self._grow_table(base + nprov + len(cand), base + nprov)
            if where is not None:
                # The table was rebuilt: provisional ids moved, and the candidates still looking
                # start again from their home slots in the larger table.
                claim[:nprov] = where[base:]
                pending = np.concatenate([moved, cand])
                slot[pending] = self._home(h[pending])
                continue
            # Several candidates may want one free slot: one wins, the rest look again next round.
            marker = -2 - np.arange(len(cand), dtype=np.int32)
            self.table[cs] = marker
            won = self.table[cs] == marker
            wc, ws = cand[won], cs[won]
            start = base + nprov
            self.table[ws] = start + np.arange(len(wc), dtype=np.int32)
            self.keys[start: start + len(wc)] = keys[:, wc].T
            self.hashes[start: start + len(wc)] = (h[wc] >> np.uint64(32)).astype(np.uint32)
            ids[wc] = start + np.arange(len(wc))
            claim[nprov: nprov + len(wc)] = ws
            nprov += len(wc)
            pending = np.concatenate([moved, cand[~won]])
        if not nprov:
            return ids, np.empty(0, dtype=np.int64)
        # Number the new states by their first discovery, as a breadth-first queue would.
        fresh = np.flatnonzero(ids >= base)
        prov = ids[fresh] - base
        first = np.full(nprov, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, prov, rank[fresh])
        finder = np.empty(nprov, dtype=np.int64)
        is_first = rank[fresh] == first[prov]
        finder[prov[is_first]] = fresh[is_first]
        order = np.argsort(first)
        inverse = np.empty(nprov, dtype=np.int64)
        inverse[order] = np.arange(nprov)
        self.keys[base: base + nprov] = np.take(self.keys, base + order, axis=0)
        self.hashes[base: base + nprov] = self.hashes[base + order]
        self.table[claim[:nprov][order]] = base + np.arange(nprov, dtype=np.int32)
        ids[fresh] = base + inverse[prov]
        self.size = base + nprov
        return ids, finder[order]
