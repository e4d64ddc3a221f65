"""Symmetry reduction over columns: the reference canonical form, computed for a whole batch at once.

:class:`BatchedSymmetry` reads everything from the reference :class:`~flightcheck.spec.symmetry.Symmetry`
of the same spec (its groups of interchangeable requests, the offsets of the request-indexed fields
that form the sort key, those whose values name a request, and the other slots that name one), so
both are derived from the layout's field kinds in the same way and a field added to the layout is
reduced by both with no change here.

The reference sorts each group by a key, most advanced request first, ties kept in index order
(Python's stable ``sorted(..., reverse=True)``). A request's key is its own slots and its role in
each naming field (none, itself, another), and, for a *linked* request (one that names another or is
named), the keys of the requests it names. Requests that still tie and are linked are tried in every
order and the smallest renamed state is kept. Here the key becomes a few integers per state (mixed
radix over the slots' ranges), a request's new position is its rank in the group (how many members
sort before it), and only the rows whose renaming is not the identity are rewritten. Ties of linked
requests are settled without trying orders where the state is symmetric in them (swapping two tied
requests leaves it unchanged: then every order gives the same state, as for the followers of one
flight); the rare rows where it is not are handed to the reference itself. The representatives are
therefore exactly the reference's, state for state.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> from flightcheck.checks.explore.packing import StateCodec
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> t = spec.apply(spec.initial(), Action("arrive", 1))
    >>> codec = StateCodec(spec.layout)
    >>> cols = codec.unpack(codec.pack_states([t]))
    >>> BatchedSymmetry(spec).canonicalize(cols)
    >>> codec.unpack_states(codec.pack(cols, 1)) == [spec.symmetry().canonical(t)[0]]
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

_LIMIT = 1 << 62


def _digits(parts: list[tuple[np.ndarray, int]]) -> list[np.ndarray]:
    """Values with their radices, most significant first, as few int64 digits as fit."""
    digits: list[np.ndarray] = []
    acc: Any = None
    span = 1
    for v, radix in parts:
        if acc is not None and span * radix >= _LIMIT:
            digits.append(acc)
            acc, span = None, 1
        acc = v if acc is None else acc * radix + v
        span *= radix
    if acc is not None:
        digits.append(acc)
    return digits


def _before(x: list, y: list, or_equal: bool) -> np.ndarray:
    """Rows where digit key ``x`` sorts before ``y`` (larger first; ``or_equal`` for ties)."""
    out = (x[-1] >= y[-1]) if or_equal else (x[-1] > y[-1])
    for a, b in zip(reversed(x[:-1]), reversed(y[:-1])):
        out = (a > b) | ((a == b) & out)
    return out


class BatchedSymmetry:
    """The reference canonical renaming, applied in place to a list of columns."""

    def __init__(self, spec: Any, bounds: Any = None) -> None:
        sym = spec.symmetry()
        self.reference = sym
        self.groups: list[list[int]] = [list(g) for g in getattr(sym, "groups", [])]
        self.n = sym.n
        self.key_offsets = list(sym.key_offsets)
        self.role_offsets = list(sym.role_offsets)
        self.named_slots = list(sym.named_slots)
        bounds = bounds if bounds is not None else spec.layout.bounds()
        self._radix = {o: hi - lo + 1 for o, (lo, hi) in enumerate(bounds)}
        self._lo = {o: lo for o, (lo, _hi) in enumerate(bounds)}

    @property
    def is_trivial(self) -> bool:
        """True when no two requests are interchangeable."""
        return not self.groups

    # ------------------------------------------------------------------ keys
    def _base(self, cols: list, i: int) -> list[tuple[np.ndarray, int]]:
        """Request ``i``'s own slots, then its role in each naming field (0 none, 1 itself, 2 another)."""
        parts = []
        for o in self.key_offsets:
            v = cols[o + i].astype(np.int64)
            parts.append((v - self._lo[o + i] if self._lo[o + i] else v, self._radix[o + i]))
        for o in self.role_offsets:
            v = cols[o + i]
            parts.append((np.where(v == 0, 0, np.where(v == i + 1, 1, 2)).astype(np.int64), 3))
        return parts

    def _keys(self, cols: list, m: int) -> tuple[list[list[np.ndarray]], list[np.ndarray]]:
        """Every request's full key (as digits) and whether it is linked, per row."""
        n = self.n
        base = [self._base(cols, i) for i in range(n)]
        base_digits = [_digits(b) for b in base]
        span = [r for _v, r in base[0]]
        linked = [np.zeros(m, dtype=bool) for _ in range(n)]
        for o in self.role_offsets:
            for i in range(n):
                v = cols[o + i]
                out = (v != 0) & (v != i + 1)
                linked[i] |= out
                for t in range(n):
                    if t != i:
                        linked[t] |= out & (v == t + 1)
        for k in self.named_slots:
            v = cols[k]
            for t in range(n):
                linked[t] |= v == t + 1
        stacked = [np.stack([base_digits[i][d] for i in range(n)]) for d in range(len(base_digits[0]))]
        keys = []
        for i in range(n):
            parts = [(p, r) for p, r in base[i]] + [(linked[i].astype(np.int64), 2)]
            for o in self.role_offsets:
                v = cols[o + i].astype(np.int64)
                present = linked[i] & (v != 0) & (v != i + 1)
                target = np.where(present, v - 1, 0)
                parts.append((present.astype(np.int64), 2))
                for d, block in enumerate(stacked):
                    digit = np.take_along_axis(block, target[None], axis=0)[0]
                    radix = int(np.prod(span)) if len(stacked) == 1 else _LIMIT
                    parts.append((np.where(present, digit, 0), radix))
            keys.append(_digits(parts))
        return keys, linked

    # ------------------------------------------------------------------ canonical forms
    def canonicalize(self, cols: list) -> None:
        """Rename every state (row) of ``cols`` to its representative, in place."""
        if not self.groups or not len(cols[0]):
            return
        m = len(cols[0])
        keys, linked = self._keys(cols, m)
        ranks: list[tuple[list[int], list[np.ndarray]]] = []
        moved = np.zeros(m, dtype=bool)
        unsettled = np.zeros(m, dtype=bool)
        for group in self.groups:
            gk = [keys[i] for i in group]
            rank = []
            for a in range(len(group)):
                r = np.zeros(m, dtype=np.int64)
                for b in range(len(group)):
                    if b != a:
                        r += _before(gk[b], gk[a], or_equal=b < a)
                rank.append(r)
                moved |= r != a
            ranks.append((group, rank))
            unsettled |= self._asymmetric_ties(cols, group, gk, rank, linked, m)
        rows = np.flatnonzero(moved & ~unsettled)
        if len(rows):
            self._rename(cols, rows, ranks)
        hard = np.flatnonzero(unsettled)
        if len(hard):
            # Tied linked requests the state is not symmetric in: the reference tries their orders.
            canon = [self.reference.canonical(tuple(int(c[r]) for c in cols))[0] for r in hard.tolist()]
            arr = np.array(canon, dtype=np.int64)
            for j, c in enumerate(cols):
                c[hard] = arr[:, j]

    def _asymmetric_ties(self, cols: list, group: list[int], gk: list, rank: list, linked: list,
                         m: int) -> np.ndarray:
        """Rows where two linked requests of ``group`` tie on their keys and swapping them changes the
        state (so the order they are tried in matters)."""
        g = len(group)
        at = np.arange(m)
        who = np.empty((g, m), dtype=np.int64)  # who[r]: the position in group of the request ranked r
        for a in range(g):
            who[rank[a], at] = a
        gids = np.asarray(group)
        bad = np.zeros(m, dtype=bool)
        digits = [np.stack([gk[a][d] for a in range(g)]) for d in range(len(gk[0]))]
        link = np.stack([linked[i] for i in group])
        for r in range(g - 1):
            a, b = who[r], who[r + 1]
            tie = link[a, at].copy()
            for block in digits:
                tie &= block[a, at] == block[b, at]
            rows = np.flatnonzero(tie)
            if len(rows):
                bad[rows] |= ~self._swap_invariant(cols, rows, gids[a[rows]], gids[b[rows]])
        return bad

    def _swap_invariant(self, cols: list, rows: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether swapping requests ``a`` and ``b`` (per row) leaves the state unchanged. Their own
        slots are equal (they tie); what can differ is who names them, and whom they name."""
        k, n = len(rows), self.n
        at = np.arange(k)
        ok = np.ones(k, dtype=bool)

        def swapped(v: np.ndarray) -> np.ndarray:
            return np.where(v == a + 1, b + 1, np.where(v == b + 1, a + 1, v))

        for o in self.role_offsets:
            block = np.stack([cols[o + i][rows] for i in range(n)]).astype(np.int64)
            va, vb = block[a, at], block[b, at]
            ok &= (swapped(vb) == va) & (swapped(va) == vb)
            for i in range(n):
                other = (i != a) & (i != b)
                ok &= ~other | ((block[i] != a + 1) & (block[i] != b + 1))
        for s in self.named_slots:
            v = cols[s][rows].astype(np.int64)
            ok &= (v != a + 1) & (v != b + 1)
        return ok

    def _rename(self, cols: list, rows: np.ndarray, ranks: list) -> None:
        k, n = len(rows), self.n
        at = np.arange(k)
        # perm[i]: the new index of request i in each row (identity outside the groups);
        # source[t]: the old index of the request that lands on index t.
        perm = [np.full(k, i, dtype=np.int64) for i in range(n)]
        for group, rank in ranks:
            g = np.asarray(group)
            for a, i in enumerate(group):
                perm[i] = g[rank[a][rows]]
        source = np.empty((n, k), dtype=np.int64)
        for i in range(n):
            source[perm[i], at] = i
        table = np.zeros((n + 1, k), dtype=np.int64)
        for i in range(n):
            table[i + 1] = perm[i] + 1
        members = sorted({i for group, _r in ranks for i in group})

        def renamed(v: np.ndarray) -> np.ndarray:
            return table[v.astype(np.int64), at].astype(v.dtype)

        for o in self.key_offsets:
            block = np.stack([cols[o + i][rows] for i in range(n)])
            for t in members:
                cols[o + t][rows] = block[source[t], at]
        for o in self.role_offsets:
            block = np.stack([renamed(cols[o + i][rows]) for i in range(n)])
            for t in range(n):
                cols[o + t][rows] = block[source[t], at]
        for s in self.named_slots:
            cols[s][rows] = renamed(cols[s][rows])
