"""The spec's own guards and updates, evaluated over a whole batch of states at once.

:class:`BatchedTransitions` is the third reading of the spec (after the plain explorer and the z3
checks): it calls ``spec.guard(columns, action)`` and ``spec.apply(columns, action)`` with one numpy
array per slot, one element per state, and :mod:`flightcheck.spec.expr` turns every ``And``, ``If``
or ``Sum`` into array operations. Nothing here names a field or an action: the actions come from
``spec.actions``, the slots from the layout, and a slot the update leaves alone comes back as the
very array it was given, so only the slots an action changes are packed again. A value outside the
range a slot is packed with raises :class:`SpecRangeError` naming the slot and the action; the
explorer then widens that slot and carries on (a buggy design may leave the layout's ranges, and
the reference explorer follows it there).

Each action's update is given only the slots it reads (gathered for the states where it is enabled);
the others are placeholders that raise on any use. Which slots an update reads is found once, by
running it on placeholders and adding every slot whose placeholder is touched until it runs through
(a Python ``if`` in the spec is only ever on configuration, so the slots read do not depend on the
state). An update that cannot run that way simply gets every slot.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> bt = BatchedTransitions(spec)
    >>> [[str(a) for a, _t in succ] for succ in bt.successors([spec.initial()])]
    [['arrive(0)', 'arrive(1)']]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from flightcheck.checks.explore.packing import StateCodec


class SpecRangeError(ValueError):
    """An update produced a value outside the range its slot is packed with (the layout's bounds,
    unless the explorer has widened them): ``slot``, and the ``low`` and ``high`` values seen."""

    def __init__(self, message: str, slot: int, low: int, high: int) -> None:
        super().__init__(message)
        self.slot, self.low, self.high = slot, low, high


def as_mask(value: Any, n: int) -> np.ndarray:
    """A guard's or predicate's value as a boolean array of length ``n`` (scalars broadcast)."""
    if type(value) is np.ndarray and value.shape == (n,):
        return value if value.dtype == np.bool_ else value != 0
    return np.full(n, bool(value))


class _UnreadUsed(Exception):
    """A placeholder for a slot was used: the update reads that slot (``slot``)."""

    def __init__(self, slot: int) -> None:
        super().__init__(slot)
        self.slot = slot  # read by _slots_read: an update that reads a slot only through its edit object


class _Unread:
    """Stands for a slot an update does not read; any use raises :class:`_UnreadUsed` naming it."""

    __slots__ = ("slot",)

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def _used(self, *args: Any, **kwargs: Any) -> Any:
        raise _UnreadUsed(self.slot)

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _used  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __neg__ = _used
    __bool__ = __int__ = __index__ = __array__ = __array_ufunc__ = __array_function__ = _used
    __hash__ = object.__hash__


class _Recording(list):
    """The slots read through a view: every ``vals[j]`` is noted."""

    def __init__(self, vals: Sequence[Any]) -> None:
        super().__init__(vals)
        self.read: set[int] = set()

    def __getitem__(self, j: Any) -> Any:
        self.read.add(j)
        return super().__getitem__(j)


class BatchedTransitions:
    """Guards, successors and predicates of a spec over columns of states."""

    def __init__(self, spec: Any, codec: StateCodec | None = None) -> None:
        self.spec = spec
        self.codec = codec or StateCodec(spec.layout)
        self.actions = tuple(spec.actions)
        self.engine = [k for k, a in enumerate(self.actions) if spec.is_engine(a)]
        self.progress = [k for k, a in enumerate(self.actions) if spec.is_progress(a)]
        self._unread = [_Unread(j) for j in range(self.codec.size)]
        self.reads = [self._slots_read(a) for a in self.actions]

    def _slots_read(self, action: Any) -> list[int]:
        """The slots ``action``'s update reads (every slot if that cannot be told)."""
        every = list(range(self.codec.size))
        trial = [np.full(2, v, dtype=self.codec.dtype) for v in self.spec.initial()]
        rec = _Recording(trial)
        try:
            self.spec.apply(rec, action)
        except Exception:
            return every
        read = set(rec.read)
        while True:
            vals = [trial[j] if j in read else self._unread[j] for j in every]
            try:
                self.spec.apply(vals, action)
                return sorted(read)
            except _UnreadUsed as e:
                read.add(e.slot)
            except Exception:
                return every

    # ------------------------------------------------------------------ reading a batch
    def guards(self, cols: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One boolean mask per action (in ``spec.actions`` order) over the batch (read-only: a
        guard that folds to a constant gets one shared array)."""
        n = len(cols[0])
        const = {True: None, False: None}
        out = []
        for a in self.actions:
            g = self.spec.guard(cols, a)
            if type(g) is not np.ndarray or g.shape != (n,):
                g = bool(g)
                if const[g] is None:
                    const[g] = np.full(n, g)
                g = const[g]
            out.append(g if g.dtype == np.bool_ else g != 0)
        return out

    def holds(self, prop: Any, cols: Sequence[np.ndarray]) -> np.ndarray:
        """A property's (or any ``holds``-predicate's) value on every state of the batch."""
        return as_mask(prop.holds(self.spec, cols), len(cols[0]))

    def live(self, cols: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Per request, whether it is live, on every state of the batch."""
        view = self.spec.view(cols)
        return [as_mask(self.spec.is_live(view, i), len(cols[0])) for i in range(self.spec.num_requests)]

    # ------------------------------------------------------------------ successors
    def apply(self, cols: Sequence[np.ndarray], k: int, rows: np.ndarray) -> tuple[list, dict[int, Any]]:
        """Action ``k`` on the states ``rows`` of the batch: their columns and the slots it changed."""
        sub = list(self._unread)
        for j in self.reads[k]:
            sub[j] = cols[j][rows]
        new = self.spec.apply(sub, self.actions[k])
        changed = {j: v for j, (v, old) in enumerate(zip(new, sub)) if v is not old}
        for j, v in changed.items():
            if self.codec.out_of_bounds(j, v):
                lo, hi = int(self.codec.lo[j]), int(self.codec.hi[j])
                seen = (int(np.min(v)), int(np.max(v)))
                raise SpecRangeError(f"{self.actions[k]} sets {self.codec.names[j]} to {seen[0]}..{seen[1]}, "
                                     f"outside its range {lo}..{hi}", j, *seen)
        return sub, changed

    def expand(self, keys: np.ndarray, cols: Sequence[np.ndarray], masks: Sequence[np.ndarray],
               canonicalize: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every enabled (state, action) pair of the batch as candidate keys ``(words, E)``, with the
        row of its parent and its action index, grouped by action.

        ``canonicalize`` (a :class:`~flightcheck.checks.explore.canonical.BatchedSymmetry`) renames
        every successor to its representative before packing.
        """
        parts_rows, parts_act, parts = [], [], []
        for k, mask in enumerate(masks):
            rows = np.flatnonzero(mask)
            if not len(rows):
                continue
            sub, changed = self.apply(cols, k, rows)
            parts_rows.append(rows)
            parts_act.append(np.full(len(rows), k, dtype=np.int64))
            if canonicalize is None:
                parts.append(self.codec.repack(keys[:, rows], changed, in_place=True))
            else:
                parts.append([_full(changed[j], len(rows), self.codec.dtype) if j in changed
                              else sub[j] if type(sub[j]) is np.ndarray else cols[j][rows]
                              for j in range(len(sub))])
        words = self.codec.words
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return np.empty((words, 0), dtype=np.uint64), empty, empty
        rows, act = np.concatenate(parts_rows), np.concatenate(parts_act)
        if canonicalize is None:
            return np.concatenate(parts, axis=1), rows, act
        new_cols = [np.concatenate([p[j] for p in parts]) for j in range(len(parts[0]))]
        canonicalize.canonicalize(new_cols)
        return self.codec.pack(new_cols, len(rows)), rows, act

    def successors(self, states: Sequence[Sequence[int]]) -> list[list[tuple[Any, tuple[int, ...]]]]:
        """For each plain state, its enabled actions and successors in action order, computed in one
        batch (the form the tests compare with ``spec.successors``); slots are widened as needed."""
        arr = np.array(states, dtype=np.int64).reshape(len(states), self.codec.size)
        bounds = [(min(lo, int(arr[:, j].min(initial=lo))), max(hi, int(arr[:, j].max(initial=hi))))
                  for j, (lo, hi) in enumerate(self.codec.bounds)]
        bt = BatchedTransitions(self.spec, StateCodec(self.spec.layout, bounds))
        while True:
            keys = bt.codec.pack_states(states)
            cols = bt.codec.unpack(keys)
            try:
                cand, rows, act = bt.expand(keys, cols, bt.guards(cols))
                break
            except SpecRangeError as e:
                bt = BatchedTransitions(self.spec, bt.codec.widened(e.slot, e.low, e.high))
        out: list[list[tuple[Any, tuple[int, ...]]]] = [[] for _ in states]
        succ = bt.codec.unpack_states(cand)
        for e in np.lexsort((act, rows)).tolist():
            out[rows[e]].append((self.actions[act[e]], succ[e]))
        return out


def _full(v: Any, n: int, dtype: Any) -> np.ndarray:
    """A writable array of length ``n`` for a column value (a scalar broadcasts)."""
    if type(v) is np.ndarray and v.shape == (n,):
        return v
    return np.full(n, v, dtype=dtype)
