"""Counterexample replay: a spec path driven through the real engine, action by action.

A path (``flightcheck explore --json``'s ``"counterexample"``, or a file of action strings) is replayed
on a fresh engine over the tiny model. Each spec action goes through the engine's own guard/command
pair: ``arrive`` -> ``add_request``, ``admit`` -> ``can_admit``/``admit`` (the engine admits the head of
its FIFO queue, so the path's request must be at the head), ``prefill`` -> ``can_prefill`` and one
forward pass of that request's next chunk, ``publish`` -> ``can_publish``/``publish``, ``release`` ->
``can_release``/``release``, ``decode`` -> one forward pass of that request, ``finish`` -> ``finish``,
``evict`` -> ``can_evict``/``evict`` (the engine's LRU victim must be the path's page), ``abort`` ->
``abort``, ``notify`` -> ``notify_termination``. A monitor checks every event the engine emits against
the spec (or a design variant's spec, for a variant's counterexample) and compares the engine's state.

Each step reports whether the engine showed the same behaviour: it took the step, emitted exactly the
spec's action, and reached the same abstract state. A path ending in a violation is *reproduced* when
the engine follows it to the end and shows the violation too (it rejects the legitimate termination,
accepts the bogus one, or is stuck where the spec deadlocks).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> r = replay(["arrive(0)", "arrive(1)", "admit(0)", "prefill(0)"], SCENARIOS["burst2"])
    >>> [s.same for s in r.steps]
    [True, True, True, True]
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.conform.schema import POLICY
from flightcheck.checks.inputs import (MAX_PATH_ACTIONS, MAX_SHOWN_CHARS, STR, InputError, check_fields, list_of,
                                       nullable, optional, parse_json, read_lines, record_lines, shown)
from flightcheck.spec.model import parse_action
from flightcheck.checks.conform.diagnosis import ConformanceError
from flightcheck.checks.conform.explain import violated
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.checks.conform.adapter import ADAPTER, Submission
from flightcheck.spec.actions import ADMISSIONS, COMPLETIONS, FOLLOWER_RELEASES, NOTICES, SLOT_ACTIONS, SUBMISSIONS
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.scenario import Policy, Scenario
from flightcheck.spec.state import TERM_BOGUS_ACCEPTED, TERM_LEGIT_REJECTED

# The actions whose argument need not name a request that arrived in the engine: a fresh index, an ID
# perhaps never submitted, a page slot.
_NOT_AN_ARRIVED_REQUEST = SUBMISSIONS | NOTICES | SLOT_ACTIONS


@dataclass
class ReplayStep:
    """One replayed action: did the engine take it, and did it behave as the spec."""

    number: int
    action: str
    same: bool
    note: str = ""
    violated: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return dict(self.__dict__)


@dataclass
class ReplayResult:
    """A replay's steps, whether the engine followed the whole path, and whether a violation reproduced."""

    steps: list[ReplayStep]
    followed: bool
    spec_violation: list[str]
    reproduced: bool
    summary: str

    def format(self) -> str:
        """A numbered list of the steps, then the verdict."""
        lines = []
        for s in self.steps:
            mark = "same" if s.same else "DIFFERS"
            bad = f"  [spec violates {', '.join(s.violated)}]" if s.violated else ""
            lines.append(f"{s.number:3d}. {s.action:12s} {mark}{(': ' + s.note) if s.note else ''}{bad}")
        return "\n".join(lines + [self.summary])

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"followed": self.followed, "reproduced": self.reproduced, "spec_violation": self.spec_violation,
                "summary": self.summary, "steps": [s.to_json() for s in self.steps]}


@dataclass
class PathFile:
    """A path read from a file: its actions, where each stands (line, field) and the metadata found.

    ``places[n]`` is ``(line, None)`` for a list of lines, ``(line or None, "counterexample[n]")`` inside a
    JSON document (the line is known when the document is one line, as ``explore --json`` writes it).
    """

    actions: list[str]
    places: list[tuple[int | None, str | None]]
    meta: dict[str, Any]

    def error(self, source: str, n: int, message: str) -> InputError:
        """An :class:`~flightcheck.checks.inputs.InputError` about action ``n`` (0-based), at its place."""
        line, field = self.places[n]
        return InputError(source, line, field, message)


