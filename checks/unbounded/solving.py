"""z3 helpers of the unbounded proofs: a solver with a timeout, and small models by domain closure.

A query over uninterpreted sorts may be slow to find a model (or time out) even when a small one exists:
bounding every sort's universe by a few constants (:func:`at_most`) leaves the quantifier instantiation
nothing to search. :func:`small_model` asks for a model of at most ``n`` elements per sort,
:func:`smallest` for one with as few requests, then pages, then classes as it finds. The checker uses
them for its counterexamples to induction, :mod:`flightcheck.checks.unbounded.vacuity` for its witnesses.

For example::

    >>> from flightcheck.checks.unbounded.signature import Symbolic
    >>> sig = Symbolic()
    >>> s = solver(1000); s.add(*sig.axioms())
    >>> m = small_model(s, sig, [], sizes=(1,))
    >>> len(m.get_universe(sig.sorts["R"]))
    1
"""

from __future__ import annotations

from typing import Any, Sequence

import z3

from flightcheck.checks.unbounded.signature import SORTS, Symbolic


def solver(timeout_ms: int) -> z3.Solver:
    """A fresh solver whose every check gives up after ``timeout_ms`` (``unknown``)."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    return s


def at_most(sig: Symbolic, sort: str, n: int) -> Any:
    """Domain closure: ``sort`` has at most ``n`` elements (every element is one of ``n`` constants)."""
    elems = [z3.Const(f"bound_{sort}{j}", sig.sorts[sort]) for j in range(n)]
    x = z3.Const(f"bound_{sort}_x", sig.sorts[sort])
    return z3.ForAll([x], z3.Or(*[x == e for e in elems]))


def smallest(s: z3.Solver, sig: Symbolic, assumptions: Sequence[Any], most: int = 6) -> z3.ModelRef:
    """A model of the (satisfiable, just checked) query with as few requests, then pages, then classes as
    z3 finds: each sort's universe is bounded by 1, 2, ... elements (an added domain closure) until one is
    sat. The solver is left as it was."""
    model = s.model()
    kept = 0
    for sort in ("R", "P", "C"):
        for n in range(1, most + 1):
            s.push()
            s.add(at_most(sig, sort, n))
            if s.check(*assumptions) == z3.sat:
                model = s.model()
                kept += 1  # keep this bound while the next sorts are bounded
                break
            s.pop()
    for _ in range(kept):
        s.pop()
    return model


def small_model(s: z3.Solver, sig: Symbolic, assumptions: Sequence[Any], sizes: Sequence[int] = (1, 2, 3)) -> Any:
    """A model of the query with at most ``size`` elements of every sort, for the first of ``sizes`` that
    has one, or None (found fast: finite domains leave the quantifier instantiation nothing to search).
    The solver is left as it was."""
    for size in sizes:
        s.push()
        s.add(*[at_most(sig, sort, size) for sort in SORTS])
        found = s.check(*assumptions) == z3.sat
        model = s.model() if found else None
        s.pop()
        if found:
            return model
    return None


def as_bool(x: Any) -> Any:
    """A z3 formula as it is, a Python truth value as a z3 constant (a predicate may fold to either)."""
    return x if isinstance(x, z3.ExprRef) else z3.BoolVal(bool(x))
