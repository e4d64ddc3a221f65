"""A tiny expression layer in which the spec's guards and updates are written once.

Every function here evaluates on plain Python values (``bool``/``int``), which is how the explorer
runs the spec, and builds a z3 term as soon as one operand is a z3 expression, which is how the
z3 checks read the same spec symbolically. Python's ``and``/``or``/``if`` cannot be overloaded,
so spec code uses these instead wherever a value may be symbolic.

For example::

    >>> And(1 < 2, Or(False, 3 == 3))
    True
    >>> If(2 > 1, 10, 20)
    10
    >>> Sum([If(x > 0, 1, 0) for x in (3, 0, 5)])
    2
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

try:  # z3 is a hard dependency of the package, but the concrete path must not need it.
    import z3 as _z3
except ImportError:  # pragma: no cover - exercised only in stripped-down installs
    _z3 = None


def is_symbolic(x: Any) -> bool:
    """True when ``x`` is a z3 expression rather than a concrete Python value."""
    return _z3 is not None and isinstance(x, _z3.ExprRef)


_PLAIN = (bool, int)


def _any_symbolic(xs: Sequence[Any]) -> bool:
    # The concrete path is the explorer's hot loop: plain bools and ints are recognised by type alone.
    for x in xs:
        if type(x) not in _PLAIN and is_symbolic(x):
            return True
    return False


def And(*xs: Any) -> Any:
    """Conjunction of booleans or z3 Bool terms; ``And()`` is True."""
    if _any_symbolic(xs):
        return _z3.And(*[_as_bool(x) for x in xs])
    return all(xs)


def Or(*xs: Any) -> Any:
    """Disjunction of booleans or z3 Bool terms; ``Or()`` is False."""
    if _any_symbolic(xs):
        return _z3.Or(*[_as_bool(x) for x in xs])
    return any(xs)


def Not(x: Any) -> Any:
    """Negation of a boolean or a z3 Bool term."""
    return _z3.Not(x) if is_symbolic(x) else not x


def Implies(a: Any, b: Any) -> Any:
    """``a`` implies ``b``."""
    return Or(Not(a), b)


def If(c: Any, a: Any, b: Any) -> Any:
    """``a`` if ``c`` else ``b``; symbolic when any of the three is."""
    if _any_symbolic((c, a, b)):
        if not is_symbolic(c):
            return a if c else b
        return _z3.If(c, _as_term(a), _as_term(b))
    return a if c else b


def Sum(xs: Iterable[Any]) -> Any:
    """Sum of integers or z3 Int terms (0 for an empty sequence)."""
    xs = list(xs)
    if _any_symbolic(xs):
        return _z3.Sum([_as_int(x) for x in xs])
    return sum(xs)


def Min(a: Any, b: Any) -> Any:
    """The smaller of two integers or terms."""
    return If(a <= b, a, b)


def pick(values: Sequence[Any], index: Any, default: Any = 0) -> Any:
    """``values[index]`` where ``index`` may be symbolic (an if-then-else chain over positions)."""
    if not is_symbolic(index):
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
