"""The fourth reading of the spec: terms that print as Promela expressions.

A :class:`Term` stands for a Promela expression (a variable, or an expression built from them).
Python's comparison and arithmetic operators on terms build bigger terms, and the expression layer
(:mod:`flightcheck.spec.expr`) hands ``And``/``Or``/``Not``/``If``/``Sum`` over terms to
:data:`PROMELA` through the ``__spec_terms__`` attribute, so calling ``spec.guard`` or ``spec.apply``
on a list of variable terms prints the spec's own guard and update. Constants fold away as they do
on plain values (``And(False, t)`` is ``False``). A term has no truth value: a Python ``if`` on a
state value in the spec is an error here (as it is for z3), never a silent choice.

For example::

    >>> from flightcheck.spec.expr import And, If, Sum
    >>> x, y = Term("x"), Term("y")
    >>> str(And(x == 1, True, y < x + 2))
    '((x == 1) && (y < (x + 2)))'
    >>> str(If(x > 0, 3, y)), str(Sum([x == 0, 2, y]))
    ('((x > 0) -> 3 : y)', '((x == 0) + y + 2)')
"""

from __future__ import annotations

from typing import Any, Sequence


def literal(x: Any) -> str:
    """A Python constant or a term as Promela text (booleans as ``true``/``false``)."""
    if isinstance(x, Term):
        return x.text
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x) if x >= 0 else f"({x})"
    raise TypeError(f"cannot write {x!r} ({type(x).__name__}) as a Promela expression")


class _Promela:
    """And/Or/Not/If/Sum over terms, folding Python constants."""

    @staticmethod
    def And(xs: Sequence[Any]) -> Any:
        parts = []
        for x in xs:
            if isinstance(x, Term):
                parts.append(x.text)
            elif not x:
                return False
        return Term(parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")") if parts else True

    @staticmethod
    def Or(xs: Sequence[Any]) -> Any:
        parts = []
        for x in xs:
            if isinstance(x, Term):
                parts.append(x.text)
            elif x:
                return True
        return Term(parts[0] if len(parts) == 1 else "(" + " || ".join(parts) + ")") if parts else False

    @staticmethod
    def Not(x: Any) -> Any:
        return Term(f"!{x.text}")

    @staticmethod
    def If(c: Any, a: Any, b: Any) -> Any:
        if isinstance(a, Term) and isinstance(b, Term) and a.text == b.text:
            return a
        return Term(f"({literal(c)} -> {literal(a)} : {literal(b)})")

    @staticmethod
    def Sum(xs: Sequence[Any]) -> Any:
        const = sum(int(x) for x in xs if not isinstance(x, Term))
        parts = [x.text for x in xs if isinstance(x, Term)] + ([str(const)] if const else [])
        return Term(parts[0] if len(parts) == 1 else "(" + " + ".join(parts) + ")")


PROMELA = _Promela()


class Term:
    """A Promela expression; operators build bigger ones."""

    __slots__ = ("text",)
    __spec_terms__ = PROMELA

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Term({self.text!r})"

    def _op(self, op: str, other: Any, reflected: bool = False) -> "Term":
        a, b = (literal(other), self.text) if reflected else (self.text, literal(other))
        return Term(f"({a} {op} {b})")

    def __eq__(self, other: Any) -> "Term":  # type: ignore[override]
        return self._op("==", other)

    def __ne__(self, other: Any) -> "Term":  # type: ignore[override]
        return self._op("!=", other)

    def __lt__(self, other: Any) -> "Term":
        return self._op("<", other)

    def __le__(self, other: Any) -> "Term":
        return self._op("<=", other)

    def __gt__(self, other: Any) -> "Term":
        return self._op(">", other)

    def __ge__(self, other: Any) -> "Term":
        return self._op(">=", other)

    def __add__(self, other: Any) -> "Term":
        return self._op("+", other)

    def __radd__(self, other: Any) -> "Term":
        return self._op("+", other, reflected=True)

    def __sub__(self, other: Any) -> "Term":
        return self._op("-", other)

    def __rsub__(self, other: Any) -> "Term":
        return self._op("-", other, reflected=True)

    def __mul__(self, other: Any) -> "Term":
        return self._op("*", other)

    def __rmul__(self, other: Any) -> "Term":
        return self._op("*", other, reflected=True)

    def __neg__(self) -> "Term":
        return Term(f"(-{self.text})")

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError(f"a Promela term has no truth value ({self.text}): the spec branches on a state "
                        "value with a Python `if`; write it with If/And/Or from flightcheck.spec.expr")

    def __index__(self) -> int:
        raise TypeError(f"a Promela term cannot index a Python sequence ({self.text}); use pick()")
