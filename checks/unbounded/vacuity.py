"""Non-vacuity: evidence that an all-sizes proof is a proof *of something*.

Under contradictory axioms every query is unsat, so every candidate is "proved"; an action whose guard
never holds in a state of the invariant makes every consecution query about it unsat; a property
``forall x. A(x) -> B(x)`` whose antecedent no state of the invariant meets holds of nothing. Each of
these reads "proved" and says nothing, so a proof here carries its witnesses:

- :func:`check_axioms`: the signature's axioms, each tracked by a literal, are satisfiable together (a
  model of one element per sort answers at once); when not, the unsat core names the axioms responsible.
- :func:`check_initial`: the axioms and every candidate that passed initiation hold together in the
  initial state of some structure (so the axioms and the invariant are satisfiable together: that
  initial state is a model of both).
- :func:`enabling_model` and :func:`action_witness`: for each action, a small state of the invariant
  where its guard holds, asked on the checker's own round-1 query (axioms, guard, the action's choice
  definitions, every candidate): a model of at most :data:`WITNESS_SIZE` elements per sort, else one
  short full check, read as a finite state once Houdini is done. A witness under
  the round-1 candidates is one under the final invariant (a subset); an action with none in round 1 is
  asked again under the final invariant when Houdini dropped a candidate (:func:`action_query`).
- :func:`antecedent_witnesses`: for each proved property with an :class:`~flightcheck.checks.unbounded.
  invariants.Antecedent`, a small state of the proved invariant meeting it: first among the actions'
  witnesses (finite states the finite reading confirmed satisfy every candidate, so evaluating the
  antecedent there costs no query), else from one query.

unsat is a vacuity failure naming the axioms, the action or the antecedent; ``unknown`` (a timeout) is
shown, never a failure. Each witness is re-read through the model's finite reading (``confirmed``).

For example::

    >>> from flightcheck.checks.unbounded.signature import Symbolic
    >>> sig = Symbolic()
    >>> check_axioms(sig, sig.named_axioms() + [("planted", z3.BoolVal(False))], 1000)
    ('unsatisfiable', ['planted'])
"""

from __future__ import annotations

from typing import Any, Sequence

import z3

from flightcheck.checks.unbounded.extract import concretize
from flightcheck.checks.unbounded.invariants import Invariant
from flightcheck.checks.unbounded.render import describe
from flightcheck.checks.unbounded.result import Witness
from flightcheck.checks.unbounded.signature import SORTS, Finite, Symbolic
from flightcheck.checks.unbounded.solving import as_bool, small_model, solver
from flightcheck.checks.unbounded.state import RelState, initial_state, symbolic_state

VACUITY_MS = 500  # a full check after the small-model search found nothing: unsat comes fast, unknown says nothing
WITNESS_SIZE = 3  # elements per sort in a witness (one domain-closed query)


def structure_sizes(fin: Any) -> dict[str, int]:
    """The number of requests, classes and pages of a finite structure."""
    return {"request": len(fin.domain["R"]), "class": len(fin.domain["C"]), "page": len(fin.domain["P"])}


def _tracked(s: z3.Solver, named: Sequence[tuple[str, Any]], tag: str) -> dict[Any, str]:
    lits = {}
    for name, formula in named:
        lit = z3.Bool(f"{tag}:{name}")
        s.add(z3.Implies(lit, as_bool(formula)))
        lits[lit] = name
    return lits


def _sat(s: z3.Solver, sig: Symbolic, assumptions: Sequence[Any], sizes: Sequence[int],
         timeout_ms: int) -> tuple[str, Any]:
    """``satisfiable`` with a model (a small one when there is one of ``sizes``), ``unsatisfiable`` (the
    solver's core then names the assumptions responsible) or ``unknown``."""
    found = small_model(s, sig, assumptions, sizes=sizes)
    if found is not None:
        return "satisfiable", found
    s.set("timeout", min(timeout_ms, VACUITY_MS))
    r = s.check(*assumptions)
    s.set("timeout", timeout_ms)
    if r == z3.sat:
        return "satisfiable", s.model()
    return ("unsatisfiable" if r == z3.unsat else "unknown"), None


def _core(s: z3.Solver, lits: dict[Any, str], tag: str) -> list[str]:
    core = {str(x) for x in s.unsat_core()}
    return [name for lit, name in lits.items() if str(lit) in core and str(lit).startswith(tag + ":")]


def check_axioms(sig: Symbolic, named: Sequence[tuple[str, Any]], timeout_ms: int) -> tuple[str, list[str]]:
    """Whether the named axioms are satisfiable together, and (unsatisfiable) the ones an unsat core names."""
    s = solver(timeout_ms)
    s.set("core.minimize", True)
    lits = _tracked(s, named, "axiom")
    status, _model = _sat(s, sig, list(lits), (1,), timeout_ms)
    return status, (_core(s, lits, "axiom") if status == "unsatisfiable" else [])


def check_initial(sig: Symbolic, named: Sequence[tuple[str, Any]], model: Any, cands: Sequence[Invariant],
                  timeout_ms: int) -> tuple[str, dict[str, int], list[str]]:
    """Whether the initial state of some structure satisfies the axioms and every candidate: the status,
    that structure's sizes, and (unsatisfiable) the axioms and candidates an unsat core names."""
    s = solver(timeout_ms)
    s.set("core.minimize", True)
    init = initial_state(sig)
    lits = {**_tracked(s, named, "axiom"), **_tracked(s, [(c.name, c.holds(model, init)) for c in cands], "invariant")}
    status, found = _sat(s, sig, list(lits), (1,), timeout_ms)
    if status == "unsatisfiable":
        return status, {}, _core(s, lits, "axiom") + _core(s, lits, "invariant")
    sizes = {} if found is None else \
        {n: len(found.get_universe(sig.sorts[k]) or []) for n, k in zip(("request", "class", "page"), SORTS)}
    return status, sizes, []


