"""The unbounded proof: initiation and consecution of every invariant over every action, for all sizes.

For one configuration and one design, the candidates are the modelled properties and the lemmas of
:mod:`flightcheck.checks.unbounded.invariants`. Each is checked

- for *initiation*: the initial state satisfies it (one query);
- for *consecution*, per action: a state satisfying every candidate still alive, where the action is
  enabled for a symbolic argument, steps to a state satisfying it (one query per candidate and action,
  the pre-state's candidates tracked so the unsat core names the lemmas the proof used).

Houdini: a candidate whose query is satisfiable (or times out) is dropped with its counterexample to
induction (or ``unknown``), and the rest are re-checked without it until nothing fails; what is left is
one inductive invariant, so each of its members holds in every reachable state of every size. Every
query runs under the signature's axioms and a timeout (30 s by default); a timeout is ``unknown``,
never ``proved``.

For example::

    >>> from flightcheck.checks.unbounded.config import Config
    >>> r = prove_config(Config(coordination="none"))
    >>> r.verdict("known_once").status
    'proved'
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import z3

from flightcheck.checks.unbounded.config import Config
from flightcheck.checks.unbounded.extract import concretize
from flightcheck.checks.unbounded.invariants import Invariant, lemmas_for, properties_for
from flightcheck.checks.unbounded.render import describe
from flightcheck.checks.unbounded.result import ConfigReport, Cti, Verdict
from flightcheck.checks.unbounded.signature import SORTS, Symbolic
from flightcheck.checks.unbounded.state import initial_state, symbolic_state
from flightcheck.checks.unbounded.variants import build_model

TIMEOUT_MS = 30_000
VACUITY_MS = 500
QUICK_MS = 2_000


def _solver(timeout_ms: int) -> z3.Solver:
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    return s


def _at_most(sig: Symbolic, sort: str, n: int) -> Any:
    """Domain closure: ``sort`` has at most ``n`` elements (every element is one of ``n`` constants)."""
    elems = [z3.Const(f"bound_{sort}{j}", sig.sorts[sort]) for j in range(n)]
    x = z3.Const(f"bound_{sort}_x", sig.sorts[sort])
    return z3.ForAll([x], z3.Or(*[x == e for e in elems]))


def _smallest(solver: z3.Solver, sig: Symbolic, assumptions: Sequence[Any], most: int = 6) -> z3.ModelRef:
    """A model of the (satisfiable) query with as few requests, then pages, then classes as z3 finds:
    each sort's universe is bounded by 1, 2, ... elements (an added domain closure) until one is sat."""
    model = solver.model()
    kept = 0
    for sort in ("R", "P", "C"):
        for n in range(1, most + 1):
            solver.push()
            solver.add(_at_most(sig, sort, n))
            if solver.check(*assumptions) == z3.sat:
                model = solver.model()
                kept += 1  # keep this bound while the next sorts are bounded
                break
            solver.pop()
    for _ in range(kept):
        solver.pop()
    return model


def _small_model(solver: z3.Solver, sig: Symbolic, assumptions: Sequence[Any],
                 sizes: Sequence[int] = (1, 2, 3)) -> Any:
    """A model of the query with at most ``size`` elements of every sort, for the first of ``sizes`` that
    has one, or None (found fast: finite domains leave the quantifier instantiation nothing to search).
    The solver is left as it was."""
    for size in sizes:
        solver.push()
        solver.add(*[_at_most(sig, sort, size) for sort in SORTS])
        found = solver.check(*assumptions) == z3.sat
        model = solver.model() if found else None
        solver.pop()
        if found:
            return model
    return None


def _check(solver: z3.Solver, sig: Symbolic, assumptions: Sequence[Any], timeout_ms: int) -> tuple[Any, Any]:
    """One consecution query: its result, and a small model when it found one first. Proofs (unsat) come
    fast; a counterexample can be slow to find over unbounded sorts, so a query still open after a short
    try is first asked for a model of a few elements per sort (a CTI as small as it gets), and only then
    given the full timeout."""
    solver.set("timeout", min(timeout_ms, QUICK_MS))
    r = solver.check(*assumptions)
    solver.set("timeout", timeout_ms)
    if r != z3.unknown or timeout_ms <= QUICK_MS:
        return r, None
    small = _small_model(solver, sig, assumptions)
    if small is not None:
        return z3.sat, small
    return solver.check(*assumptions), None


def _sizes(fin: Any) -> dict[str, int]:
    return {"request": len(fin.domain["R"]), "class": len(fin.domain["C"]), "page": len(fin.domain["P"])}


def _cti(variant: str, config: Config, inv: Invariant, action: str, sig: Symbolic, pre: Any, model: z3.ModelRef,
         arg_sort: str | None, arg: Any, assumed: Sequence[Invariant]) -> Cti:
    """z3's model as a finite structure, replayed through the model's finite reading."""
    fin, state, idx = concretize(sig, pre, model, arg_sort, arg)
    m = build_model(variant, fin, config)
    before = describe(fin, state)
    if action == "initial":
        return Cti(inv.name, "initial", before, before, _sizes(fin), not inv.holds(m, state))
    label = f"{action}(r{idx})" if arg_sort == "R" else action if arg_sort is None else \
        f"{action}({describe(fin, state)['pages'][idx]['page']})"
    post = m.apply(state, action, idx)
    confirmed = bool(m.guard(state, action, idx)) and all(a.holds(m, state) for a in assumed) \
        and not inv.holds(m, post)
    return Cti(inv.name, label, before, describe(fin, post), _sizes(fin), confirmed)


