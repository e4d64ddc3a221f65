"""Shortest runs of the spec with a shape: what the walkthrough illustrates each step of the story with.

:func:`shortest_run` searches a spec's state graph breadth first (so the run it returns is a shortest
one) for a state meeting ``goal``, taking only the steps ``keep`` allows. The shapes the story uses:
:func:`cold_burst` (every request arrives before the engine computes anything, and the engine admits
whatever fits before it computes, as the real step loop does), :func:`publish_and_release_first` (the
engine publishes and releases in the step that computed the pages), :func:`full_decode` (a request
takes every decode step it may), combined with :func:`both`; and :func:`all_finished` (every request
finished normally).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> spec = FlightSpec(SCENARIOS["burst2"].with_policy(coordination="none", publication="on-completion"))
    >>> run = shortest_run(spec, all_finished, keep=cold_burst)
    >>> run.actions[:4], recovered(spec, run)
    (['arrive(0)', 'arrive(1)', 'admit(0)', 'admit(1)'], {'r0': 0, 'r1': 0})
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from flightcheck.checks.explore.counterexample import Counterexample, Step
from flightcheck.spec.actions import ADMISSIONS, CACHE_PUBLICATIONS, COMPLETIONS, FOLLOWER_RELEASES, SUBMISSIONS

Keep = Callable[[Any, Any, Any], bool]
Goal = Callable[[Any, Any], bool]


def shortest_run(spec: Any, goal: Goal, *, keep: Keep | None = None, start: Counterexample | None = None,
                 max_states: int = 200_000) -> Counterexample | None:
    """A shortest run (continuing ``start`` if given) to a state where ``goal(spec, state)`` holds, taking
    only steps with ``keep(spec, state, action)``; None when there is none."""
    prefix = list(start.steps) if start is not None else []
    s0 = prefix[-1].state if prefix else spec.initial()
    parent: dict[Any, tuple[Any, Any] | None] = {s0: None}
    queue = deque([s0])
    while queue:
        s = queue.popleft()
        if goal(spec, s):
            steps = []
            while parent[s] is not None:
                prev, act = parent[s]
                steps.append(Step(act, s))
                s = prev
            return Counterexample(prefix + steps[::-1])
        for act, t in spec.successors(s):
            if t in parent or (keep is not None and not keep(spec, s, act)):
                continue
            if len(parent) >= max_states:
                raise RuntimeError(f"more than {max_states} states searched for a run; use a smaller scenario")
            parent[t] = (s, act)
            queue.append(t)
    return None


def _phases(spec: Any, state: Any) -> list[str]:
    return [info["phase"] for info in spec.describe(state)["requests"].values()]


def all_finished(spec: Any, state: Any) -> bool:
    """Every request finished normally."""
    return all(p == "finished" for p in _phases(spec, state))


def cold_burst(spec: Any, state: Any, action: Any) -> bool:
    """Arrivals only while nothing has started computing, and admissions before any other engine step."""
    phases = _phases(spec, state)
    if action.name in SUBMISSIONS:
        return all(p in ("absent", "blocked", "waiting") for p in phases)
    if action.name in ADMISSIONS:
        return True
    admits = [a for a in spec.enabled(state) if a.name in ADMISSIONS]
    return not (spec.is_engine(action) and admits)


def full_decode(spec: Any, state: Any, action: Any) -> bool:
    """A request finishes only after all its decode steps (as with a fixed ``max_tokens``)."""
    if action.name not in COMPLETIONS:
        return True
    i = action.arg
    return spec.describe(state)["requests"][f"r{i}"].get("decoded", 0) >= spec.scenario.requests[i].num_decode


# The engine steps it takes in the step that computed the pages, before any other.
_IN_THE_STEP = CACHE_PUBLICATIONS | FOLLOWER_RELEASES


def publish_and_release_first(spec: Any, state: Any, action: Any) -> bool:
    """The engine publishes and releases in the step that computed the pages: while a ``publish`` or
    ``release`` is enabled, no other engine step comes first."""
    if not spec.is_engine(action) or action.name in _IN_THE_STEP:
        return True
    return not any(a.name in _IN_THE_STEP for a in spec.enabled(state))


def both(*keeps: Keep) -> Keep:
    """Steps every one of ``keeps`` allows."""
    return lambda spec, state, action: all(k(spec, state, action) for k in keeps)


def recovered(spec: Any, run: Counterexample) -> dict[str, int]:
    """Pages each request recovered from the cache at admission along ``run``."""
    out = {r: 0 for r in spec.describe(spec.initial())["requests"]}
    for step in run.steps:
        if step.action.name in ADMISSIONS:
            r = f"r{step.action.arg}"
            out[r] = spec.describe(step.state)["requests"][r].get("hit", 0)
    return out


def first_step(run: Counterexample, name: str, arg: int | None = None) -> int | None:
    """The 1-based number of the first step taking action ``name`` (on ``arg``), or None."""
    for n, step in enumerate(run.steps, 1):
        if step.action.name == name and (arg is None or step.action.arg == arg):
            return n
    return None