def _label(fin: Any, state: RelState, name: str, sort: str | None, idx: Any) -> str:
    if sort == "R":
        return f"{name}(r{idx})"
    if sort == "P":
        return f"{name}({describe(fin, state)['pages'][idx]['page']})"
    return name


def action_query(sig: Symbolic, model: Any, axioms: Sequence[Any], name: str, sort: str | None,
                 invariant: Sequence[Invariant], tag: str, timeout_ms: int) -> tuple[z3.Solver, RelState, Any]:
    """A solver holding the axioms, the guard of ``name`` (and its choice definitions) on a fresh state,
    and every member of ``invariant`` there; the state and the argument."""
    pre = symbolic_state(sig, tag)
    arg = sig.var(sort, "arg") if sort else None
    s = solver(timeout_ms)
    s.add(*axioms, as_bool(model.guard(pre, name, arg)), *model.definitions(pre, arg),
          *[as_bool(c.holds(model, pre)) for c in invariant])
    return s, pre, arg


def enabling_model(s: z3.Solver, sig: Symbolic, assumptions: Sequence[Any], timeout_ms: int) -> tuple[str, Any, str]:
    """The query in ``s`` (an action's guard beside the invariant; ``assumptions``: the candidates'
    literals) asked for a small model, the solver left as it was: the status, the model (or None) and why
    z3 gave up (``unknown``). The model is read (:func:`action_witness`) once the checker's queries are done."""
    status, found = _sat(s, sig, assumptions, (WITNESS_SIZE,), timeout_ms)
    return status, found, (f"timeout ({s.reason_unknown()})" if status == "unknown" else "")


def action_witness(sig: Symbolic, model: Any, name: str, sort: str | None, pre: RelState, arg: Any,
                   asked: tuple[str, Any, str], assumed: Sequence[Invariant]) -> tuple[Witness, Any]:
    """The witness that ``name`` can fire, from :func:`enabling_model`'s answer ``asked`` on the guard for
    ``arg`` from ``pre`` (beside the candidates ``assumed``); and, when the finite reading confirms the
    state, its finite structure, state and model (else None)."""
    status, found, reason = asked
    if found is None:
        return Witness("action", name, "vacuous" if status == "unsatisfiable" else "unknown", reason=reason), None
    fin, state, idx = concretize(sig, pre, found, sort, arg)
    m = type(model)(fin, model.config)
    confirmed = bool(m.guard(state, name, idx)) and all(bool(c.holds(m, state)) for c in assumed)
    return Witness("action", name, "witnessed", _label(fin, state, name, sort, idx), structure_sizes(fin),
                   describe(fin, state), confirmed), ((fin, state, m) if confirmed else None)


def initial_seen(model: Any, proved: Sequence[Invariant]) -> list[tuple[Any, RelState, Any]]:
    """The initial state of one request, class and page, when the finite reading confirms that every
    member of ``proved`` holds there (initiation proved it does): a state to meet antecedents in (quiescence)."""
    fin = Finite(1, (0,), (0,), 1)
    m, state = type(model)(fin, model.config), initial_state(fin)
    return [(fin, state, m)] if all(bool(c.holds(m, state)) for c in proved) else []


def antecedent_witnesses(sig: Symbolic, model: Any, axioms: Sequence[Any], proved: Sequence[Invariant],
                         timeout_ms: int, seen: Sequence[tuple[Any, RelState, Any]] = ()) -> tuple[list[Witness], int]:
    """A small state of the invariant ``proved`` meeting each antecedent of its properties that applies
    under the model's configuration: one of ``seen`` (finite structures, states and models, each state
    confirmed to satisfy every member of ``proved``) where it holds, else one z3 finds; and the number of
    queries made."""
    props = [c for c in proved if c.antecedent is not None and c.antecedent.applies(model.config)]
    out: list[Witness] = []
    s, queries = None, 0
    pre = symbolic_state(sig, "antecedent")
    for p in props:
        assert p.antecedent is not None
        met = next(((fin, state) for fin, state, m in seen if p.antecedent.check(m, state)), None)
        if met is not None:
            out.append(Witness("antecedent", p.name, "witnessed", p.antecedent.text, structure_sizes(met[0]),
                               describe(*met)))
            continue
        if s is None:
            s = solver(timeout_ms)
            s.add(*axioms, *[as_bool(c.holds(model, pre)) for c in proved])
        s.push()
        queries += 1
        s.add(as_bool(p.antecedent.check(model, pre)))
        status, found = _sat(s, sig, [], (WITNESS_SIZE,), timeout_ms)
        if found is None:
            out.append(Witness("antecedent", p.name, "vacuous" if status == "unsatisfiable" else "unknown",
                               p.antecedent.text, reason="" if status == "unsatisfiable" else "timeout"))
        else:
            fin, state, _idx = concretize(sig, pre, found)
            m = type(model)(fin, model.config)
            confirmed = bool(p.antecedent.check(m, state)) and all(bool(c.holds(m, state)) for c in proved)
            out.append(Witness("antecedent", p.name, "witnessed", p.antecedent.text, structure_sizes(fin),
                               describe(fin, state), confirmed))
        s.pop()
    return out, queries