def prove_config(config: Config, variant: str = "correct", *, timeout_ms: int = TIMEOUT_MS) -> ConfigReport:
    """Houdini over the properties and lemmas of ``config`` for the design ``variant``."""
    start = time.perf_counter()
    sig = Symbolic(trees=config.trees, prefix=config.prefix_flights)
    model = build_model(variant, sig, config)
    cands: list[Invariant] = properties_for(config) + lemmas_for(config)
    axioms = sig.axioms()
    seconds = {c.name: 0.0 for c in cands}
    support: dict[str, set[str]] = {c.name: set() for c in cands}
    failed: dict[str, Verdict] = {}
    queries = 0

    # Initiation: the initial state satisfies each candidate.
    init = initial_state(sig)
    for c in cands:
        solver = _solver(timeout_ms)
        solver.add(*axioms, z3.Not(_as_bool(c.holds(model, init))))
        t0 = time.perf_counter()
        r = solver.check()
        seconds[c.name] += time.perf_counter() - t0
        queries += 1
        if r == z3.sat:
            failed[c.name] = Verdict(c.name, c.kind, "cti", 0.0,
                                     cti=_cti(variant, config, c, "initial", sig, init, solver.model(), None, None, []))
        elif r == z3.unknown:
            failed[c.name] = Verdict(c.name, c.kind, "unknown", 0.0, reason=f"timeout in initiation ({solver.reason_unknown()})")

    # Consecution, Houdini style. A (candidate, action) query whose unsat core avoids every candidate
    # dropped since is still a proof, so a round re-asks only the queries that leaned on a dropped one.
    rounds = 0
    vacuous: list[str] = []  # actions never enabled in a state satisfying every candidate (a warning sign)
    cores: dict[tuple[str, str], set[str]] = {}
    while True:
        rounds += 1
        alive = [c for c in cands if c.name not in failed]
        pre = symbolic_state(sig, str(rounds))
        lits = {c.name: z3.Bool(f"assume:{c.name}") for c in alive}
        dropped = False
        for name, sort in model.actions:
            todo = [c for c in alive if (c.name, name) not in cores or cores[(c.name, name)] & set(failed)]
            if not todo:
                continue
            arg = sig.var(sort, "arg") if sort else None
            post = model.apply(pre, name, arg)
            solver = _solver(timeout_ms)
            solver.add(*axioms, _as_bool(model.guard(pre, name, arg)), *model.definitions(pre, arg))
            for c in alive:
                solver.add(z3.Implies(lits[c.name], _as_bool(c.holds(model, pre))))
            if rounds == 1:
                # Whether the action is ever enabled under the candidates: a diagnostic, so a short timeout
                # (a satisfiable query over every axiom can be slow to find its model; unknown says nothing).
                queries += 1
                if _small_model(solver, sig, list(lits.values()), sizes=(3,)) is None:
                    solver.set("timeout", min(timeout_ms, VACUITY_MS))
                    if solver.check(*lits.values()) == z3.unsat:
                        vacuous.append(name)
                    solver.set("timeout", timeout_ms)
            for c in todo:
                if c.name in failed:
                    continue
                solver.push()
                solver.add(z3.Not(_as_bool(c.holds(model, post))))
                t0 = time.perf_counter()
                r, found = _check(solver, sig, list(lits.values()), timeout_ms)
                seconds[c.name] += time.perf_counter() - t0
                queries += 1
                if r == z3.unsat:
                    cores[(c.name, name)] = {str(x).split(":", 1)[1] for x in solver.unsat_core()} - {c.name}
                elif r == z3.sat:
                    small = found if found is not None else _smallest(solver, sig, list(lits.values()))
                    failed[c.name] = Verdict(c.name, c.kind, "cti", 0.0, cti=_cti(
                        variant, config, c, name, sig, pre, small, sort, arg, alive))
                    dropped = True
                else:
                    failed[c.name] = Verdict(c.name, c.kind, "unknown", 0.0,
                                             reason=f"timeout under {name} ({solver.reason_unknown()})")
                    dropped = True
                solver.pop()
        if not dropped:
            break
    for (cname, _action), core in cores.items():
        support[cname] |= core

    verdicts = []
    for c in cands:
        if c.name in failed:
            v = failed[c.name]
            v.seconds = seconds[c.name]
            verdicts.append(v)
        else:
            verdicts.append(Verdict(c.name, c.kind, "proved", seconds[c.name], tuple(sorted(support[c.name]))))
    return ConfigReport(config, variant, verdicts, time.perf_counter() - start, queries, rounds, vacuous)


def _as_bool(x: Any) -> Any:
    return x if isinstance(x, z3.ExprRef) else z3.BoolVal(bool(x))
