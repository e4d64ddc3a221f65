"""From a z3 model to a small concrete structure: the counterexample to induction, in the finite reading.

z3's model of a satisfiable consecution query interprets the sorts as finite sets. :func:`concretize`
turns it into a :class:`~flightcheck.checks.unbounded.signature.Finite` signature (requests ``r0..``,
classes, and pages renumbered ancestors first, with each class's path, the ``shares`` and ``prefer``
relations and the page order as the model has them) and the pre-state as
tables, so that the model's own finite reading can replay the action and re-evaluate every invariant:
a CTI is shown only as a structure the finite reading confirms.

For example (a query with one request that arrives)::

    >>> import z3
    >>> from flightcheck.checks.unbounded.config import Config
    >>> from flightcheck.checks.unbounded.relational import RelModel
    >>> from flightcheck.checks.unbounded.signature import Symbolic
    >>> from flightcheck.checks.unbounded.state import symbolic_state
    >>> sig = Symbolic(); m = RelModel(sig, Config()); s = symbolic_state(sig, "0"); r = sig.var("R", "r")
    >>> solver = z3.Solver(); solver.add(*sig.axioms(), m.guard(s, "arrive", r), sig.forall("R", lambda x: s.ph(x) == 0))
    >>> solver.check() == z3.sat
    True
    >>> fin, state, arg = concretize(sig, s, solver.model(), "R", r)
    >>> state.ph(arg), len(fin.domain["R"]) >= 1
    (0, True)
"""

from __future__ import annotations

import itertools
from typing import Any

import z3

from flightcheck.checks.unbounded.signature import SORTS, Finite, Symbolic
from flightcheck.checks.unbounded.state import SCHEMA, RelState, table_state


def _universe(model: z3.ModelRef, sort: z3.SortRef) -> list[Any]:
    found = model.get_universe(sort)
    return list(found) if found is not None else []


def _value(model: z3.ModelRef, term: Any, typ: type) -> Any:
    v = model.eval(term, model_completion=True)
    return bool(z3.is_true(v)) if typ is bool else v.as_long()


def concretize(sig: Symbolic, s: RelState, model: z3.ModelRef, arg_sort: str | None = None,
               arg: Any = None) -> tuple[Finite, RelState, Any]:
    """The finite signature, the pre-state as tables, and the action's argument as an index."""
    elems = {name: _universe(model, sig.sorts[name]) for name in SORTS}
    # Classes: those of the universe (a request's or a page's class is always one of them).
    cidx = {str(c): n for n, c in enumerate(elems["C"])}

    def cls_of(term: Any) -> int:
        return cidx[str(model.eval(term, model_completion=True))]

    req_class = [cls_of(sig.cls(r)) for r in elems["R"]]
    pages = elems["P"]

    def true(term: Any) -> bool:
        return z3.is_true(model.eval(term, model_completion=True))

    # Pages ancestors first: sort by the number of pages before each.
    before = {str(k): sum(1 for q in pages if true(sig.lt(q, k))) for k in pages}
    pages = sorted(pages, key=lambda k: before[str(k)])
    elems["P"] = pages
    index = {name: {str(e): n for n, e in enumerate(es)} for name, es in elems.items()}
    rs, cs = elems["R"], elems["C"]
    paths = [[n for n, k in enumerate(pages) if true(sig.onp(c, k))] for c in cs]
    shares = {(a, b) for a, c in enumerate(cs) for b, d in enumerate(cs) if true(sig.shares(c, d))}
    prefer = {(x, y, z) for x, i in enumerate(rs) for y, f in enumerate(rs) for z, g in enumerate(rs)
              if true(sig.prefer(i, f, g))}
    order = {(x, y) for x, a in enumerate(pages) for y, b in enumerate(pages) if true(sig.lt(a, b))}
    fin = Finite(len(rs), req_class, (), _value(model, sig.capacity, int), num_classes=len(cs), paths=paths,
                 shares=shares, prefer=lambda i, f, g: (i, f, g) in prefer, num_pages=len(pages), order=order)
    tables: dict[str, Any] = {}
    for name, (args, typ) in SCHEMA.items():
        comp = getattr(s, name)
        if not args:
            tables[name] = _value(model, comp, typ)
            continue
        tables[name] = {
            tuple(index[a][str(e)] for a, e in zip(args, tup)): _value(model, comp(*tup), typ)
            for tup in itertools.product(*[elems[a] for a in args])
        }
    arg_index = None
    if arg_sort is not None:
        arg_index = index[arg_sort][str(model.eval(arg, model_completion=True))]
    return fin, table_state(tables), arg_index
