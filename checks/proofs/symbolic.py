"""The spec read symbolically: a z3 transition system derived from :class:`FlightSpec` itself.

Nothing here restates the design. The state variables of step ``t`` are z3 ``Int``s named after the
layout's slots (``ph[0]@3``); the transition relation is built by calling the spec's own
``spec.guard`` and ``spec.apply`` on those variables (the expression layer in
:mod:`flightcheck.spec.expr` turns them into formulas), and properties are read with
``prop.holds(spec, vars)``. An action-choice variable per step (``act@t``, an index into
``spec.actions``) makes every model give back the concrete action sequence.

The vocabulary follows pysmt's model-checking example: :meth:`TransitionSystem.at_time`,
:meth:`~TransitionSystem.get_unrolling`, :meth:`~TransitionSystem.get_bmc`,
:meth:`~TransitionSystem.get_k_induction`.

For example::

    >>> import z3
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> ts = TransitionSystem(FlightSpec(SCENARIOS["burst2"]))
    >>> solver = z3.Solver()
    >>> solver.add(ts.get_unrolling(0, 2), ts.init(0))
    >>> solver.check() == z3.sat
    True
    >>> ts.actions_of(solver.model(), 2)[0] in ("arrive(0)", "arrive(1)")
    True
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import z3

from flightcheck.spec.model import Action, FlightSpec

Predicate = Callable[[FlightSpec, Sequence[Any]], Any]


class TransitionSystem:
    """The symbolic transition system of one spec: variables per step, domain, init, trans.

    ``prefix`` names the variables apart, so that two systems can share one solver (the product
    machine of :mod:`flightcheck.checks.proofs.equivalence`).
    """

    def __init__(self, spec: FlightSpec, prefix: str = "") -> None:
        self.spec = spec
        self.prefix = prefix
        self.names = spec.layout.slot_names()
        self.ranges = spec.layout.bounds()
        self.actions: tuple[Action, ...] = spec.actions
        self._vars: dict[int, list[z3.ArithRef]] = {}
        self._trans: dict[int, z3.BoolRef] = {}

    # ------------------------------------------------------------------ variables
    def at_time(self, t: int) -> list[z3.ArithRef]:
        """The state variables of step ``t`` (one z3 Int per layout slot)."""
        if t not in self._vars:
            self._vars[t] = [z3.Int(f"{self.prefix}{name}@{t}") for name in self.names]
        return self._vars[t]

    def act(self, t: int) -> z3.ArithRef:
        """The action-choice variable of the step from ``t`` to ``t + 1``: an index into ``spec.actions``."""
        return z3.Int(f"{self.prefix}act@{t}")

    # ------------------------------------------------------------------ formulas
    def domain(self, t: int) -> z3.BoolRef:
        """lo <= v@t <= hi for every slot: the ranges of ``layout.bounds()``."""
        return z3.And([z3.And(lo <= v, v <= hi) for v, (lo, hi) in zip(self.at_time(t), self.ranges)])

    def init(self, t: int = 0) -> z3.BoolRef:
        """s@t == initial state."""
        return z3.And([v == x for v, x in zip(self.at_time(t), self.spec.initial())])

    def equal(self, t: int, values: Sequence[Any]) -> z3.BoolRef:
        """s@t == values (a concrete state or a list of terms)."""
        return z3.And([v == x for v, x in zip(self.at_time(t), values)])

    def step(self, t: int, action: Action) -> z3.BoolRef:
        """guard(s@t, a) and s@(t+1) == apply(s@t, a) for one action instance ``a``."""
        s = self.at_time(t)
        return z3.And(_as_bool(self.spec.guard(s, action)), self.equal(t + 1, self.spec.apply(s, action)))

    def trans(self, t: int) -> z3.BoolRef:
        """OR over action instances k of (act@t == k and guard_k(s@t) and s@(t+1) == apply_k(s@t)).

        Encoded functionally, which z3 solves much faster than the disjunction it equals:
        0 <= act@t < K, act@t == k implies guard_k(s@t), and each slot of s@(t+1) is an if-then-else
        over act@t of the actions that change that slot (the others leave it as it was).
        """
        if t not in self._trans:
            a, s, nxt = self.act(t), self.at_time(t), self.at_time(t + 1)
            conds = [a >= 0, a < len(self.actions)]
            updates: list[list[tuple[int, Any]]] = [[] for _ in s]
            for k, action in enumerate(self.actions):
                conds.append(z3.Implies(a == k, _as_bool(self.spec.guard(s, action))))
                for j, value in enumerate(self.spec.apply(s, action)):
                    if not (isinstance(value, z3.ExprRef) and value.eq(s[j])):
                        updates[j].append((k, value))
            for j, changes in enumerate(updates):
                value: Any = s[j]
                for k, v in reversed(changes):
                    value = z3.If(a == k, v, value)
                conds.append(nxt[j] == value)
            self._trans[t] = z3.And(conds)
        return self._trans[t]

    def holds(self, prop: Any, t: int) -> z3.BoolRef:
        """P(s@t) for a spec property (anything with ``holds(spec, state)``)."""
        return _as_bool(prop.holds(self.spec, self.at_time(t)))

    def get_unrolling(self, k: int, j: int) -> z3.BoolRef:
        """trans(k) and trans(k+1) and ... and trans(j-1): a path from step k to step j."""
        return z3.And([self.trans(t) for t in range(k, j)])

    def get_bmc(self, k: int, prop: Any) -> z3.BoolRef:
        """init(0) and unrolling(0, k) and not P(k): a path of length k that ends in a violation."""
        return z3.And(self.init(0), self.get_unrolling(0, k), z3.Not(self.holds(prop, k)))

    def get_k_induction(self, k: int, prop: Any) -> z3.BoolRef:
        """domain(0..k-1) and unrolling(0, k) and P(0) .. P(k-1) and not P(k): unsat means P is k-inductive."""
        return z3.And(
            *[self.domain(t) for t in range(k)],
            self.get_unrolling(0, k),
            *[self.holds(prop, t) for t in range(k)],
            z3.Not(self.holds(prop, k)),
        )

    def get_simple_path(self, k: int) -> z3.BoolRef:
        """s@i != s@j for all 0 <= i < j <= k: the path visits no state twice."""
        def differ(i: int, j: int) -> z3.BoolRef:
            return z3.Or([a != b for a, b in zip(self.at_time(i), self.at_time(j))])
        return z3.And([differ(i, j) for i in range(k + 1) for j in range(i + 1, k + 1)])

    # ------------------------------------------------------------------ reading models back
    def state_of(self, model: z3.ModelRef, t: int) -> tuple[int, ...]:
        """The concrete state at step ``t`` of a model."""
        return tuple(model.eval(v, model_completion=True).as_long() for v in self.at_time(t))

    def actions_of(self, model: z3.ModelRef, k: int) -> list[str]:
        """The action sequence of the first ``k`` steps of a model, e.g. ``['arrive(0)', 'admit(0)']``."""
        return [str(self.actions[model.eval(self.act(t), model_completion=True).as_long()]) for t in range(k)]


def _as_bool(x: Any) -> z3.BoolRef:
    """A spec predicate's value as a z3 Bool (a predicate may fold to a Python bool)."""
    return x if isinstance(x, z3.BoolRef) else z3.BoolVal(bool(x))


