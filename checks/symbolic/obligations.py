"""The obligations at one engine state: each engine guard against the spec's guard, each command against the spec's update.

At a state ``s`` (an engine built by its own commands) with abstraction ``abs(s)``
(:func:`~flightcheck.checks.conform.abstraction.abstract_state`, named by a
:class:`~flightcheck.checks.conform.tracker.SpecTracker` grown from the arrivals):

- **guard, spec to engine**: every spec action enabled at ``abs(s)`` has its engine guard enabled
  (:func:`~flightcheck.checks.symbolic.harness.engine_guard`; for ``admit`` and ``evict``, where the engine
  chooses the request or the page, some spec instance enabled means the engine's guard holds);
- **guard and update, engine to spec**: every command whose engine guard holds is run on a copy of the
  engine; the events it emits, read as spec actions, must be a run of the spec from ``abs(s)`` (each
  action's guard holds where it is taken) whose first action (after the evictions an allocation makes
  first) is the command's own; the spec must be calm after it (a lost leader's flight settled in the same
  call); ``abs`` of the engine afterwards must equal the spec's state (ghost slots aside); and the
  engine's invariants (:meth:`~flightcheck.impl.engine.Engine.check_invariants`: the pool's partition,
  reference counts equal to holders) must still hold, and so must its LRU contract, which the spec's
  pool abstracts away (:mod:`~flightcheck.checks.symbolic.recency`: a page that gains a holder becomes
  the most recently used; an eviction takes a least recently used leaf), and at a ``finish`` its
  finish-reason contract (:mod:`~flightcheck.checks.symbolic.finishing`: ``can_finish`` names EOS, a
  stop string or length in their order of precedence, in every finishing context). A refused termination notice (``notify``) must
  raise ``UnknownRequestError`` with a ``notify`` event, exactly when the spec's coordinator would refuse it;
  a tombstone's notice (:func:`~flightcheck.checks.symbolic.statekey.is_tombstone`: a terminated request
  that holds nothing) is run under each way it may have ended, since the state key forgets how.

Whatever fails is a :class:`Finding` with the spec's diagnosis: the slots that differ and the safety
properties the engine's resulting state violates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.conform.abstraction import abstract_state, state_diff
from flightcheck.checks.conform.diagnosis import ConformanceError
from flightcheck.checks.conform.explain import violated
from flightcheck.checks.conform.policy_map import policy_of
from flightcheck.checks.conform.tracker import SpecTracker, lift_state
from flightcheck.checks.symbolic.bound import Bound
from flightcheck.checks.symbolic.finishing import finish_problem
from flightcheck.checks.symbolic.recency import recency_problem, snapshot
from flightcheck.checks.symbolic.harness import (UNKNOWN_ID, Command, Frozen, copy_engine, enabled_commands,
                                                 engine_guard, execute, freeze, thaw)
from flightcheck.checks.symbolic.statekey import ENDINGS, is_tombstone, with_ending
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.spec.actions import (CHOSEN_BY_ENGINE, COMPLETIONS, FOLLOWER_RELEASES, FORWARD_PASSES, HANDOVERS, NOTICES,
                                       SLOT_ACTIONS, SUBMISSIONS)
from flightcheck.spec.model import Action


@dataclass
class Finding:
    """One failed obligation: the action it is about, its kind (``guard``, ``update``, ``event``,
    ``settle``, ``invariant``, ``recency``, ``finish-reason``, ``raised``), what happened, the engine command (None for a spec-enabled
    action the engine refuses), the spec action, the slots that differ ``(slot, spec, engine)``, the
    safety properties the engine's state violates and, for a ``finish-reason`` finding, the finishing
    context it failed in."""

    action: str
    kind: str
    summary: str
    command: Command | None = None
    spec_action: str | None = None
    diff: list[tuple[str, int, int]] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    finishing: Any = None  # a finish-reason finding's Context (checks/symbolic/finishing.py)

    def format(self) -> str:
        """One line, then a line per differing slot."""
        props = f" [violates {', '.join(self.properties)}]" if self.properties else ""
        lines = [f"{self.action}: {self.kind}: {self.summary}{props}"]
        lines += [f"  {slot}: spec {want}, engine {got}" for slot, want, got in self.diff]
        return "\n".join(lines)


class Namer:
    """Spec trackers by the engine's arrivals (engine request IDs are issued in arrival order, so the
    tokens of the requests so far name the tracker), built once each; and the spec's answers at the
    abstract states the check meets, asked once each.

    Why the answers are kept: many engine states share one abstraction (it forgets page IDs, the LRU
    clock, the queues' order), and the spec's guards are the bulk of a state's check; a spec's guard
    and update are functions of its state (spec states are plain tuples), so an answer kept is the
    answer recomputed. They are kept per spec object (one per tracker)."""

    def __init__(self, policy: Any, num_pages: int) -> None:
        self.policy, self.num_pages = policy, num_pages
        self._trackers: dict[tuple, SpecTracker] = {}
        self._enabled: dict[tuple, frozenset] = {}
        self._steps: dict[tuple, tuple[bool, Any]] = {}
        self._calm: dict[tuple, bool] = {}

    def enabled(self, spec: Any, state: Any) -> frozenset:
        """The actions of ``spec`` enabled at ``state`` (``spec.enabled``, kept)."""
        key = (spec, state)
        out = self._enabled.get(key)
        if out is None:
            out = self._enabled[key] = frozenset(spec.enabled(state))
        return out

    def step(self, spec: Any, state: Any, action: Action) -> tuple[bool, Any]:
        """Whether ``action``'s guard holds at ``state`` and, if so, the spec's successor (kept)."""
        key = (spec, state, action)
        out = self._steps.get(key)
        if out is None:
            enabled = bool(spec.guard(state, action))
            out = self._steps[key] = (enabled, spec.apply(state, action) if enabled else None)
        return out

    def calm(self, spec: Any, state: Any) -> bool:
        """``spec.calm`` at ``state`` (kept)."""
        key = (spec, state)
        out = self._calm.get(key)
        if out is None:
            out = self._calm[key] = bool(spec.calm(spec.view(state)))
        return out

    def tracker(self, engine: Any) -> SpecTracker:
        """The tracker naming ``engine``'s requests, classes and pages."""
        reqs = list(engine.scheduler.requests.values())
        key = tuple(r.token_ids for r in reqs)
        tr = self._trackers.get(key)
        if tr is None:
            tr = SpecTracker(self.policy, num_pages=self.num_pages)
            for r in reqs:
                tr.arrive(r.request_id, r.input_key, r.num_tokens, r.max_positions - r.num_tokens, r.token_ids,
                          r.page_keys)
            self._trackers[key] = tr
        return tr


def namer_for(engine: Any) -> Namer:
    """A :class:`Namer` for engines of ``engine``'s configuration."""
    return Namer(policy_of(engine.config), engine.config.num_pages)


def command_for(action: Action, tracker: SpecTracker, engine: Any) -> Command | None:
    """The engine command standing for spec action ``action`` (None when the engine has none)."""
    name = action.name
    if name in CHOSEN_BY_ENGINE:
        return Command(name)
    if name in NOTICES:
        rid = tracker.engine_of.get(action.arg)
        return Command(name, UNKNOWN_ID if rid is None else rid)
    rid = tracker.engine_of.get(action.arg)
    if rid is None:
        return None
    if name in FOLLOWER_RELEASES:
        return next((Command(name, fid) for fid, f in engine.scheduler.coordinator.flights.items()
                     if f.leader_request_id == rid), None)
    if name in HANDOVERS:
        return None  # the engine hands a flight on only inside the call that loses its leader
    return Command(name, rid)


def _expected(command: Command, tracker: SpecTracker | None, engine: Any) -> Action | None:
    """The spec action ``command`` performs at ``engine``'s state, named by ``tracker`` (None when the
    engine chooses the argument: admit, evict)."""
    if command.name in SUBMISSIONS:
        return Action(command.name, len(tracker.engine_of) if tracker is not None else 0)
    if command.arg < 0 or tracker is None:
        return None
    if command.name in FOLLOWER_RELEASES:  # a flight is named after its current leader in the spec
        return Action(command.name, tracker.index_of[engine.scheduler.coordinator.flights[command.arg].leader_request_id])
    if command.name in NOTICES:
        i = tracker.index_of.get(command.arg)
        return Action(command.name, tracker.spec.num_requests if i is None else i)
    return Action(command.name, tracker.index_of[command.arg])


@dataclass
class StateCheck:
    """What checking one state found: the commands run (and the engines after them, for those that
    conformed), the spec actions whose guard was compared, and the findings."""

    ran: list[Command]
    successors: list[tuple[Command, Any]]
    compared: list[str]
    findings: list[Finding]
    events: dict[str, int] = field(default_factory=dict)   # spec actions the commands' events took, by name
    seconds: dict[str, float] = field(default_factory=dict)  # time spent per action's obligations


def check_state(engine: Any, bound: Bound, namer: Namer) -> StateCheck:
    """Every obligation at ``engine``'s state (see the module docstring)."""
    findings: list[Finding] = []
    compared: list[str] = []
    seconds: dict[str, float] = {}
    events: dict[str, int] = {}
    tr = namer.tracker(engine) if engine.scheduler.requests else None
    spec = tr.spec if tr is not None else None
    here = abstract_state(engine, tr) if spec is not None else None
    if spec is not None:
        t0 = time.perf_counter()
        enabled = namer.enabled(spec, here)
        share = (time.perf_counter() - t0) / len(spec.actions)  # the spec's guards, spread over its actions
        for action in spec.actions:
            if action.name in SUBMISSIONS:
                continue
            compared.append(action.name)
            t0 = time.perf_counter() - share
            if action not in enabled:
                seconds[action.name] = seconds.get(action.name, 0.0) + time.perf_counter() - t0
                continue
            command = command_for(action, tr, engine)
            refused = command is None or not engine_guard(engine, command)
            seconds[action.name] = seconds.get(action.name, 0.0) + time.perf_counter() - t0
            if refused:
                findings.append(Finding(action.name, "guard", f"the spec enables {action} at this state, the "
                                        f"engine's guard refuses {command or 'it (the engine has no such command now)'}",
                                        command, str(action)))
    ran, successors = [], []
    frozen = None
    tombstones = {rid for rid, r in engine.scheduler.requests.items() if is_tombstone(engine.scheduler, r)}
    for command in enabled_commands(engine, bound):
        if spec is None and command.name not in SUBMISSIONS:
            continue  # before the first arrival the spec has no request to name
        ran.append(command)
        t0 = time.perf_counter()
        frozen = frozen or freeze(engine)  # once per state: every command runs on its own thawed copy
        after, found, taken = run_command(engine, bound, namer, command, tr, here, frozen)
        seconds[command.name] = seconds.get(command.name, 0.0) + time.perf_counter() - t0
        for action in taken:
            events[action.name] = events.get(action.name, 0) + 1
        findings += found
        if not found:
            successors.append((command, after))
        if command.name in NOTICES and command.arg in tombstones:
            t0 = time.perf_counter()
            for found, taken in _other_endings(engine, bound, namer, command, tr, frozen):
                ran.append(command)
                for action in taken:
                    events[action.name] = events.get(action.name, 0) + 1
                findings += found
            seconds[command.name] += time.perf_counter() - t0
    return StateCheck(ran, successors, compared, findings, events, seconds)


def _other_endings(engine: Any, bound: Bound, namer: Namer, command: Command, tr: SpecTracker,
                   frozen: Frozen) -> list[tuple[list[Finding], list[Action]]]:
    """The termination notice ``command`` of a tombstone, run at each other state of the class the key
    merges (the tombstone ended in each other way, :data:`~flightcheck.checks.symbolic.statekey.ENDINGS`):
    the one obligation that reads how a tombstone ended. A finding names the ending it was run under.
    One copy serves every ending (a refused notice changes nothing); after a finding the copy is no
    longer trusted, so the rest are not run."""
    request = engine.scheduler.requests[command.arg]
    variant = thaw(frozen)
    out = []
    for phase, expired in ENDINGS:
        if (phase, expired) == (request.phase, request.is_expired):
            continue
        with_ending(variant, command.arg, phase, expired)
        _after, found, taken = run_command(engine, bound, namer, command, tr, abstract_state(variant, tr),
                                           after=variant)
        for finding in found:
            finding.summary += f" (request {command.arg} ended {phase.value}{', expired' if expired else ''})"
        out.append((found, taken))
        if found:
            break
    return out


def run_command(engine: Any, bound: Bound, namer: Namer, command: Command, tr: SpecTracker | None,
                here: Any, frozen: Frozen | None = None, after: Any = None) -> tuple[Any, list[Finding], list[Action]]:
    """Run ``command`` on a copy of ``engine`` (thawed from ``frozen``, ``engine`` as
    :func:`~flightcheck.checks.symbolic.harness.freeze` saved it, when given; or ``after``, a copy of a
    state of ``engine``'s class, whose abstraction is ``here``) and check it against the spec; returns
    the copy, the findings and the spec actions its events took (up to the first that failed)."""
    want = _expected(command, tr, engine)
    if after is None:
        after = thaw(frozen) if frozen is not None else copy_engine(engine)
    start = after.events.num_emitted
    refused = None
    name = command.name
    try:
        execute(after, bound, command)
    except UnknownRequestError as error:
        refused = error
    except Exception as error:  # an assertion of the engine's own, or anything a broken command raises
        return after, [Finding(name, "raised", f"{command} raised {type(error).__name__}: {error}", command)], []
    events = [e for e in after.events.events if e["seq"] >= start]
    tr2 = namer.tracker(after)
    spec2 = tr2.spec
    state = here if tr2 is tr else lift_state(tr.spec if tr is not None else None, here, spec2)

    taken: list[Action] = []

    def fail(kind: str, summary: str, action: str | None = None, diff: Any = (),
             finishing: Any = None) -> tuple[Any, list[Finding], list]:
        props = []
        try:
            props = violated(spec2, abstract_state(after, tr2))
        except Exception:  # a state the spec's properties cannot read is reported by its diff
            pass
        about = action.split("(")[0] if action and kind == "guard" else name
        return after, [Finding(about, kind, summary, command, action or (str(want) if want else None), list(diff),
                               props, finishing)], taken

    if refused is not None and name not in NOTICES:
        return fail("raised", f"{command} raised {type(refused).__name__}: {refused}")
    if name in NOTICES and refused is None:
        return fail("event", f"the engine accepted a termination notice for {'an unknown ID' if command.arg == UNKNOWN_ID else f'terminated request {command.arg}'}, which the spec refuses")
    for event in events:
        try:
            action = tr2.action_of(event)
        except ConformanceError as error:
            return fail("event", f"{command} emitted an event the spec cannot name: {error.diagnosis.summary}")
        enabled, following = namer.step(spec2, state, action)
        if not enabled:
            return fail("guard", f"{command} took {action} where the spec's guard is false"
                        + (f" (after {', '.join(map(str, taken))})" if taken else ""), str(action))
        if action.name in NOTICES and spec2.accepts(spec2.view(state), action.arg) != bool(event.get("accepted")):
            return fail("guard", f"the engine {'accepted' if event.get('accepted') else 'refused'} {action}, the spec "
                        f"{'accepts' if not event.get('accepted') else 'refuses'} it", str(action))
        state = following
        taken.append(action)
    own = [a for a in taken if not (a.name in SLOT_ACTIONS and name in FORWARD_PASSES)]
    if not own or own[0].name != name or (want is not None and own[0] != want):
        return fail("event", f"{command} emitted {', '.join(map(str, taken)) or 'nothing'}, not the spec's {want or name}")
    if not namer.calm(spec2, state):
        return fail("settle", f"{command} ({', '.join(map(str, taken))}) leaves a lost leader's flight pending: the "
                    "engine must release or hand it on in the same call")
    actual = abstract_state(after, tr2)
    diff = state_diff(spec2, state, actual) if actual != state else []
    if diff:
        return fail("update", f"after {command} ({', '.join(map(str, taken))}) the engine's state is not the spec's "
                    "update", str(own[0]), diff)
    try:
        after.check_invariants()
    except AssertionError as error:
        return fail("invariant", f"after {command} the engine's invariant fails: {error}", str(own[0]))
    problem = recency_problem(snapshot(engine), after, events)
    if problem is not None:
        return fail("recency", f"after {command} the engine's LRU order is wrong: {problem}", str(own[0]))
    if name in COMPLETIONS:  # the reason, asked of the state before the command (on a copy of its own)
        wrong = finish_problem(thaw(frozen) if frozen is not None else copy_engine(engine), command.arg)
        if wrong is not None:
            context, got = wrong
            return fail("finish-reason", f"in the context '{context}', can_finish({command.arg}) says {got!r}; the "
                        f"contract says {context.expected()!r}", str(own[0]), finishing=context)
    return after, [], taken
