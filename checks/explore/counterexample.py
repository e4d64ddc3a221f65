"""Counterexamples: concrete paths from the initial state, the form every checker reports.

A :class:`Counterexample` is a concrete path from the initial state: numbered steps, each an action and
the state it leads to, optionally followed by a loop (for liveness) that repeats forever. It prints as a
numbered list naming, for each step, only what changed, in the design's own words ("r1: blocked ->
waiting", "flight f0 closed", "page A0 ready refs=1"), so a person can follow it without the layout (the words come from the model's ``changes`` and
``describe``; for the flight spec, :mod:`flightcheck.spec.describe`), and says whether the coordinator accepted
or rejected each termination (:mod:`flightcheck.checks.explore.steps`).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> cx = Counterexample.from_actions(spec, ["arrive(0)", "arrive(1)"])
    >>> print(cx.format(spec))
     1. arrive(0)   r0: waiting, leads f0; index A -> f0
     2. arrive(1)   r1: blocked, follows f0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from flightcheck.spec.model import Action, FlightSpec, parse_action
from flightcheck.spec.state import State


@dataclass(frozen=True)
class Step:
    """One step of a path: the action taken and the state it led to."""

    action: Action
    state: State


@dataclass
class Counterexample:
    """A concrete path from the initial state, with an optional loop that repeats forever."""

    steps: list[Step]
    loop: list[Step] = field(default_factory=list)
    stutters: bool = False  # the path ends in a state where no engine step is enabled

    @property
    def actions(self) -> list[str]:
        """The actions of the path as strings, e.g. ``["arrive(0)", "admit(0)"]``."""
        return [str(s.action) for s in self.steps]

    def __len__(self) -> int:
        return len(self.steps)

    @classmethod
    def from_actions(cls, spec: FlightSpec, actions: Iterable[str | Action]) -> "Counterexample":
        """Replay actions from the initial state; raises ValueError at the first disabled one."""
        state = spec.initial()
        steps = []
        for n, a in enumerate(actions, 1):
            act = parse_action(a) if isinstance(a, str) else a
            if act not in spec.actions:
                raise ValueError(f"step {n}: {act} is not an action of this scenario")
            if not spec.guard(state, act):
                raise ValueError(f"step {n}: {act} is not enabled here")
            state = spec.apply(state, act)
            steps.append(Step(act, state))
        return cls(steps)

    def final_state(self, spec: FlightSpec) -> State:
        """The last state of the path (the initial state for an empty path)."""
        return self.steps[-1].state if self.steps else spec.initial()

    def format(self, spec: FlightSpec) -> str:
        """A numbered list of actions, each with what it changed."""
        from flightcheck.checks.explore.steps import step_changes

        lines = []
        prev = spec.initial()
        width = max((len(str(s.action)) for s in self.steps + self.loop), default=0) + 2
        for n, step in enumerate(self.steps, 1):
            lines.append(f"{n:2d}. {str(step.action):<{width}}{step_changes(spec, prev, step.action, step.state)}")
            prev = step.state
        if self.loop:
            lines.append("    then forever:")
            for step in self.loop:
                lines.append(f"    - {str(step.action):<{width}}{step_changes(spec, prev, step.action, step.state)}")
                prev = step.state
        if self.stutters:
            lines.append("    then nothing: no engine step is enabled, and a live request never terminates")
        return "\n".join(lines)

    def to_json(self, spec: FlightSpec) -> dict[str, Any]:
        """A JSON-ready form: the actions, the loop, and the final state described."""
        return {
            "length": len(self.steps),
            "actions": self.actions,
            "loop": [str(s.action) for s in self.loop],
            "stutters": self.stutters,
            "final_state": spec.describe(self.steps[-1].state if self.steps else spec.initial()),
        }


def replay_representatives(spec: Any, sym: Any, cpath: Iterable[tuple[Action, Any]], start: Any = None,
                           perm: Any = None) -> tuple[list[Step], Any, Any]:
    """Concrete steps for a path of (representative action, representative reached) pairs of a
    symmetry-reduced graph, from ``start`` (the initial state by default): each action is renamed
    through the running permutation, and each state reached must have the representative the graph
    holds. Returns the steps, the last concrete state and the permutation, so a loop can continue.
    With ``sym`` None the actions are applied as they are."""
    s = spec.initial() if start is None else start
    if sym is not None and perm is None:
        perm = sym.canonical(s)[1]
    steps = []
    for a, c_next in cpath:
        act = a if sym is None else sym.rename_action(a, sym.inverse(perm))
        s = spec.apply(s, act)
        steps.append(Step(act, s))
        if sym is not None:
            c, perm = sym.canonical(s)
            if c != c_next:
                raise AssertionError(f"replaying {act} reaches {c}, not the explored state {c_next}")
    return steps, s, perm
