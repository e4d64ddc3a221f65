"""Bounded model checking: every safety property of a spec, for every path up to depth ``k``.

One incremental z3 solver holds ``init(0)`` and the unrolled transition relation; at each depth ``t``
(0, 1, 2, ...) each property not yet violated is checked with ``not P(t)`` pushed on top. Depths are
tried in increasing order, so a violation found is a *shortest* one. Its path is read back from the
model's action-choice variables and replayed concretely through ``spec.apply`` (via
:meth:`Counterexample.from_actions`); the replay must reach exactly the states z3 reported and a state
that violates the property, or :class:`SymbolicMismatch` is raised: the symbolic reading and the
concrete spec disagree, which is a bug in the checker, never a verdict.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.variants import VARIANTS
    >>> spec = VARIANTS["early-release"].build(SCENARIOS["burst2"].with_policy(publication="on-completion"))
    >>> [r.summary() for r in check_bmc(spec, depth=6) if r.status == "violated"]
    ['release_after_publication: violated at depth 6']
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import z3

from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.proofs.symbolic import TransitionSystem, checked_properties
from flightcheck.spec.model import FlightSpec


class SymbolicMismatch(AssertionError):
    """The z3 reading of the spec and the concrete spec disagree on a path (a checker bug)."""


@dataclass
class BmcResult:
    """The outcome of BMC for one property.

    ``status`` is ``"violated"`` (``depth`` is then the counterexample's length) or ``"bounded"``
    (no violation on any path of length ``<= depth``).
    """

    property: str
    status: str
    depth: int
    seconds: float
    counterexample: Counterexample | None = None

    def summary(self) -> str:
        """One line, e.g. ``termination_validated: violated at depth 5``."""
        if self.status == "violated":
            return f"{self.property}: violated at depth {self.depth}"
        return f"{self.property}: holds to depth {self.depth}"


def check_bmc(spec: FlightSpec, props: Sequence[Any] | None = None, depth: int = 10, *,
              deadline: float | None = None,
              on_depth: Callable[[int], None] | None = None) -> list[BmcResult]:
    """BMC of each property (default: the spec's safety properties and ``no_deadlock``) to ``depth`` steps.

    ``deadline`` (a ``time.monotonic()`` value) stops early: properties not violated by then are
    reported ``bounded`` at the last depth completed for all of them. ``on_depth(t)`` is called after
    each completed depth (for progress bars and benchmarks).
    """
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    props = list(checked_properties(spec) if props is None else props)
    ts = TransitionSystem(spec)
    solver = z3.Solver()
    solver.add(ts.init(0))
    start = time.monotonic()
    found: dict[str, BmcResult] = {}
    completed = -1
    for t in range(depth + 1):
        if t > 0:
            solver.add(ts.trans(t - 1))
        # One query for all of them first: at most depths nothing is violated.
        if deadline is not None:  # a single query must not overrun the budget either
            solver.set("timeout", max(1, int((deadline - time.monotonic()) * 1000)))
        solver.push()
        solver.add(z3.Or([z3.Not(ts.holds(p, t)) for p in props if p.name not in found]))
        verdict = solver.check()
        solver.pop()
        if verdict == z3.unknown:
            break  # out of time: depth t is not complete
        any_violated = verdict == z3.sat
        for prop in props if any_violated else ():
            if prop.name in found:
                continue
            solver.push()
            solver.add(z3.Not(ts.holds(prop, t)))
            if solver.check() == z3.sat:
                cx = replay(spec, ts, solver.model(), t, prop)
                found[prop.name] = BmcResult(prop.name, "violated", t, time.monotonic() - start, cx)
            solver.pop()
            if deadline is not None and time.monotonic() > deadline:
                break
        else:
            completed = t
            if on_depth:
                on_depth(t)
            if len(found) == len(props):
                break
            if deadline is not None and time.monotonic() > deadline:
                break
            continue
        break
    elapsed = time.monotonic() - start
    return [found.get(p.name) or BmcResult(p.name, "bounded", completed, elapsed) for p in props]


def replay(spec: FlightSpec, ts: TransitionSystem, model: z3.ModelRef, k: int, prop: Any | None) -> Counterexample:
    """The model's path of length ``k``, replayed concretely and checked against z3's states."""
    actions = ts.actions_of(model, k)
    try:
        cx = Counterexample.from_actions(spec, actions)
    except ValueError as err:
        raise SymbolicMismatch(f"z3 path {actions} does not replay concretely: {err}") from err
    for t, step in enumerate(cx.steps, 1):
        if tuple(step.state) != ts.state_of(model, t):
            raise SymbolicMismatch(f"z3 path {actions}: state after step {t} differs from the concrete replay")
    if prop is not None and prop.holds(spec, cx.final_state(spec)):
        raise SymbolicMismatch(f"z3 path {actions} violates {prop.name} symbolically but not concretely")
    return cx
