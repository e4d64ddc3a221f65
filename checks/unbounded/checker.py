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

Non-vacuity (:mod:`flightcheck.checks.unbounded.vacuity`): before anything else the axioms must be
satisfiable together (if not, every verdict is ``vacuous`` and the unsat core names the axioms), and
the initial state must satisfy them with the invariant; each action needs a small state of the
invariant enabling it (read off its round-1 query), and each proved property with an antecedent a
state of the invariant meeting it (a property whose antecedent none meets is ``vacuous``).

For example::

    >>> from flightcheck.checks.unbounded.config import Config
    >>> r = prove_config(Config(coordination="none"))
    >>> r.verdict("known_once").status, r.vacuity_failures
    ('proved', [])
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import z3

from flightcheck.checks.unbounded.config import Config
from flightcheck.checks.unbounded.extract import concretize
from flightcheck.checks.unbounded.invariants import Invariant, lemmas_for, properties_for
from flightcheck.checks.unbounded.render import describe
from flightcheck.checks.unbounded.result import ConfigReport, Cti, NonVacuity, Verdict
from flightcheck.checks.unbounded.signature import Symbolic
from flightcheck.checks.unbounded.solving import as_bool as _as_bool
from flightcheck.checks.unbounded.solving import small_model as _small_model
from flightcheck.checks.unbounded.solving import smallest as _smallest
from flightcheck.checks.unbounded.solving import solver as _solver
from flightcheck.checks.unbounded.state import initial_state, symbolic_state
from flightcheck.checks.unbounded.vacuity import (
    action_query, action_witness, antecedent_witnesses, check_axioms, check_initial, enabling_model, initial_seen,
    structure_sizes,
)
from flightcheck.checks.unbounded.variants import build_model

TIMEOUT_MS = 30_000
QUICK_MS = 2_000


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


def _cti(variant: str, config: Config, inv: Invariant, action: str, sig: Symbolic, pre: Any, model: z3.ModelRef,
         arg_sort: str | None, arg: Any, assumed: Sequence[Invariant]) -> Cti:
    """z3's model as a finite structure, replayed through the model's finite reading."""
    fin, state, idx = concretize(sig, pre, model, arg_sort, arg)
    m = build_model(variant, fin, config)
    before = describe(fin, state)
    if action == "initial":
        return Cti(inv.name, "initial", before, before, structure_sizes(fin), not inv.holds(m, state))
    label = f"{action}(r{idx})" if arg_sort == "R" else action if arg_sort is None else \
        f"{action}({describe(fin, state)['pages'][idx]['page']})"
    post = m.apply(state, action, idx)
    confirmed = bool(m.guard(state, action, idx)) and all(a.holds(m, state) for a in assumed) \
        and not inv.holds(m, post)
    return Cti(inv.name, label, before, describe(fin, post), structure_sizes(fin), confirmed)


def prove_config(config: Config, variant: str = "correct", *, timeout_ms: int = TIMEOUT_MS) -> ConfigReport:
    """Houdini over the properties and lemmas of ``config`` for the design ``variant``."""
    start = time.perf_counter()
    sig = Symbolic(trees=config.trees, prefix=config.prefix_flights)
    model = build_model(variant, sig, config)
    cands: list[Invariant] = properties_for(config) + lemmas_for(config)
    named = sig.named_axioms()
    axioms = [f for _n, f in named]
    nv = NonVacuity()
    nv.axioms, nv.core = check_axioms(sig, named, timeout_ms)
    if nv.axioms == "unsatisfiable":  # every query would be unsat: nothing is proved
        why = f"the axioms are unsatisfiable together: {', '.join(nv.core)}"
        return ConfigReport(config, variant, [Verdict(c.name, c.kind, "vacuous", 0.0, reason=why) for c in cands],
                            time.perf_counter() - start, 1, 0, nv)
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

    queries += 1  # the axioms' check

    # Consecution, Houdini style. A (candidate, action) query whose unsat core avoids every candidate
    # dropped since is still a proof, so a round re-asks only the queries that leaned on a dropped one.
    rounds = 0
    first_alive = 0
    witnesses = {}  # per action, a state of the invariant enabling it (asked on the round-1 query)
    asked = {}  # per action, the round-1 query's small model: (status, model, reason), pre, arg, candidates
    cores: dict[tuple[str, str], set[str]] = {}
    while True:
        rounds += 1
        alive = [c for c in cands if c.name not in failed]
        first_alive = first_alive or len(alive)
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
            if rounds == 1:  # a small state of every candidate enabling the action: it can fire
                queries += 1
                asked[name] = (enabling_model(solver, sig, list(lits.values()), timeout_ms), pre, arg, alive)
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
    for (cname, _action), used in cores.items():
        support[cname] |= used

    # Non-vacuity under the final invariant: an action without a witness in round 1 is asked again when
    # Houdini dropped a candidate since; each proved property's antecedent needs a state meeting it.
    proved = [c for c in cands if c.name not in failed]
    # The initial state with the axioms and the final invariant (each member held there by initiation).
    nv.initial_status, nv.initial, nv.core = check_initial(sig, named, model, proved, timeout_ms)
    queries += 1
    seen = []  # the witnesses' finite states the finite reading confirmed (the antecedents are tried there first)
    for name, sort in model.actions:
        (status, found, reason), pre, arg, assumed = asked[name]
        if found is None and len(proved) < first_alive:
            s, pre, arg = action_query(sig, model, axioms, name, sort, proved, f"witness_{name}", timeout_ms)
            (status, found, reason), assumed = enabling_model(s, sig, [], timeout_ms), proved
            queries += 1
        witnesses[name], finite = action_witness(sig, model, name, sort, pre, arg, (status, found, reason), assumed)
        seen += [finite] if finite is not None else []
    nv.actions = [witnesses[name] for name, _sort in model.actions]
    seen += initial_seen(model, proved)
    nv.antecedents, met_by_query = antecedent_witnesses(sig, model, axioms, proved, timeout_ms, seen)
    queries += met_by_query
    unmet = {w.subject: w.instance for w in nv.antecedents if w.status == "vacuous"}

    verdicts = []
    for c in cands:
        if c.name in failed:
            v = failed[c.name]
            v.seconds = seconds[c.name]
            verdicts.append(v)
        else:
            verdicts.append(Verdict(c.name, c.kind, "vacuous" if c.name in unmet else "proved", seconds[c.name],
                                    tuple(sorted(support[c.name])),
                                    reason=f"its antecedent, {unmet[c.name]}, holds in no state of the invariant"
                                    if c.name in unmet else ""))
    return ConfigReport(config, variant, verdicts, time.perf_counter() - start, queries, rounds, nv)


