"""A tiny expression layer in which the spec's guards and updates are written once.

Every function here evaluates on plain Python values (``bool``/``int``), which is how the explorer
runs the spec; it builds a z3 term as soon as one operand is a z3 expression, which is how the z3
checks read the same spec symbolically; and it computes over whole numpy arrays as soon as one
operand is an ``ndarray`` (one element per state of a frontier), which is how the batched explorer
evaluates a guard over thousands of states at once. A fourth reading plugs in without this module
knowing it: an operand whose type has a ``__spec_terms__`` attribute (an object with ``And``, ``Or``,
``Not``, ``If`` and ``Sum``) is handed to it, which is how the Promela export prints the spec.
Python's ``and``/``or``/``if`` cannot be overloaded, so spec code uses these instead wherever a value
may be symbolic, and a Python ``if`` in the spec is only ever on concrete configuration.

For example::

    >>> And(1 < 2, Or(False, 3 == 3))
    True
    >>> If(2 > 1, 10, 20)
    10
    >>> Sum([If(x > 0, 1, 0) for x in (3, 0, 5)])
    2
    >>> import numpy as np
    >>> x = np.array([3, 0, 5], dtype=np.int16)
    >>> If(x > 0, 1, 0).tolist(), Sum([x > 0, x > 4]).tolist()
    ([1, 0, 1], [1, 0, 2])
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Sequence

# numpy and z3 are bound when first seen in sys.modules, never imported here: an array operand can only
# exist once numpy is loaded, and a z3 term once z3 is, so the concrete path (the explorer, `validate`,
# the command line) costs neither import (issue 44: start-up).
_np: Any = None
_z3: Any = None


class _Unseen:
    """Stands for ``numpy.ndarray`` / ``z3.ExprRef`` until the library is loaded: no value has this type."""


_NDARRAY: type = _Unseen
_EXPRREF: type = _Unseen
_UNBOUND = True  # one of the two libraries is not bound yet


def _bind() -> None:
    """Bind numpy and z3 if they have been imported (by whoever builds arrays or terms)."""
    global _np, _NDARRAY, _z3, _EXPRREF, _UNBOUND
    if _np is None and (np := sys.modules.get("numpy")) is not None and hasattr(np, "ndarray"):
        _np, _NDARRAY = np, np.ndarray
    if _z3 is None and (z3 := sys.modules.get("z3")) is not None and hasattr(z3, "ExprRef"):
        _z3, _EXPRREF = z3, z3.ExprRef
    _UNBOUND = _np is None or _z3 is None


def is_symbolic(x: Any) -> bool:
    """True when ``x`` is a z3 expression rather than a concrete Python value."""
    if _z3 is None:
        _bind()
    return isinstance(x, _EXPRREF)


_PLAIN = (bool, int)


class _Z3:
    """The symbolic reading: z3 terms."""

    @staticmethod
    def And(xs: Sequence[Any]) -> Any:
        return _z3.And(*[_as_bool(x) for x in xs])

    @staticmethod
    def Or(xs: Sequence[Any]) -> Any:
        return _z3.Or(*[_as_bool(x) for x in xs])

    @staticmethod
    def Not(x: Any) -> Any:
        return _z3.Not(x)

    @staticmethod
    def If(c: Any, a: Any, b: Any) -> Any:
        return _z3.If(c, _as_term(a), _as_term(b))

    @staticmethod
    def Sum(xs: Sequence[Any]) -> Any:
        return _z3.Sum([_as_int(x) for x in xs])


class _Numpy:
    """The batched reading: one array element per state; plain operands broadcast.

    Results stay in the arrays' small integer type (Python constants adopt it), and booleans count
    as 0/1 in sums, as they do in Python (numpy would add two bool arrays as a logical or).
    """

    @staticmethod
    def And(xs: Sequence[Any]) -> Any:
        out = True
        for x in xs:
            if type(x) is _NDARRAY:
                out = _as_mask(x) if out is True else _np.logical_and(out, x)
            elif not x:
                return False
        return out

    @staticmethod
    def Or(xs: Sequence[Any]) -> Any:
        out = False
        for x in xs:
            if type(x) is _NDARRAY:
                out = _as_mask(x) if out is False else _np.logical_or(out, x)
            elif x:
                return True
        return out

    @staticmethod
    def Not(x: Any) -> Any:
        return _np.logical_not(x)

    @staticmethod
    def If(c: Any, a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int and -32768 <= min(a, b) and max(a, b) <= 32767:
            a, b = _np.int16(a), _np.int16(b)  # two constants: keep the columns' small type
        return _np.where(c, a, b)

    @staticmethod
    def Sum(xs: Sequence[Any]) -> Any:
        out: Any = 0
        for x in xs:
            if type(x) is _NDARRAY and x.dtype == _np.bool_:
                x = x.astype(_np.int16)
            out = out + x
        return out


def _as_mask(x: Any) -> Any:
    return x if x.dtype == _np.bool_ else x != 0


_Z3_KIND, _NUMPY_KIND = _Z3(), _Numpy()


def _kind(xs: Sequence[Any]) -> Any:
    """The reading the operands call for: None for plain values, else the object that evaluates them."""
    # The concrete path is the explorer's hot loop: plain bools and ints are recognised by type alone.
    for x in xs:
        if type(x) not in _PLAIN:
            if _UNBOUND:
                _bind()
            if type(x) is _NDARRAY:
                return _NUMPY_KIND
            if is_symbolic(x):
                return _Z3_KIND
            terms = getattr(type(x), "__spec_terms__", None)
            if terms is not None:
                return terms
    return None


def And(*xs: Any) -> Any:
    """Conjunction of booleans, z3 Bool terms or boolean arrays; ``And()`` is True."""
    k = _kind(xs)
    if k is None:
        return all(xs)
    return k.And(xs)


def Or(*xs: Any) -> Any:
    """Disjunction of booleans, z3 Bool terms or boolean arrays; ``Or()`` is False."""
    k = _kind(xs)
    if k is None:
        return any(xs)
    return k.Or(xs)


def Not(x: Any) -> Any:
    """Negation of a boolean, a z3 Bool term or a boolean array."""
    if type(x) in _PLAIN:
        return not x
    k = _kind((x,))
    return not x if k is None else k.Not(x)


def Implies(a: Any, b: Any) -> Any:
    """``a`` implies ``b``."""
    return Or(Not(a), b)


def If(c: Any, a: Any, b: Any) -> Any:
    """``a`` if ``c`` else ``b``; symbolic (or an array) when any of the three is."""
    k = _kind((c, a, b))
    if k is None or _kind((c,)) is None:
        return a if c else b
    return k.If(c, a, b)


def Sum(xs: Iterable[Any]) -> Any:
    """Sum of integers, z3 Int terms or integer arrays, booleans counting 0/1 (0 when empty)."""
    xs = list(xs)
    k = _kind(xs)
    if k is None:
        return sum(xs)
    return k.Sum(xs)


def Min(a: Any, b: Any) -> Any:
    """The smaller of two integers or terms."""
    return If(a <= b, a, b)


def pick(values: Sequence[Any], index: Any, default: Any = 0) -> Any:
    """``values[index]`` where ``index`` may be symbolic (an if-then-else chain over positions)."""
    if _kind((index,)) is None:
        return values[index] if 0 <= index < len(values) else default
    out = default
    for k in range(len(values) - 1, -1, -1):
        out = If(index == k, values[k], out)
    return out


def _as_int(x: Any) -> Any:
    """Booleans count as 0/1 in sums, concrete or symbolic."""
    if is_symbolic(x):
        return _z3.If(x, 1, 0) if _z3.is_bool(x) else x
    return _z3.IntVal(int(x))


def _as_bool(x: Any) -> Any:
    return x if is_symbolic(x) else _z3.BoolVal(bool(x))


def _as_term(x: Any) -> Any:
    if is_symbolic(x):
        return x
    if isinstance(x, bool):
        return _z3.BoolVal(x)
    return _z3.IntVal(x)