_PATH_FIELDS = {"counterexample": optional(nullable(list_of(STR))), "scenario": optional(nullable(STR)),
                "variant": optional(nullable(STR)), "policy": optional(nullable(POLICY))}


def parse_path(text: str, source: str = "<path>") -> PathFile:
    """Actions from ``explore --json``/``prove --path-out`` output, a JSON list, or one action per line.

    Lines (``explore``'s numbered list pastes as it is: ``  2. admit(0)   r0: prefill``) follow the
    readers' rules (:mod:`flightcheck.checks.inputs`); ``#`` starts a comment and a line holding only a
    comment is skipped. A path holds at most :data:`~flightcheck.checks.inputs.MAX_PATH_ACTIONS` actions
    (each replayed on the engine). Raises :class:`~flightcheck.checks.inputs.InputError` naming the source, the
    line and the field of anything that is not a path.
    """
    stripped = text.strip()
    one_line = 1 if "\n" not in stripped else None
    if stripped.startswith("{"):
        obj = parse_json(stripped, source, one_line)
        found = check_fields(obj, _PATH_FIELDS)
        if found is not None:
            raise InputError(source, one_line, found[0], found[1])
        if not obj.get("counterexample"):
            raise InputError(source, one_line, "counterexample", "no actions (did the exploration find a "
                             "violation? only a violated property's output has a counterexample)")
        meta = {k: obj[k] for k in ("scenario", "policy", "variant") if obj.get(k) is not None}
        actions, field = list(obj["counterexample"]), "counterexample"
        places = [(one_line, f"{field}[{n}]") for n in range(len(actions))]
    elif stripped.startswith("["):
        found = list_of(STR).problem(obj := parse_json(stripped, source, one_line))
        if found is not None:
            raise InputError(source, one_line, f"item {found[0][1:-1]}" if found[0] else None, found[1])
        if not obj:
            raise InputError(source, one_line, None, "the list holds no actions")
        meta, actions = {}, obj
        places = [(one_line, f"item {n}") for n in range(len(actions))]
    else:
        meta, actions, places = {}, [], []
        for number, line in record_lines(text.split("\n"), source, "actions, one per line"):
            words = line.split("#")[0].split()
            if not words:
                continue  # a comment line
            actions.append(words[1] if len(words) > 1 and words[0].rstrip(".").isdecimal() else words[0])
            places.append((number, None))
        if not actions:
            raise InputError(source, None, None, "holds only comments, no actions")
    path = PathFile(actions, places, meta)
    if len(actions) > MAX_PATH_ACTIONS:
        raise path.error(source, MAX_PATH_ACTIONS, f"the path has {len(actions):,} actions, more than "
                         f"{MAX_PATH_ACTIONS:,} (MAX_PATH_ACTIONS)")
    for n, a in enumerate(actions):
        if len(a) > MAX_SHOWN_CHARS:  # no action is this long; and the message must not quote it whole
            raise path.error(source, n, f"not an action: {shown(a)}; expected NAME(INDEX)")
        try:
            parse_action(a)
        except ValueError as error:
            raise path.error(source, n, str(error)) from None
    return path


def load_path(text: str) -> tuple[list[str], dict[str, Any]]:
    """The actions and metadata (scenario, policy, variant) of :func:`parse_path`.

    Raises :class:`~flightcheck.checks.inputs.InputError` (a ValueError) naming what is wrong.
    """
    path = parse_path(text)
    return path.actions, path.meta


def read_path(file: str | os.PathLike[str]) -> PathFile:
    """:func:`parse_path` of a file, read as UTF-8 (a bad byte names its line)."""
    return parse_path("\n".join(read_lines(file, "actions")), str(file))


def path_problem(actions: list[str], scenario: Scenario, policy: Policy | None = None, *,
                 spec_class: type = FlightSpec) -> tuple[int, str] | None:
    """``(index, why)`` of the first action that is not a step of the spec from the path's start, or None.

    What :func:`replay` would report as "the path is not a run of it", found before any engine runs, so
    that a path of the wrong scenario, policy or variant is bad input rather than an engine's departure.
    """
    policy = policy or scenario.policy
    spec = spec_class(scenario.with_options(aborts=True, notifications=True, eviction=True), policy)
    instances = set(spec.actions)
    state = spec.initial()
    for n, text in enumerate(actions):
        action = parse_action(text)
        if action not in instances:
            top = max((a.arg for a in spec.actions if a.name == action.name), default=None)
            return n, f"{action} is not an action of this scenario" + \
                ("" if top is None else f" ({action.name} takes 0 to {top} here)")
        if not spec.guard(state, action):
            return n, f"{action} is not enabled in the spec after the path's first {n} action(s): the path " \
                      "is not a run of the spec"
        state = spec.apply(state, action)
    return None