class Invariant:
    """A named state predicate (a spec property or a lemma) as the z3 checks use it."""

    def __init__(self, name: str, check: Predicate, story: str = "") -> None:
        self.name = name
        self.check = check
        self.story = story

    def holds(self, spec: FlightSpec, state: Sequence[Any]) -> Any:
        """The predicate on a state (concrete tuple or z3 term list)."""
        return self.check(spec, state)

    def __repr__(self) -> str:
        return f"Invariant({self.name!r})"


IN_BOUNDS = Invariant(
    "in_bounds",
    lambda spec, state: _bounded(spec, state),
    "Every slot stays within the layout's declared range (the domain the induction assumes).",
)


def deadlock_invariant(spec: FlightSpec) -> Invariant:
    """``no_deadlock`` as a state invariant: a live request implies some engine step (eviction aside)
    is enabled. Built from the spec's own guards, so BMC and induction check the explorer's property."""
    from flightcheck.spec.expr import Implies, Or
    progress = [a for a in spec.actions if spec.is_progress(a)]

    def check(spec: FlightSpec, state: Sequence[Any]) -> Any:
        s = spec.view(state)
        live = Or(*[spec.is_live(s, i) for i in range(spec.num_requests)])
        return Implies(live, Or(*[spec.guard(state, a) for a in progress]))

    return Invariant("no_deadlock", check, "No state with a live request is left without an engine step.")


def checked_properties(spec: FlightSpec) -> list[Any]:
    """What the z3 checks check: the spec's safety properties, then ``no_deadlock`` as an invariant."""
    from flightcheck.spec.properties import properties_for, safety_properties

    props: list[Any] = list(safety_properties(spec))
    if any(p.kind == "deadlock_free" for p in properties_for(spec)):
        props.append(deadlock_invariant(spec))
    return props


def _bounded(spec: FlightSpec, state: Sequence[Any]) -> Any:
    from flightcheck.spec.expr import And

    return And(*[And(lo <= v, v <= hi) for v, (lo, hi) in zip(state, spec.layout.bounds())])
