"""The vocabulary of the relational model, read two ways: over finite domains, or over z3's sorts.

The relational model (:mod:`flightcheck.checks.unbounded.model`) is written once against a *signature*:
three sorts (``R`` requests, which also name flights, as in the finite spec; ``C`` prompt classes; ``P``
pages), the static structure of the prompts (``cls(r)``: a request's class; ``pcls(k)``: the class whose
path holds page ``k``; ``lt(a, b)``: page ``a`` comes before page ``b`` on that path), the running
capacity, and quantifiers ``forall(sort, fn)`` / ``exists(sort, fn)``.

- :class:`Finite` reads it over ``range(n)`` domains with plain Python values, the way the explorer
  runs the finite spec: the drift check instantiates the model at a scenario's size this way.
- :class:`Symbolic` reads it over z3 uninterpreted sorts, with ``cls``, ``pcls`` and ``lt`` as
  uninterpreted functions constrained only by :meth:`Symbolic.axioms` (``lt`` a strict order, total on
  each class's path; the capacity at least 1): a proof under these axioms holds for every number of
  requests, classes and pages, every prompt length and every capacity.

Pages of different classes are disjoint (``pcls`` is a function): prompt trees, where classes share
pages, are not modelled.

For example::

    >>> sig = Finite(num_requests=2, req_class=(0, 0), page_class=(0, 0), capacity=2)
    >>> sig.forall("R", lambda x: sig.cls(x) == 0), sig.lt(0, 1), sig.lt(1, 0)
    (True, True, False)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import z3

SORTS = ("R", "C", "P")
SORT_NAMES = {"R": "request", "C": "class", "P": "page"}


class Finite:
    """The model over finite domains: requests ``0..n-1``, classes ``0..c-1``, pages ``0..p-1``.

    ``page_class[k]`` is the class of page ``k``; pages of a class come in path order by index."""

    symbolic = False

    def __init__(self, num_requests: int, req_class: Sequence[int], page_class: Sequence[int], capacity: Any,
                 num_classes: int | None = None) -> None:
        self.req_class = tuple(req_class)
        self.page_class = tuple(page_class)
        classes = num_classes if num_classes is not None else max(self.req_class, default=-1) + 1
        self.domain = {"R": range(num_requests), "C": range(classes), "P": range(len(self.page_class))}
        self.capacity = capacity

    def cls(self, x: int) -> int:
        """The prompt class of request ``x``."""
        return self.req_class[x]

    def pcls(self, k: int) -> int:
        """The class whose path holds page ``k``."""
        return self.page_class[k]

    def lt(self, a: int, b: int) -> bool:
        """Page ``a`` comes before page ``b`` on their class's path."""
        return self.page_class[a] == self.page_class[b] and a < b

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        """``fn`` holds for every element of ``sort``."""
        return all(fn(x) for x in self.domain[sort])

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        """``fn`` holds for some element of ``sort``."""
        return any(fn(x) for x in self.domain[sort])


class Symbolic:
    """The model over z3 uninterpreted sorts: a proof here holds for every finite size."""

    symbolic = True

    def __init__(self) -> None:
        self.sorts = {s: z3.DeclareSort(SORT_NAMES[s].capitalize()) for s in SORTS}
        r, c, p = (self.sorts[s] for s in SORTS)
        self._cls = z3.Function("cls", r, c)
        self._pcls = z3.Function("pcls", p, c)
        self._lt = z3.Function("lt", p, p, z3.BoolSort())
        self.capacity = z3.Int("capacity")
        self._fresh = 0

    def cls(self, x: Any) -> Any:
        """The prompt class of request ``x`` (a term)."""
        return self._cls(x)

    def pcls(self, k: Any) -> Any:
        """The class whose path holds page ``k`` (a term)."""
        return self._pcls(k)

    def lt(self, a: Any, b: Any) -> Any:
        """Page ``a`` comes before page ``b`` (a term)."""
        return self._lt(a, b)

    def var(self, sort: str, hint: str = "") -> z3.ExprRef:
        """A fresh constant of ``sort`` (bound variables, action arguments)."""
        self._fresh += 1
        return z3.Const(f"{hint or sort.lower()}{self._fresh}", self.sorts[sort])

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        """``ForAll x: sort. fn(x)``."""
        x = self.var(sort)
        return z3.ForAll([x], _bool(fn(x)))

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> Any:
        """``Exists x: sort. fn(x)``."""
        x = self.var(sort)
        return z3.Exists([x], _bool(fn(x)))

    def axioms(self) -> list[Any]:
        """What every size satisfies: ``lt`` is a strict order, total on each class's path, and the
        capacity is at least 1."""
        lt, pc = self._lt, self._pcls
        a, b, c = (z3.Const(n, self.sorts["P"]) for n in ("a", "b", "c"))
        return [
            z3.ForAll([a], z3.Not(lt(a, a))),
            z3.ForAll([a, b, c], z3.Implies(z3.And(lt(a, b), lt(b, c)), lt(a, c))),
            z3.ForAll([a, b], z3.Implies(lt(a, b), pc(a) == pc(b))),
            z3.ForAll([a, b], z3.Implies(pc(a) == pc(b), z3.Or(a == b, lt(a, b), lt(b, a)))),
            self.capacity >= 1,
        ]


def _bool(x: Any) -> Any:
    return x if isinstance(x, z3.ExprRef) else z3.BoolVal(bool(x))