class _Driver:
    """Runs spec actions through the engine's guard/command pairs."""

    def __init__(self, scenario: Scenario, policy: Policy, spec_class: type, model: str) -> None:
        from flightcheck.checks.conform.engines import build_engine
        from flightcheck.checks.conform.policy_map import config_of
        from flightcheck.checks.conform.prompts import lifetime_pages, scenario_tokens

        self.scenario, self.policy = scenario, policy
        self.tokens = scenario_tokens(scenario)
        lifetimes = [lifetime_pages(len(self.tokens[r.cls]), r.num_decode + 1) for r in scenario.requests]
        num_pages = scenario.num_pages if scenario.has_pool else sum(lifetimes) + sum(r.num_shareable for r in scenario.requests) + 2
        self.engine = build_engine(model, config_of(policy, num_pages))
        self.monitor = Monitor(self.engine, policy, scenario=scenario, spec_class=spec_class)
        self.engine_id: dict[int, int] = {}

    @property
    def sched(self) -> Any:
        """The engine's scheduler (its guard/command pairs)."""
        return self.engine.scheduler

    def request(self, i: int) -> Any:
        """The engine request standing for spec request ``i``."""
        return self.sched.requests[self.engine_id[i]]

    def run(self, action: Action) -> str | None:
        """Take ``action`` in the engine through its entry of the adapter table
        (:data:`~flightcheck.checks.conform.adapter.ADAPTER`); returns why the engine cannot, or None. What
        the replay adds: which engine ID the path's index names, that a choice the engine makes (whom it
        admits, which page it evicts) is the path's, and how a termination notice is answered."""
        name = action.name
        if name not in _NOT_AN_ARRIVED_REQUEST and action.arg not in self.engine_id:
            return f"r{action.arg} never arrived in the engine"
        if name in SUBMISSIONS:
            return self._arrive(action)
        if name in NOTICES:
            return self._notify(action)
        step, key = ADAPTER[name], self._key(action)
        if not step.guard(self.sched, key):
            return step.refusal
        why = self._choice(action)
        if why is not None:
            return why
        if name in COMPLETIONS and self.sched.can_finish(self.request(action.arg)) is None:
            # the spec's finish stands for any stop the client or the model can make
            self.monitor.validator.forced_finishes.add(self.engine_id[action.arg])
        step.command(self.engine, key)
        return None

    def _key(self, action: Action) -> Any:
        """What the engine names for the action's argument: a flight's ID for a release, a request's ID
        otherwise (``admit`` and ``evict`` take none: the engine chooses)."""
        if action.name in FOLLOWER_RELEASES:
            return self.monitor.tracker.flight_id(action.arg)
        if action.name in ADMISSIONS or action.name in SLOT_ACTIONS:
            return None
        return self.engine_id[action.arg]

    def _choice(self, action: Action) -> str | None:
        """Why the engine's own choice is not the path's: whom it admits, which page it evicts; or None."""
        sched = self.sched
        if action.name in ADMISSIONS and sched.can_admit().request is not self.request(action.arg):
            return "the engine admits the first waiting request that fits, which is another request"
        if action.name in SLOT_ACTIONS:
            c, p = self.monitor.spec.layout.page_slots[action.arg]
            if sched.pool.pages[sched.can_evict()].key != self.monitor.tracker.page_key(c, p):
                return "the engine's LRU victim is another page"
        return None

    def _arrive(self, action: Action) -> str | None:
        i = action.arg
        r = self.scenario.requests[i]
        self.monitor.tracker.next_index = i
        self.engine_id[i] = ADAPTER[action.name].command(self.engine, Submission(tuple(self.tokens[r.cls]), r.num_decode + 1))
        return None

    def _notify(self, action: Action) -> str | None:
        rid = self.engine_id.get(action.arg, 10_000 + action.arg)  # an ID never issued stands for an unknown one
        try:
            ADAPTER[action.name].command(self.engine, rid)
        except ConformanceError:
            raise
        except Exception as error:
            return f"rejected: {type(error).__name__}"
        return "accepted"


