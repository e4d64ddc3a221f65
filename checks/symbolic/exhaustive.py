"""Every engine state within the bound, by breadth-first enumeration with the engine's own commands.

From the empty engine, every command whose engine guard holds is run (on a copy) and checked
(:func:`~flightcheck.checks.symbolic.obligations.check_state`); each engine it leads to that conformed is a
new state unless an equal one (:func:`~flightcheck.checks.symbolic.statekey.state_key`: equal up to
the names of pages and of requests, and to how the requests that hold nothing ended) was seen. The bound
closes the space: at most N arrivals, each request's prompt and ``max_tokens`` fixed by its template, and
M pages. Building states only with the engine's own commands makes every state well formed by
construction (its invariants are checked after every command besides). A state whose command failed is
not explored further. The first path to each state is kept (breadth first: a shortest one), so a
finding comes back as the commands that reach it.

This is exhaustive enumeration, not symbolic execution: it covers every state of the bound one by one
(:mod:`~flightcheck.checks.symbolic.crosshair_run` reads the same harness symbolically).

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> run = enumerate_states(Bound(1, 3), "single-flight")
    >>> run.complete, run.num_states, run.findings
    (True, 32, [])
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from flightcheck.checks.symbolic.bound import Bound
from flightcheck.checks.symbolic.harness import Command, build_engine
from flightcheck.checks.symbolic.statekey import state_key
from flightcheck.checks.symbolic.obligations import Finding, namer_for, check_state


@dataclass
class Enumeration:
    """One configuration's enumeration: states visited, whether it covered the whole bound, per action
    the states, commands and events checked and the seconds spent, and the findings with their paths."""

    config: str
    num_states: int = 0
    complete: bool = False
    states: dict[str, int] = field(default_factory=dict)
    commands: dict[str, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    findings: list[tuple[list[Command], Finding]] = field(default_factory=list)
    wall_seconds: float = 0.0
    paths: int = 0  # CrossHair only: the paths it ran
    note: str = ""  # CrossHair only: what it said when no finding could be rebuilt from it

    def tally(self, result: Any) -> None:
        """Count one state's :class:`~flightcheck.checks.symbolic.obligations.StateCheck`: the state, and
        per action the state, the commands run, the events checked and the seconds spent."""
        self.num_states += 1
        for name in set(result.compared) | {c.name for c in result.ran}:
            self.states[name] = self.states.get(name, 0) + 1
        for c in result.ran:
            self.commands[c.name] = self.commands.get(c.name, 0) + 1
        for name, n in result.events.items():
            self.events[name] = self.events.get(name, 0) + n
        for name, s in result.seconds.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + s


def _path(parents: dict, key: Any) -> list[Command]:
    out = []
    while parents[key] is not None:
        key, command = parents[key]
        out.append(command)
    return out[::-1]


def enumerate_states(bound: Bound, config: str, *, first: bool = False, max_states: int = 1_000_000,
                     time_limit: float | None = None, symmetry: bool = True, tombstones: bool = True,
                     clock: Callable[[], float] = time.perf_counter) -> Enumeration:
    """Check every engine state of ``config`` within ``bound``; with ``first``, stop at the first
    finding. Stops unfinished (``complete`` False) past ``max_states`` states or ``time_limit`` seconds.
    ``symmetry``: one state per class of states equal up to the requests' names (see
    :func:`~flightcheck.checks.symbolic.statekey.state_key`); without it, one per state up to page names.
    ``tombstones`` (with ``symmetry``): one state per class of states equal up to how the requests that
    hold nothing ended, each such request's termination notice checked under every ending. ``clock``:
    what ``time_limit`` is read on (``time.process_time`` for CPU seconds on a shared machine)."""
    start, wall = clock(), time.perf_counter()
    engine = build_engine(bound, config)
    namer = namer_for(engine)
    out = Enumeration(config)
    root = state_key(engine, symmetry=symmetry, tombstones=tombstones)
    parents: dict[Any, Any] = {root: None}
    frontier: deque = deque([(engine, root)])
    seen_finding: set[tuple[str, str]] = set()
    while frontier:
        if out.num_states >= max_states or (time_limit is not None and clock() - start > time_limit):
            out.wall_seconds = time.perf_counter() - wall
            return out
        engine, key = frontier.popleft()
        result = check_state(engine, bound, namer)
        out.tally(result)
        for finding in result.findings:
            if (finding.action, finding.kind) not in seen_finding:  # the first (shortest) of each kind
                seen_finding.add((finding.action, finding.kind))
                out.findings.append((_path(parents, key), finding))
        if first and out.findings:
            out.wall_seconds = time.perf_counter() - wall
            return out
        for command, after in result.successors:
            k = state_key(after, symmetry=symmetry, tombstones=tombstones)
            if k not in parents:
                parents[k] = (key, command)
                frontier.append((after, k))
    out.complete = True
    out.wall_seconds = time.perf_counter() - wall
    return out
