"""States packed into fixed-width integer keys, and back into columns, for the batched explorer.

A :class:`StateCodec` is derived from a layout alone: each slot gets the bit width its range needs
(``layout.bounds()``), and the slots fill 64-bit words in order, the first slot in the most
significant bits of word 0. So a state becomes ``words`` unsigned 64-bit integers, and the order of
keys (word 0 first) is the lexicographic order of the state tuples, which is how the batched explorer
breaks ties exactly as the reference explorer does (``min`` over tuples).

A frontier is handled as columns: one small-integer array per slot, one element per state. That is
the form :func:`flightcheck.spec.expr` evaluates the spec's guards and updates on.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> codec = StateCodec(spec.layout)
    >>> s = spec.initial()
    >>> keys = codec.pack_states([s])
    >>> codec.unpack_states(keys) == [s]
    True
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

_U64 = np.uint64


class StateCodec:
    """Bit layout of one scenario's states: which word and shift each slot occupies."""

    def __init__(self, layout: Any, bounds: Sequence[tuple[int, int]] | None = None) -> None:
        bounds = list(bounds) if bounds is not None else layout.bounds()
        self.layout = layout
        self.bounds = bounds
        self.names = layout.slot_names()
        self.size = len(bounds)
        self.lo = np.array([lo for lo, _hi in bounds], dtype=np.int64)
        self.hi = np.array([hi for _lo, hi in bounds], dtype=np.int64)
        widths = [max(1, int(hi - lo).bit_length()) for lo, hi in bounds]
        if max(widths) > 62:
            raise ValueError(f"slot {self.names[int(np.argmax(widths))]} needs more than 62 bits")
        self.word: list[int] = []
        self.shift: list[int] = []
        w, free = 0, 64
        for width in widths:
            if width > free:
                w, free = w + 1, 64
            free -= width
            self.word.append(w)
            self.shift.append(free)
        self.words = w + 1
        self.widths = widths
        self.bits = sum(widths)
        self._mask = [_U64((1 << width) - 1) for width in widths]
        self._shift = [_U64(s) for s in self.shift]
        self._lo = [int(x) for x in self.lo]
        # The columns' type: small, so that a frontier stays compact and arithmetic stays fast.
        big = max(abs(int(self.lo.min())), int(self.hi.max()))
        self.dtype = np.int16 if big < 2**14 else np.int32 if big < 2**30 else np.int64
        # Per word, the bits each slot occupies (to overwrite a few slots of a parent's key).
        self.slot_bits = [_U64(((1 << width) - 1) << s) for width, s in zip(widths, self.shift)]

    # ------------------------------------------------------------------ columns <-> keys
    def pack(self, cols: Sequence[Any], n: int) -> np.ndarray:
        """Keys ``(words, n)`` of ``n`` states given as columns (arrays, or scalars that broadcast)."""
        out = np.zeros((self.words, n), dtype=_U64)
        for j, col in enumerate(cols):
            self._or_into(out[self.word[j]], j, col)
        return out

    def repack(self, parent_keys: np.ndarray, changed: dict[int, Any], *, in_place: bool = False) -> np.ndarray:
        """The keys of states equal to ``parent_keys`` except in the ``changed`` slots (written over
        ``parent_keys`` itself with ``in_place``)."""
        out = parent_keys if in_place else parent_keys.copy()
        clear = [_U64(0)] * self.words
        for j in changed:
            clear[self.word[j]] |= self.slot_bits[j]
        for w in range(self.words):
            if clear[w]:
                out[w] &= ~clear[w]
        for j, col in changed.items():
            self._or_into(out[self.word[j]], j, col)
        return out

    def _or_into(self, word: np.ndarray, j: int, col: Any) -> None:
        lo = self._lo[j]
        if type(col) is np.ndarray:
            v = col.astype(_U64) if lo == 0 else (col.astype(np.int64) - lo).astype(_U64)
            word |= v << self._shift[j]
        else:
            v = int(col) - lo
            if v:
                word |= _U64(v << self.shift[j])

    def unpack(self, keys: np.ndarray) -> list[np.ndarray]:
        """The columns of the states whose keys are ``keys`` (one array per slot)."""
        cols = []
        for j in range(self.size):
            v = (keys[self.word[j]] >> self._shift[j]) & self._mask[j]
            col = v.astype(self.dtype)
            if self._lo[j]:
                col += self._lo[j]
            cols.append(col)
        return cols

    def widened(self, slot: int, lo: int, hi: int) -> "StateCodec":
        """A codec whose slot ``slot`` also holds ``lo .. hi`` (with room to spare: the range grows to
        twice what is needed, so that a slot that keeps growing is widened only a few times)."""
        bounds = list(self.bounds)
        old_lo, old_hi = bounds[slot]
        new_lo, new_hi = min(old_lo, lo), max(old_hi, hi)
        span = new_hi - new_lo + 1
        if new_hi > old_hi:
            new_hi = new_lo + 2 * span - 1
        if new_lo < old_lo:
            new_lo = new_hi - 2 * span + 1
        bounds[slot] = (new_lo, new_hi)
        return StateCodec(self.layout, bounds)

    # ------------------------------------------------------------------ checks and plain tuples
    def out_of_bounds(self, j: int, col: Any) -> bool:
        """True when some value of slot ``j`` leaves the layout's range (and would not pack)."""
        lo, hi = self._lo[j], int(self.hi[j])
        if type(col) is np.ndarray:
            if not col.size:
                return False
            if lo == 0 and col.dtype == np.int16:
                return int(col.view(np.uint16).max()) > hi  # a negative value reads as >= 2**15
            return int(col.min()) < lo or int(col.max()) > hi
        return not lo <= int(col) <= hi

    def pack_states(self, states: Sequence[Sequence[int]]) -> np.ndarray:
        """Keys of plain state tuples."""
        arr = np.array(states, dtype=np.int64).reshape(len(states), self.size)
        return self.pack([arr[:, j] for j in range(self.size)], len(states))

    def unpack_states(self, keys: np.ndarray) -> list[tuple[int, ...]]:
        """Plain state tuples of keys ``(words, n)``."""
        cols = self.unpack(keys)
        if not cols:
            return []
        rows = np.stack(cols, axis=1).tolist()
        return [tuple(r) for r in rows]


def hash_keys(keys: np.ndarray) -> np.ndarray:
    """A well-mixed 64-bit hash of each key (column) of ``keys`` ``(words, n)``."""
    with np.errstate(over="ignore"):
        h = np.full(keys.shape[1], _U64(0x243F6A8885A308D3), dtype=_U64)
        for w in range(keys.shape[0]):
            h ^= keys[w]
            h *= _U64(0x9E3779B97F4A7C15)
            h ^= h >> _U64(32)
        h *= _U64(0xD6E8FEB86659FD93)
        h ^= h >> _U64(29)
    return h
