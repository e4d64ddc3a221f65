"""The drift check: the relational model instantiated at a scenario's size is the finite spec's design.

For every reachable state ``s`` of the explorer's graph (its canonical representatives under symmetry
are reachable states too) and every action instance of the finite spec, :func:`check_drift` asks that

- the relational guard on ``abstract(s)`` equals the spec's guard on ``s``;
- when enabled, the relational successor equals ``abstract`` of the spec's successor (``decode``, which
  has no relational transition, must leave ``abstract(s)`` unchanged: a stutter step);
- every lemma that applies holds on ``abstract(s)`` (for the correct design), and every modelled
  property reads the same on ``abstract(s)`` as the spec's property on ``s``.

The relational model reads a reference count through the relation it counts, which is exact where the
spec's ``refcounts_exact`` holds: for the correct design that must be every reachable state (checked
here); a variant that leaks references (``promote-released``, ``evict-referenced``) has states where it
does not, and there the two readings that use a count (``evict``'s guard, ``quiescent_clean``) are not
compared (counted in ``skipped``).

So the relational transition relation relates ``abstract(s)`` to ``t`` exactly when the spec has an
edge from ``s`` to a state ``s'`` with ``abstract(s') == t`` (the relational actions are the spec's,
argument for argument), and the lemmas the proofs assume are true of every reachable state.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> r = check_drift(SCENARIOS["burst2"])
    >>> r.ok, r.states > 0, r.mismatches
    (True, True, [])
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.unbounded.abstraction import abstract, signature_of
from flightcheck.checks.unbounded.config import from_scenario
from flightcheck.checks.unbounded.invariants import PROPERTIES, lemmas_for
from flightcheck.checks.unbounded.state import tabulate
from flightcheck.checks.unbounded.variants import build_model, spec_variant
from flightcheck.spec.actions import NOTICES, SLOT_ACTIONS, TOKEN_PASSES
from flightcheck.spec.properties import get_property
from flightcheck.spec.scenario import Scenario


@dataclass
class DriftResult:
    """What the drift check compared, and every disagreement found (at most ``limit`` kept)."""

    scenario: str
    policy: str
    variant: str
    states: int = 0
    transitions: int = 0
    lemma_checks: int = 0
    skipped: int = 0
    mismatches: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """No disagreement."""
        return not self.mismatches


def _relational_action(spec: Any, action: Any) -> tuple[str, Any]:
    if action.name in NOTICES and action.arg >= spec.num_requests:
        return "notify_unknown", None
    return action.name, action.arg


def check_drift(scenario: Scenario, variant: str = "correct", *, symmetry: bool = True, limit: int = 20) -> DriftResult:
    """Compare the relational model with the finite spec on every reachable state of ``scenario``."""
    from flightcheck.checks.explore.explorer import explore

    start = time.perf_counter()
    spec = spec_variant(variant).build(scenario)
    config = from_scenario(scenario)
    sig = signature_of(spec)
    model = build_model(variant, sig, config)
    relational = {name for name, _sort in model.actions}
    lemmas = lemmas_for(config) if variant == "correct" else []
    props = [(p, get_property(p.name)) for p in PROPERTIES if p.applies(config)]
    props = [(p, q) for p, q in props if q.applies(spec)]
    exact_refs = get_property("refcounts_exact")
    graph = explore(spec, symmetry=symmetry, properties=[]).graph
    out = DriftResult(scenario.name, spec.policy.label(), variant)

    def miss(msg: str) -> None:
        if len(out.mismatches) < limit:
            out.mismatches.append(msg)

    for state in graph.nodes:
        out.states += 1
        if spec.layout.has_via_ties:  # the order of preference on a tie is this run's order of arrival
            sig = signature_of(spec, state)
            model = build_model(variant, sig, config)
        a = abstract(spec, state)
        here = tabulate(sig, a)
        exact = bool(exact_refs.holds(spec, state))
        if not exact and variant == "correct":
            miss(f"refcounts_exact fails on reachable state {state}")
        for action in spec.actions:
            g_spec = bool(spec.guard(state, action))
            succ = spec.apply(state, action) if g_spec else None
            if action.name in TOKEN_PASSES:
                if g_spec and tabulate(sig, abstract(spec, succ)) != here:
                    miss(f"{action} changes more than dec in {state}")
                continue
            name, arg = _relational_action(spec, action)
            if name not in relational:
                if g_spec:
                    miss(f"{action} is enabled in {state} but the relational model has no {name}")
                continue
            if name in SLOT_ACTIONS and not exact:
                out.skipped += 1
                continue
            out.transitions += 1
            g_rel = bool(model.guard(a, name, arg))
            if g_rel != g_spec:
                miss(f"guard of {action} in {state}: spec {g_spec}, relational {g_rel}")
                continue
            if g_spec:
                want = tabulate(sig, abstract(spec, succ))
                got = tabulate(sig, model.apply(a, name, arg))
                if want != got:
                    diff = sorted(k for k in want if want[k] != got[k])
                    miss(f"successor of {action} from {state}: components {diff} differ")
        for lem in lemmas:
            out.lemma_checks += 1
            if not lem.holds(model, a):
                miss(f"lemma {lem.name} fails on reachable state {state}")
        for rp, sp in props:
            if rp.name == "quiescent_clean" and not exact:
                out.skipped += 1
                continue
            out.lemma_checks += 1
            if bool(rp.holds(model, a)) != bool(sp.holds(spec, state)):
                miss(f"property {rp.name} reads differently on {state}")
    out.seconds = time.perf_counter() - start
    return out
