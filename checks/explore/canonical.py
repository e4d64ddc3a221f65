"""Symmetry reduction over columns: the reference canonical form, computed for a whole batch at once.

:class:`BatchedSymmetry` reads everything from the reference :class:`~flightcheck.spec.symmetry.Symmetry`
of the same spec (its groups of interchangeable requests, the offsets of the request-indexed fields
that form the sort key, those whose values name a request, and the other slots that name one), so
both are derived from the layout's field kinds in the same way and a field added to the layout is
reduced by both with no change here.

The reference sorts each group by a key, most advanced request first, ties kept in index order
(Python's stable ``sorted(..., reverse=True)``). Here each request's key becomes one integer per
state (mixed radix over the slots' ranges), its new position is its rank in the group (how many
members sort before it), and only the rows whose renaming is not the identity are rewritten. The
representatives are therefore exactly the reference's, state for state.

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


class BatchedSymmetry:
    """The reference canonical renaming, applied in place to a list of columns."""

    def __init__(self, spec: Any) -> None:
        sym = spec.symmetry()
        self.reference = sym
        self.groups: list[list[int]] = [list(g) for g in getattr(sym, "groups", [])]
        self.n = sym.n
        self.key_offsets = list(sym.key_offsets)
        self.role_offsets = list(sym.role_offsets)
        self.named_slots = list(sym.named_slots)
        bounds = spec.layout.bounds()
        self._radix = {o: hi - lo + 1 for o, (lo, hi) in enumerate(bounds)}
        self._lo = {o: lo for o, (lo, _hi) in enumerate(bounds)}

    @property
    def is_trivial(self) -> bool:
        """True when no two requests are interchangeable."""
        return not self.groups

    def _key_digits(self, cols: list, i: int) -> list[np.ndarray]:
        """Request ``i``'s sort key as few int64 digits (most significant first)."""
        digits: list[np.ndarray] = []
        acc: Any = None
        span = 1
        parts = [(cols[o + i], self._radix[o + i], self._lo[o + i]) for o in self.key_offsets]
        for o in self.role_offsets:
            v = cols[o + i]
            role = np.where(v == 0, 0, np.where(v == i + 1, 1, 2))
            parts.append((role, 3, 0))
        for v, radix, lo in parts:
            v = v.astype(np.int64) - lo if lo else v.astype(np.int64)
            if span * radix >= _LIMIT:
                digits.append(acc)
                acc, span = None, 1
            acc = v if acc is None else acc * radix + v
            span *= radix
        if acc is not None:
            digits.append(acc)
        return digits

    @staticmethod
    def _before(x: list, y: list, or_equal: bool) -> np.ndarray:
        """Rows where key ``x`` sorts before key ``y`` (larger first; ``or_equal`` for ties)."""
        out = (x[-1] >= y[-1]) if or_equal else (x[-1] > y[-1])
        for a, b in zip(reversed(x[:-1]), reversed(y[:-1])):
            out = (a > b) | ((a == b) & out)
        return out

    def canonicalize(self, cols: list) -> None:
        """Rename every state (row) of ``cols`` to its representative, in place."""
        if not self.groups or not len(cols[0]):
            return
        m = len(cols[0])
        ranks: list[tuple[list[int], list[np.ndarray]]] = []
        moved = np.zeros(m, dtype=bool)
        for group in self.groups:
            keys = [self._key_digits(cols, i) for i in group]
            rank = []
            for a in range(len(group)):
                r = np.zeros(m, dtype=np.int64)
                for b in range(len(group)):
                    if b != a:
                        r += self._before(keys[b], keys[a], or_equal=b < a)
                rank.append(r)
                moved |= r != a
            ranks.append((group, rank))
        rows = np.flatnonzero(moved)
        if len(rows):
            self._rename(cols, rows, ranks)

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