def replay(actions: list[str], scenario: Scenario, policy: Policy | None = None, *,
           spec_class: type = FlightSpec, model: str = "tiny") -> ReplayResult:
    """Replay ``actions`` (spec action strings) against a fresh engine; see the module docstring."""
    policy = policy or scenario.policy
    spec = spec_class(scenario.with_options(aborts=True, notifications=True, expiry=True, failures=True), policy)
    driver = _Driver(scenario, policy, spec_class, model)
    mon = driver.monitor
    path = [parse_action(a) for a in actions]
    steps: list[ReplayStep] = []
    state = spec.initial()
    followed = True
    for n, action in enumerate(path, 1):
        if not spec.guard(state, action):
            steps.append(ReplayStep(n, str(action), False, "not enabled in the spec: the path is not a run of it"))
            followed = False
            break
        after = spec.apply(state, action)
        bad = violated(spec, after)
        taken = mon.validator.actions
        if len(taken) >= n and taken[n - 1] == str(action):  # the engine already took it (e.g. release at once)
            steps.append(ReplayStep(n, str(action), True, "the engine took it already, in the previous command", bad))
            state = after
            continue
        try:
            why = driver.run(action)
            if why is None:
                mon.check()
        except ConformanceError as error:
            steps.append(ReplayStep(n, str(action), False, error.diagnosis.format().replace("\n", " | "), bad))
            followed = False
            break
        except Exception as error:
            why = f"the engine raised {type(error).__name__}: {error}"
        g = spec.view(after).g_term
        term_changed = g != spec.view(state).g_term
        if action.name in NOTICES:
            same = (why == "accepted") == (g == TERM_BOGUS_ACCEPTED and term_changed)
            steps.append(ReplayStep(n, str(action), same, f"the engine {why}", bad))
        elif why is not None and term_changed and g == TERM_LEGIT_REJECTED and "UnknownRequestError" in why:
            steps.append(ReplayStep(n, str(action), True, f"termination rejected as in the spec: {why}", bad))
        elif why is not None:
            steps.append(ReplayStep(n, str(action), False, why, bad))
        else:
            extra = mon.validator.actions[n:]
            ahead = [str(a) for a in path[n:n + len(extra)]]
            steps.append(ReplayStep(n, str(action), True, ("then " + ", ".join(extra)) if extra else "", bad))
            if extra[:len(ahead)] != ahead:  # the engine went on by itself, where the path does something else
                steps.append(ReplayStep(n + 1, str(path[n]), False, f"the engine took {', '.join(extra)} at once, "
                                        f"where the path continues with {', '.join(ahead)}"))
        if not steps[-1].same:
            followed = False
            break
        state = after
    final_bad = violated(spec, state) if followed else []
    stuck = False
    if followed:
        view = spec.view(state)
        live = any(spec.is_live(view, i) for i in range(spec.num_requests))
        pending = [a for a in spec.enabled(state) if spec.is_progress(a)]
        if live and not pending and mon.failure is None:
            before = len(driver.engine.events.events)
            for _ in range(3):
                driver.engine.step()
            stuck = len(driver.engine.events.events) == before
            final_bad = final_bad + ["no_deadlock"] if stuck else final_bad
            steps.append(ReplayStep(len(path) + 1, "(3 engine steps)", stuck,
                                    "the engine is stuck as well" if stuck else "the engine moves on"))
    spec_bad = sorted(set(b for s in steps for b in s.violated) | set(final_bad))
    reproduced = followed and bool(spec_bad) and all(s.same for s in steps)
    if reproduced:
        summary = f"reproduced: the engine follows the path and shows {', '.join(spec_bad)}"
    elif followed and not spec_bad:
        summary = "the engine follows the whole path, as the spec does"
    elif followed:
        summary = f"not reproduced: the engine follows the path but does not show {', '.join(spec_bad)}"
    else:
        summary = f"the engine departs from the path at step {steps[-1].number} ({steps[-1].action})"
    return ReplayResult(steps, followed, spec_bad, reproduced, summary)
