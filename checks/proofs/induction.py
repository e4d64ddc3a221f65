"""k-induction: proofs that the spec's safety properties hold on paths of every length.

A set S of invariants is *jointly k-inductive* when every path of ``k`` steps whose first ``k`` states
satisfy all of S ends in a state that satisfies all of S. Together with the base case (no path from the
initial state of fewer than ``k`` steps violates S, checked by BMC) this proves every member of S for
all depths. The candidates are the spec's safety properties, the auxiliary lemmas of
:mod:`flightcheck.spec.lemmas` and ``in_bounds`` (the slot ranges the symbolic domain assumes). The
largest jointly inductive subset is found Houdini-style: a candidate whose step query is satisfiable is
dropped (its *counterexample to induction*, an unreachable state that satisfies the others and steps
into a violation, is kept for the report) and the rest are re-checked until none fails. Dropped
candidates are retried with ``k + 1``, assuming everything proved so far at every step.

A property is reported ``proved`` (with the ``k`` and the invariants its proof used, read from an unsat
core), ``violated`` (BMC found a path; the path is a :class:`Counterexample`), or ``bounded`` (no
violation up to the BMC depth asked, but no proof): never the one for the other.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> report = prove(FlightSpec(SCENARIOS["burst2"]), depth=2)
    >>> report.result("termination_validated").summary()
    'termination_validated: proved (k=1, with live_is_known...)'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import z3

from flightcheck.checks.proofs.bmc import check_bmc
from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.spec.describe import changes, describe, label
from flightcheck.checks.proofs.symbolic import IN_BOUNDS, TransitionSystem, checked_properties
from flightcheck.spec.lemmas import lemmas_for
from flightcheck.spec.model import FlightSpec


@dataclass
class Cti:
    """A counterexample to induction: states ``s0 .. sk`` (unreachable, in general) where the
    candidates assumed hold on ``s0 .. s(k-1)``, each step is a transition, and ``sk`` breaks one."""

    property: str
    k: int
    actions: list[str]
    states: list[tuple[int, ...]]

    def format(self, spec: FlightSpec) -> str:
        """The first state described in full, then each step with what it changed."""
        lines = [f"counterexample to induction for {self.property} (k={self.k}), from the unreachable state:"]
        lines += [f"      {line}" for line in label(spec, self.states[0]).splitlines()]
        for n, (a, before, after) in enumerate(zip(self.actions, self.states, self.states[1:]), 1):
            lines.append(f"   {n}. {a:<12} {changes(spec, before, after)}")
        return "\n".join(lines)

    def to_json(self, spec: FlightSpec) -> dict[str, Any]:
        """JSON-ready: k, the actions and each state described."""
        return {"property": self.property, "k": self.k, "actions": self.actions,
                "states": [describe(spec, s) for s in self.states]}


@dataclass
class ProofResult:
    """The verdict for one property: ``proved`` (for every depth), ``bounded`` or ``violated``.

    ``seconds`` is the solver time of the property's own induction step queries (for ``violated``: the
    BMC time to its counterexample); the shared BMC base case is :attr:`ProofReport.bmc_seconds`."""

    property: str
    status: str
    k: int
    seconds: float
    support: tuple[str, ...] = ()
    cti: Cti | None = None
    counterexample: Counterexample | None = None

    def summary(self) -> str:
        """One line, e.g. ``refcounts_exact: proved (k=1, with in_bounds, ...)``."""
        if self.status == "proved":
            extra = f", with {', '.join(self.support)}" if self.support else ""
            return f"{self.property}: proved (k={self.k}{extra})"
        if self.status == "violated":
            return f"{self.property}: violated at depth {self.k}"
        return f"{self.property}: holds to depth {self.k}, not proved"


@dataclass
class ProofReport:
    """Per-property results, and the lemmas (auxiliary invariants) with their own verdicts."""

    results: list[ProofResult]
    lemmas: list[ProofResult] = field(default_factory=list)
    seconds: float = 0.0
    bmc_seconds: float = 0.0

    def result(self, name: str) -> ProofResult:
        """The result for the property or lemma called ``name``."""
        for r in self.results + self.lemmas:
            if r.property == name:
                return r
        raise KeyError(name)

    @property
    def ok(self) -> bool:
        """No property violated."""
        return all(r.status != "violated" for r in self.results)


def prove(spec: FlightSpec, props: Sequence[Any] | None = None, *, max_k: int = 3, depth: int = 6,
          lemmas: Sequence[Any] | None = None) -> ProofReport:
    """k-induction (k = 1 .. ``max_k``) for each property, BMC to ``depth`` for the base case and for
    whatever is not proved."""
    start = time.monotonic()
    props = list(checked_properties(spec) if props is None else props)
    aux = [IN_BOUNDS] + list(lemmas_for(spec) if lemmas is None else lemmas)
    candidates = props + aux
    base_depth = max(depth, max_k - 1)
    bmc = {r.property: r for r in check_bmc(spec, candidates, base_depth)}
    bmc_seconds = time.monotonic() - start
    ts = TransitionSystem(spec)
    proved: dict[str, tuple[int, tuple[str, ...]]] = {}
    ctis: dict[str, Cti] = {}
    seconds: dict[str, float] = {}
    live = [c for c in candidates if bmc[c.name].status != "violated"]
    for k in range(1, max_k + 1):
        open_ = [c for c in live if c.name not in proved]
        if not open_:
            break
        inductive, cores, failed = _houdini(ts, [c for c in live if c.name in proved], open_, k, seconds)
        for c in inductive:
            proved[c.name] = (k, cores[c.name])
        for name, cti in failed.items():
            ctis[name] = cti  # the one at the largest k tried is the one to read
    elapsed = time.monotonic() - start

    def verdict(c: Any) -> ProofResult:
        b = bmc[c.name]
        took = seconds.get(c.name, 0.0)
        if b.status == "violated":
            return ProofResult(c.name, "violated", b.depth, b.seconds, counterexample=b.counterexample)
        if c.name in proved:
            k, core = proved[c.name]
            return ProofResult(c.name, "proved", k, took, support=core)
        return ProofResult(c.name, "bounded", b.depth, took, cti=ctis.get(c.name))

    return ProofReport([verdict(p) for p in props], [verdict(a) for a in aux], elapsed, bmc_seconds)


def _houdini(ts: TransitionSystem, known: list[Any], open_: list[Any], k: int, seconds: dict[str, float]):
    """The largest subset of ``open_`` that is jointly k-inductive, given ``known`` at every step.

    ``seconds`` accumulates the solver time spent on each candidate's step queries."""
    solver = z3.Solver()
    solver.add(ts.get_unrolling(0, k))
    if k > 1:
        solver.add(ts.get_simple_path(k))
    use = {c.name: z3.Bool(f"use_{c.name}") for c in known + open_}
    for c in known:
        solver.add(z3.Implies(use[c.name], z3.And([ts.holds(c, t) for t in range(k + 1)])))
    for c in open_:
        solver.add(z3.Implies(use[c.name], z3.And([ts.holds(c, t) for t in range(k)])))
    current = list(open_)
    failed: dict[str, Cti] = {}
    cores: dict[str, tuple[str, ...]] = {}
    changed = True
    while changed:
        changed = False
        for c in list(current):
            solver.push()
            solver.add(z3.Not(ts.holds(c, k)))
            began = time.monotonic()
            r = solver.check(*[use[x.name] for x in known + current])
            seconds[c.name] = seconds.get(c.name, 0.0) + time.monotonic() - began
            if r == z3.unsat:
                core = {str(x) for x in solver.unsat_core()}
                cores[c.name] = tuple(x.name for x in known + current if x is not c and f"use_{x.name}" in core)
            else:  # sat: a counterexample to induction; unknown: no proof either
                if r == z3.sat:
                    m = solver.model()
                    failed[c.name] = Cti(c.name, k, ts.actions_of(m, k), [ts.state_of(m, t) for t in range(k + 1)])
                current.remove(c)
                changed = True
            solver.pop()
    for c in current:
        failed.pop(c.name, None)
    return current, cores, failed
