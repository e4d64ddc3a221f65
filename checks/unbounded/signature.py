"""The vocabulary of the relational model, read two ways: over finite domains, or over z3's sorts.

The relational model (:mod:`flightcheck.checks.unbounded.relational`) is written once against a *signature*:
three sorts (``R`` requests, which also name flights, as in the finite spec; ``C`` prompt classes; ``P``
pages, the nodes of the prompt tree), the static structure of the prompts (``cls(r)``: a request's class;
``onp(c, k)``: page ``k`` is on class ``c``'s path; ``lt(a, b)``: page ``a`` is an ancestor of ``b``;
``shares(c, d)``: prefix coordination lets class ``c`` wait via a flight of ``d``, the two sharing at
least ``min_shared_pages`` pages; ``prefer(i, f, g)``: the order in which request ``i`` picks the flight it
waits via), the running capacity, and quantifiers ``forall(sort, fn)`` / ``exists(sort, fn)``.

- :class:`Finite` reads it over ``range(n)`` domains with plain Python values, the way the explorer
  runs the finite spec: the drift check instantiates the model at a scenario's size this way.
- :class:`Symbolic` reads it over z3 uninterpreted sorts, with the static structure as uninterpreted
  functions constrained only by :meth:`Symbolic.axioms`: a proof under these axioms holds for every
  number of requests, classes and pages, every prompt length and tree, every capacity and every
  ``min_shared_pages``. ``Symbolic(trees=False)`` adds that no two classes share a page (flat prompts).

For example::

    >>> sig = Finite(num_requests=2, req_class=(0, 0), page_class=(0, 0), capacity=2)
    >>> sig.forall("R", lambda x: sig.cls(x) == 0), sig.lt(0, 1), sig.lt(1, 0)
    (True, True, False)
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import z3

SORTS = ("R", "C", "P")
SORT_NAMES = {"R": "request", "C": "class", "P": "page"}


class Finite:
    """The model over finite domains: requests ``0..n-1``, classes ``0..c-1``, pages ``0..p-1``.

    ``page_class[k]`` is the class of page ``k`` when no two classes share a page (pages of a class come
    in path order by index). With a prompt tree, ``paths[c]`` lists class ``c``'s pages in path order
    instead (shared pages are the same slot on both paths, at the same position), ``shares`` is the set
    of class pairs prefix coordination lets wait via each other, and ``prefer(i, f, g)`` says request
    ``i`` would rather wait via flight ``f`` than ``g``. A counterexample read off a solver's model gives
    ``num_pages`` and the ancestor pairs (``order``) as the model has them."""

    symbolic = False

    def __init__(self, num_requests: int, req_class: Sequence[int], page_class: Sequence[int], capacity: Any,
                 num_classes: int | None = None, *, paths: Sequence[Sequence[int]] | None = None,
                 shares: Iterable[tuple[int, int]] = (),
                 prefer: Callable[[int, int, int], bool] | None = None, num_pages: int | None = None,
                 order: Iterable[tuple[int, int]] | None = None) -> None:
        self.req_class = tuple(req_class)
        classes = num_classes if num_classes is not None else max(self.req_class, default=-1) + 1
        if paths is None:
            npages = len(page_class)
            classes = max(classes, max(page_class, default=-1) + 1)
            paths = [[k for k in range(npages) if page_class[k] == c] for c in range(classes)]
        else:
            npages = num_pages if num_pages is not None else max((k + 1 for path in paths for k in path), default=0)
            classes = max(classes, len(paths))
        self.paths = tuple(tuple(path) for path in paths) + ((),) * (classes - len(paths))
        self._on = {(c, k) for c, path in enumerate(self.paths) for k in path}
        self._lt = set(order) if order is not None else \
            {(a, b) for path in self.paths for n, b in enumerate(path) for a in path[:n]}
        self._shares = frozenset(shares)
        self._prefer = prefer or (lambda i, f, g: f < g)
        self.domain = {"R": range(num_requests), "C": range(classes), "P": range(npages)}
        self.capacity = capacity

    def cls(self, x: int) -> int:
        """The prompt class of request ``x``."""
        return self.req_class[x]

    def onp(self, c: int, k: int) -> bool:
        """Page ``k`` is on class ``c``'s path."""
        return (c, k) in self._on

    def lt(self, a: int, b: int) -> bool:
        """Page ``a`` comes before page ``b`` on a path (``a`` is an ancestor of ``b`` in the prompt tree)."""
        return (a, b) in self._lt

    def shares(self, c: int, d: int) -> bool:
        """Classes ``c`` and ``d`` share enough pages for prefix coordination (``min_shared_pages``)."""
        return (c, d) in self._shares

    def prefer(self, i: int, f: int, g: int) -> bool:
        """Request ``i`` would rather wait via flight ``f`` than via ``g`` (more shared pages, then the
        earlier leader)."""
        return f != g and bool(self._prefer(i, f, g))

    def forall(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        """``fn`` holds for every element of ``sort``."""
        return all(fn(x) for x in self.domain[sort])

    def exists(self, sort: str, fn: Callable[[Any], Any]) -> bool:
        """``fn`` holds for some element of ``sort``."""
        return any(fn(x) for x in self.domain[sort])


class Symbolic:
    """The model over z3 uninterpreted sorts: a proof here holds for every finite size.

    ``trees``: pages may be shared by several classes' paths (a prompt tree); without it, every page is
    on at most one class's path. ``prefix``: the axioms of ``shares`` and ``prefer`` are stated (only
    prefix coordination reads them)."""

    symbolic = True

    def __init__(self, trees: bool = False, prefix: bool = False) -> None:
        self.trees = trees
        self.prefix = prefix
        self.sorts = {s: z3.DeclareSort(SORT_NAMES[s].capitalize()) for s in SORTS}
        r, c, p = (self.sorts[s] for s in SORTS)
        self._cls = z3.Function("cls", r, c)
        self._onp = z3.Function("onp", c, p, z3.BoolSort())
        self._lt = z3.Function("lt", p, p, z3.BoolSort())
        self._shares = z3.Function("shares", c, c, z3.BoolSort())
        self._prefer = z3.Function("prefer", r, r, r, z3.BoolSort())
        self.capacity = z3.Int("capacity")
        self._fresh = 0

    def cls(self, x: Any) -> Any:
        """The prompt class of request ``x`` (a term)."""
        return self._cls(x)

    def onp(self, c: Any, k: Any) -> Any:
        """Page ``k`` is on class ``c``'s path (a term)."""
        return self._onp(c, k)

    def lt(self, a: Any, b: Any) -> Any:
        """Page ``a`` comes before page ``b`` (a term)."""
        return self._lt(a, b)

    def shares(self, c: Any, d: Any) -> Any:
        """Classes ``c`` and ``d`` may wait via each other's flights (a term)."""
        return self._shares(c, d)

    def prefer(self, i: Any, f: Any, g: Any) -> Any:
        """Request ``i`` would rather wait via flight ``f`` than ``g`` (a term)."""
        return self._prefer(i, f, g)

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
        """The formulas of :meth:`named_axioms`, in order."""
        return [formula for _name, formula in self.named_axioms()]

    def named_axioms(self) -> list[tuple[str, Any]]:
        """What every size satisfies, each axiom with a name (an unsat core of axioms names them): ``lt`` is a
        strict order whose predecessors of a page form a chain (a forest of prompt trees), a class's path is a
        chain closed under predecessors; with ``prefix``, ``shares`` is symmetric, irreflexive and transitive
        over distinct classes (the common prefixes of a tree make "at least m pages in common" so), and a class
        sharing more pages with ``c`` than one that passes the threshold passes it too; ``prefer`` is, per
        request, a strict total order that puts a flight whose prompt shares more pages first; the capacity is
        at least 1. Without ``trees``, no page is on two classes' paths."""
        lt, on, sh, pr, cl = self._lt, self._onp, self._shares, self._prefer, self._cls
        a, b, q = (z3.Const(n, self.sorts["P"]) for n in ("a", "b", "q"))
        c, d, e = (z3.Const(n, self.sorts["C"]) for n in ("c", "d", "e"))
        i, f, g, h = (z3.Const(n, self.sorts["R"]) for n in ("i", "f", "g", "h"))
        out = [
            ("lt_irreflexive", z3.ForAll([a], z3.Not(lt(a, a)))),
            ("lt_transitive", z3.ForAll([a, b, q], z3.Implies(z3.And(lt(a, b), lt(b, q)), lt(a, q)))),
            ("ancestors_form_a_chain",
             z3.ForAll([a, b, q], z3.Implies(z3.And(lt(a, q), lt(b, q)), z3.Or(a == b, lt(a, b), lt(b, a))))),
            ("path_is_a_chain",
             z3.ForAll([c, a, b], z3.Implies(z3.And(on(c, a), on(c, b)), z3.Or(a == b, lt(a, b), lt(b, a))))),
            ("path_closed_under_ancestors", z3.ForAll([c, a, b], z3.Implies(z3.And(on(c, b), lt(a, b)), on(c, a)))),
            ("capacity_positive", self.capacity >= 1),
        ]
        if self.prefix:
            out += [
                ("shares_irreflexive", z3.ForAll([c], z3.Not(sh(c, c)))),
                ("shares_symmetric", z3.ForAll([c, d], z3.Implies(sh(c, d), sh(d, c)))),
                ("shares_transitive", z3.ForAll([c, d, e], z3.Implies(z3.And(sh(c, d), sh(d, e), c != e), sh(c, e)))),
                ("prefer_irreflexive", z3.ForAll([i, f], z3.Not(pr(i, f, f)))),
                ("prefer_transitive",
                 z3.ForAll([i, f, g, h], z3.Implies(z3.And(pr(i, f, g), pr(i, g, h)), pr(i, f, h)))),
                ("prefer_total", z3.ForAll([i, f, g], z3.Implies(f != g, z3.Or(pr(i, f, g), pr(i, g, f))))),
                # Sharing is a common prefix: one that shares a page with i's prompt that another does not shares
                # more, so it is preferred, and passes the threshold if the other does.
                ("prefer_shares_more_first", z3.ForAll([i, f, g, a], z3.Implies(
                    z3.And(on(cl(i), a), on(cl(f), a), z3.Not(on(cl(g), a))), z3.Not(pr(i, g, f))))),
                ("sharing_more_passes_the_threshold", z3.ForAll([c, d, e, a], z3.Implies(
                    z3.And(sh(c, d), on(c, a), on(e, a), z3.Not(on(d, a)), c != e), sh(c, e)))),
            ]
        if not self.trees:
            out.append(("flat_prompts", z3.ForAll([c, d, a], z3.Implies(z3.And(on(c, a), on(d, a)), c == d))))
        return out


def _bool(x: Any) -> Any:
    return x if isinstance(x, z3.ExprRef) else z3.BoolVal(bool(x))
