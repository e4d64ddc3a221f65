"""Trace validation: the engine's event log fed through the spec, event by event.

:class:`SpecTracker` turns engine request IDs into spec request indices (arrival order) and builds the
:class:`~flightcheck.spec.scenario.Scenario` from the arrivals (class by input key, pages and tail from
``num_tokens``, the decode bound from ``max_tokens``), growing the spec as requests arrive (or checking
them against a fixed scenario). :class:`TraceValidator` maps each event to its spec action and checks:

1. the action is enabled in the spec's current state (else: which guard condition failed);
2. the event's details agree with the spec's successor (hit pages, prefill units, published pages,
   released followers, the abort's phase, the first token);
3. the spec's safety properties hold in the successor (ghost-based ones such as ``single_prefill``
   fire here);
4. online, with the engine at hand: the abstraction of the engine's real state
   (:func:`~flightcheck.checks.conform.abstraction.abstract_state`) equals the successor, field by field.

A failure raises :class:`ConformanceError` carrying a :class:`Diagnosis`: the last state that matched,
the event, what failed, and the properties at stake (violated by the engine's abstract state, violated
if the refused event were forced through, or reached from the engine's state within a short lookahead).

:class:`Monitor` hooks a validator into an engine's event listener (every event checked as it
happens); :func:`validate_events` checks a log offline (``flightcheck validate EVENTS.jsonl``).

For example::

    >>> from flightcheck.spec.scenario import Policy
    >>> events = [{"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0,
    ...            "input": "ab", "num_tokens": 40},
    ...           {"seq": 1, "action": "prefill", "request": 0, "first_page": 0, "num_units": 1,
    ...            "num_tokens": 16, "first_token": False}]
    >>> report = validate_events(events, Policy())
    >>> report.ok, report.diagnosis.reasons[0]
    (False, 'r0 is waiting, not prefill')
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from flightcheck.checks.conform.abstraction import KVWitness, abstract_state, chain_tags, state_diff, without_ghosts
from flightcheck.spec.describe import describe, page_name
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.properties import safety_properties
from flightcheck.spec.scenario import Policy, Request, Scenario
from flightcheck.spec.state import (
    ABORTED, BLOCKED, DECODE, FINISHED, NOT_CACHED, OPEN, PHASE_NAMES, PREFILL, READY, WAITING, State,
)

PAGE_SIZE = 16


class ConformanceError(AssertionError):
    """The engine did something the spec does not allow; ``diagnosis`` says what and where."""

    def __init__(self, diagnosis: "Diagnosis") -> None:
        super().__init__(diagnosis.format())
        self.diagnosis = diagnosis


@dataclass
class Diagnosis:
    """What went wrong, in terms a person can act on.

    ``kind``: ``disabled`` (the event's action is not enabled in the spec), ``payload`` (its details
    disagree with the spec), ``state`` (the engine's abstract state differs from the spec's), ``property``
    (a safety property fails), ``stuck`` (the engine makes no progress with live requests),
    ``termination`` (a termination verdict differs), ``error`` (the engine raised, or changed state on an
    error). ``properties`` names the spec properties at stake, ``notes`` says how each was found.
    """

    kind: str
    summary: str
    event: dict[str, Any] | None = None
    action: str | None = None
    last_state: dict[str, Any] | None = None
    reasons: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def format(self) -> str:
        """A readable multi-line report."""
        lines = [f"[{self.kind}] {self.summary}"]
        if self.event is not None:
            lines.append(f"  event: {json.dumps(self.event)}" + (f"  (spec action {self.action})" if self.action else ""))
        lines += [f"  - {r}" for r in self.reasons]
        if self.properties:
            lines.append(f"  property at stake: {', '.join(self.properties)}")
        lines += [f"    {n}" for n in self.notes]
        if self.last_state is not None:
            lines.append(f"  last matching spec state: {json.dumps(self.last_state)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"kind": self.kind, "summary": self.summary, "event": self.event, "action": self.action,
                "reasons": self.reasons, "properties": self.properties, "notes": self.notes,
                "last_state": self.last_state}


def policy_of(config: Any) -> Policy:
    """The spec policy matching an ``EngineConfig`` (capacity = max_running, chunk = prefill budget)."""
    return Policy(coordination=config.coordination, release=config.release, publication=config.publication,
                  capacity=config.max_running, chunk=config.prefill_chunk_pages)


class SpecTracker:
    """The spec side of a run: the scenario built from arrivals, the spec over it, and its current state.

    With ``scenario`` given, arrivals must match it request by request (used by coverage and replay, so
    that states land on that scenario's explored graph); otherwise the scenario grows with every arrival
    and the state is lifted into the larger layout (each field's old slots are a prefix of the new ones).
    """

    def __init__(self, policy: Policy, *, scenario: Scenario | None = None, spec_class: type = FlightSpec,
                 options: dict[str, bool] | None = None) -> None:
        self.policy = policy
        self.spec_class = spec_class
        self.options = options if options is not None else {"aborts": True, "notifications": True, "eviction": True}
        self.fixed = scenario
        self.requests: list[Request] = []
        self.index_of: dict[int, int] = {}
        self.engine_of: dict[int, int] = {}
        self.class_of_input: dict[str, int] = {}
        self.class_of_tokens: dict[tuple[int, ...], int] = {}
        self.class_tokens: dict[int, tuple[int, ...]] = {}
        self.class_keys: dict[int, dict[int, str]] = {}
        self.key_slot: dict[str, tuple[int, int]] = {}
        self._tags: dict[int, list[int]] = {}
        self.last_action: Action | None = None
        self.next_index: int | None = None  # a fixed scenario's index for the next arrival (replay)
        if scenario is not None:
            self.spec = spec_class(scenario.with_options(**self.options), policy)
        else:
            self.spec = None
        self.state: State | None = self.spec.initial() if self.spec is not None else None

    # --- naming ------------------------------------------------------------------------------------
    def cls_slot(self, i: int) -> int:
        """Class slot of spec request ``i``."""
        return self.spec.layout.req_class[i]

    def page_key(self, c: int, p: int) -> str | None:
        """The chained key of page ``p`` of class slot ``c``, when known."""
        return self.class_keys.get(c, {}).get(p)

    def page_tags(self, c: int, p: int, size: int = PAGE_SIZE) -> list[int]:
        """The KV chain tags page ``p`` of class slot ``c`` must carry once computed."""
        if c not in self._tags:
            self._tags[c] = chain_tags(self.class_tokens[c])
        return self._tags[c][p * size:(p + 1) * size]

    def learn_keys(self, c: int, keys: dict[int, str]) -> None:
        """Record page keys of class slot ``c`` (from the engine's request or a publish event)."""
        mine = self.class_keys.setdefault(c, {})
        for p, key in keys.items():
            mine[p] = key
            self.key_slot[key] = (c, p)

    # --- arrivals ----------------------------------------------------------------------------------
    def arrive(self, engine_id: int, input_key: str, num_tokens: int, num_decode: int,
               token_ids: tuple[int, ...] | None = None, page_keys: list[str] | None = None) -> int:
        """Name a new arrival: its spec index (growing the spec unless the scenario is fixed)."""
        if engine_id in self.index_of:
            raise ConformanceError(Diagnosis("payload", f"request {engine_id} arrived twice"))
        i = len(self.engine_of)
        if self.fixed is not None and self.next_index is not None:
            i, self.next_index = self.next_index, None
        num_pages, has_tail = num_tokens // PAGE_SIZE, num_tokens % PAGE_SIZE != 0
        if self.fixed is not None:
            if i >= self.fixed.num_requests:
                raise ConformanceError(Diagnosis("payload", f"request {engine_id} is arrival {i + 1}, but scenario "
                                                 f"{self.fixed.name} has only {self.fixed.num_requests} requests"))
            want = self.fixed.requests[i]
            c = self.fixed.classes.index(want.cls)
            known = self.class_of_input.get(input_key)
            if (known is not None and known != c) or (known is None and c in self.class_of_input.values()) \
                    or (num_pages, has_tail) != (want.num_pages, want.has_tail):
                raise ConformanceError(Diagnosis("payload", f"arrival {i} (engine request {engine_id}, {num_tokens} "
                                                 f"tokens) does not match request r{i} of scenario {self.fixed.name}"))
        else:
            c = self.class_of_input.get(input_key, len(self.class_of_input))
            self.requests.append(Request(cls=c, num_pages=max(num_pages, 1), has_tail=has_tail, num_decode=num_decode))
            if num_pages < 1:
                raise ConformanceError(Diagnosis("payload", f"request {engine_id} has {num_tokens} tokens: the spec "
                                                 "models prompts of at least one full page"))
            old_spec, old_state = self.spec, self.state
            scn = Scenario("trace", tuple(self.requests), policy=self.policy, **self.options)
            self.spec = self.spec_class(scn, self.policy)
            self.state = _lift(old_spec, old_state, self.spec)
        self.class_of_input[input_key] = c
        self.index_of[engine_id] = i
        self.engine_of[i] = engine_id
        if token_ids is not None:
            self.class_of_tokens[tuple(token_ids)] = c
            self.class_tokens[c] = tuple(token_ids)
        if page_keys is not None:
            self.learn_keys(c, dict(enumerate(page_keys)))
        return i

    def observe_arrival(self, event: dict[str, Any], engine: Any) -> None:
        """Register an engine ``arrive`` event (tokens, keys, max_tokens read from the engine) and apply it."""
        if event["action"] != "arrive":
            return
        req = engine.scheduler.requests[event["request"]]
        i = self.arrive(event["request"], event["input"], event["num_tokens"], req.sampling.max_tokens - 1,
                        req.token_ids, req.page_keys)
        self.last_action = Action("arrive", i)
        self.state = self.spec.apply(self.state, self.last_action)

    def action_of(self, event: dict[str, Any]) -> Action:
        """The spec action an (already-arrived) engine event stands for."""
        name = event["action"]
        if name == "release":
            return Action("release", self._index(event["flight"], event))
        if name == "evict":
            slot = self.key_slot.get(event["key"])
            if slot is None:
                raise ConformanceError(Diagnosis("payload", f"evicted key {event['key']} was never published", event))
            return Action("evict", self.spec.layout.page(*slot))
        if name == "notify":
            i = self.index_of.get(event["request"])
            return Action("notify", self.spec.num_requests if i is None else i)
        return Action(name, self._index(event["request"], event))

    def _index(self, engine_id: int, event: dict[str, Any]) -> int:
        i = self.index_of.get(engine_id)
        if i is None:
            raise ConformanceError(Diagnosis("payload", f"event names request {engine_id}, which never arrived", event))
        return i


def _lift(old_spec: FlightSpec | None, old_state: State | None, new_spec: FlightSpec) -> State:
    new = list(new_spec.initial())
    if old_spec is None:
        return tuple(new)
    for name, (off, size, _lo, _hi) in old_spec.layout.fields.items():
        noff = new_spec.layout.fields[name][0]
        for j in range(max(size, 1)):
            new[noff + j] = old_state[off + j]
    return tuple(new)


# --- explanations ------------------------------------------------------------------------------------
def explain_guard(spec: FlightSpec, state: State, action: Action) -> list[str]:
    """The conditions of ``action``'s guard that fail in ``state``, in words."""
    s = spec.view(state)
    n, i = action.name, action.arg
    pol = spec.policy
    out: list[str] = []
    if n == "evict":
        page = page_name(spec, i)
        if s.pg[i] != READY:
            out.append(f"page {page} is not cached")
        if s.ref[i] != 0:
            out.append(f"page {page} has {s.ref[i]} references")
        c, p = spec.layout.page_slots[i]
        if p + 1 < spec.layout.num_shareable[c] and s.pg[i + 1] != NOT_CACHED:
            out.append(f"page {page} is not a leaf: its successor is cached")
        return out or ["guard false"]
    if n == "notify":
        return [f"r{i} is live ({PHASE_NAMES[s.ph[i]]}): its termination is not a notification"]
    ph = PHASE_NAMES[s.ph[i]]
    if n == "arrive":
        out.append(f"r{i} already arrived ({ph})")
    elif n == "admit":
        if s.ph[i] != WAITING:
            out.append(f"r{i} is {ph}, not waiting" + (" (a follower of an open flight)" if s.ph[i] == BLOCKED else ""))
        if spec.num_running(s) >= pol.capacity:
            out.append(f"{spec.num_running(s)} requests already run (capacity {pol.capacity})")
    elif n == "prefill":
        if s.ph[i] != PREFILL:
            out.append(f"r{i} is {ph}, not prefill")
        elif pol.publication == "incremental" and s.pubd[i] < spec.published_upto(s, i):
            out.append(f"r{i} has computed pages not yet published ({s.pubd[i]} of {spec.published_upto(s, i)}): "
                       "incremental publication publishes before the next prefill")
    elif n == "publish":
        if not PREFILL <= s.ph[i] <= DECODE:
            out.append(f"r{i} is {ph}, not running")
        elif s.pubd[i] >= spec.published_upto(s, i):
            out.append(f"r{i} has nothing computed to publish (published {s.pubd[i]}, computed shareable "
                       f"{spec.published_upto(s, i)})")
        elif pol.publication == "on-completion":
            if not (pol.single_flight and pol.release == "after-prefill"):
                out.append("on-completion publication publishes only at finish")
            elif s.ph[i] != DECODE:
                out.append(f"r{i}'s prefill is not complete (on-completion publication)")
            elif not spec.leads_open_flight(s, i):
                out.append(f"r{i} does not lead an open flight (on-completion publication)")
    elif n == "release":
        if not pol.single_flight:
            out.append("coordination is none: there are no flights")
        elif s.fl[i] != OPEN:
            out.append(f"flight f{i} is not open")
        elif pol.release == "after-prefill":
            out.append(f"leader r{i} is {ph} with {s.pubd[i]} of {spec.shareable(i)} shareable pages published "
                       "(after-prefill release needs its prefill complete and every shareable page published, "
                       "or the leader terminated)")
        else:
            out.append(f"leader r{i} is {ph}: on-completion release waits for the leader to terminate")
    elif n == "decode":
        if s.ph[i] != DECODE:
            out.append(f"r{i} is {ph}, not decode")
        else:
            out.append(f"r{i} already took {s.dec[i]} decode steps (max_tokens allows "
                       f"{spec.scenario.requests[i].num_decode})")
    elif n == "finish":
        out.append(f"r{i} is {ph}, not decode")
    elif n == "abort":
        out.append(f"r{i} is {ph}, not live")
    return out or ["guard false"]


def violated(spec: FlightSpec, state: State) -> list[str]:
    """Names of the safety properties ``state`` violates."""
    return [p.name for p in safety_properties(spec) if not p.holds(spec, state)]


def lookahead(spec: FlightSpec, state: State, depth: int = 2) -> tuple[str, list[str]] | None:
    """The nearest safety violation the spec reaches from ``state`` within ``depth`` steps: (property, path)."""
    seen = {state}
    queue = deque([(state, [])])
    while queue:
        s, path = queue.popleft()
        if path:
            bad = violated(spec, s)
            if bad:
                return bad[0], path
        if len(path) >= depth:
            continue
        for a, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                queue.append((t, path + [str(a)]))
    return None


def _forced(spec: FlightSpec, state: State, action: Action) -> list[str]:
    try:
        return violated(spec, spec.apply(state, action))
    except Exception:  # a forced update may index out of range; then it names nothing
        return []


# --- the validator -----------------------------------------------------------------------------------
class TraceValidator:
    """Feeds engine events through a :class:`SpecTracker`'s spec; optionally compares the engine's state."""

    def __init__(self, tracker: SpecTracker, *, engine: Any = None, witness: KVWitness | None = None,
                 depth: int = 2, compare_states: bool = True) -> None:
        self.tracker = tracker
        self.engine = engine
        self.compare_states = compare_states and engine is not None
        self.witness = witness
        self.depth = depth
        self.num_events = 0
        self.actions: list[str] = []

    @property
    def spec(self) -> FlightSpec:
        """The tracker's current spec (it grows as requests arrive)."""
        return self.tracker.spec

    def _fail(self, kind: str, summary: str, event: dict | None, action: Action | None, state: State | None,
              reasons: list[str], props: list[str] | None = None, notes: list[str] | None = None) -> None:
        spec = self.spec
        last = describe(spec, state) if spec is not None and state is not None else None
        raise ConformanceError(Diagnosis(kind, summary, event, str(action) if action else None, last, reasons,
                                         sorted(set(props or []), key=(props or []).index), notes or []))

    def feed(self, event: dict[str, Any]) -> Action:
        """Check one event; raises :class:`ConformanceError` with a diagnosis on a mismatch."""
        tr = self.tracker
        name = event.get("action")
        self.num_events += 1
        if name == "arrive":
            before = tr.state
            if self.engine is not None:
                tr.observe_arrival(event, self.engine)
            else:
                i = tr.arrive(event["request"], event["input"], event["num_tokens"], event.get("num_decode", 0))
                tr.last_action = Action("arrive", i)
                before = tr.state
                tr.state = tr.spec.apply(tr.state, tr.last_action)
            action = tr.last_action
            self._check_arrive(event, action, before)
        elif tr.spec is None:
            if name == "notify":  # nothing has arrived: every ID is unknown, and there is no state to check
                return Action("notify", 0)
            self._fail("disabled", f"{name} before any arrival", event, None, None, ["no request has arrived"])
        else:
            action = tr.action_of(event)
            before = tr.state
            if not self.spec.guard(before, action):
                self._refused(event, action, before)
            after = self._apply(before, action, event)
            self._check_payload(event, action, before, after)
            tr.state = after
            tr.last_action = action
        self.actions.append(str(action))
        bad = violated(self.spec, tr.state)
        if bad:
            self._fail("property", f"the spec state after {action} violates {', '.join(bad)}", event, action, before,
                       [f"{p} fails in the state the engine's events lead to" for p in bad], bad)
        if self.compare_states:
            self.compare(event, action, before)
        return action

    def _apply(self, before: State, action: Action, event: dict) -> State:
        """The spec's successor; a prefill the engine cut short is the spec's prefill with that chunk.

        Why: the spec's ``chunk`` is what one prefill of one request computes, the engine's
        ``prefill_chunk_pages`` a budget one step shares among requests, so a request may get fewer
        units than the budget. Such a prefill is a run of the same spec with a smaller chunk, and
        every property is checked for every chunk size, so it is accepted (more units are not).
        """
        spec = self.spec
        units = event.get("num_units") if action.name == "prefill" else None
        if isinstance(units, int) and 1 <= units < spec.policy.chunk:
            full = spec.policy
            spec.policy = replace(full, chunk=units)
            try:
                return spec.apply(before, action)
            finally:
                spec.policy = full
        return spec.apply(before, action)

    def _refused(self, event: dict, action: Action, before: State) -> None:
        props, notes = [], []
        if self.compare_states:
            eng = abstract_state(self.engine, self.tracker, self.witness)
            for p in violated(self.spec, eng):
                props.append(p)
                notes.append(f"the engine's abstract state violates {p}")
        for p in _forced(self.spec, before, action):
            if p not in props:
                props.append(p)
                notes.append(f"forcing {action} through would violate {p}")
        if action.name == "notify":
            props.append("termination_validated")
            notes.append("the engine rejected the termination of a live request")
        reasons = explain_guard(self.spec, before, action)
        if event.get("reason") == "wait-bound":
            reasons.append("a wait-bound release (EngineConfig.follower_wait_bound, off by default) frees a follower "
                           "on its own; the spec has no such action, so runs with the bound set cannot conform")
        self._fail("disabled", f"{action} is not enabled in the spec", event, action, before, reasons, props, notes)

    def _check_arrive(self, event: dict, action: Action, before: State) -> None:
        s = self.spec.view(self.tracker.state)
        i = action.arg
        role = "solo" if not self.tracker.policy.single_flight else ("follower" if s.ph[i] == BLOCKED else "leader")
        flight = None if role == "solo" else self.tracker.engine_of[s.mem[i] - 1]
        reasons = []
        if event.get("role") != role:
            reasons.append(f"the engine made it {event.get('role')}, the spec {role}")
        elif event.get("flight") != flight:
            reasons.append(f"the engine put it in flight {event.get('flight')}, the spec in {flight}")
        if reasons:
            props = ["one_flight_per_input"] if role != "solo" else []
            self._fail("payload", f"{action}: the role differs", event, action, before, reasons, props)

    def _check_payload(self, event: dict, action: Action, before: State, after: State) -> None:
        spec, n, i = self.spec, action.name, action.arg
        b, a = spec.view(before), spec.view(after)
        r: list[str] = []
        if n == "admit" and event.get("hit_pages") != a.hit[i]:
            r.append(f"hit_pages: engine {event.get('hit_pages')}, spec {a.hit[i]}")
        elif n == "prefill":
            if event.get("num_units") != a.done[i] - b.done[i]:
                r.append(f"num_units: engine {event.get('num_units')}, spec {a.done[i] - b.done[i]}")
            if bool(event.get("first_token")) != (a.ph[i] == DECODE):
                r.append(f"first_token: engine {event.get('first_token')}, spec {a.ph[i] == DECODE}")
        elif n in ("publish", "finish"):
            got = [p["index"] for p in event.get("pages" if n == "publish" else "published", [])]
            want = list(range(b.pubd[i], a.pubd[i] if n == "publish" else spec.published_upto(b, i)))
            if got != want:
                r.append(f"published page indices: engine {got}, spec {want}")
            c = self.tracker.cls_slot(i)
            self.tracker.learn_keys(c, {p["index"]: p["key"] for p in event.get("pages" if n == "publish" else "published", [])})
        elif n == "release":
            want = [self.tracker.engine_of.get(j) for j in range(spec.num_requests)
                    if j != i and b.mem[j] == i + 1 and b.ph[j] == BLOCKED]
            if sorted(event.get("followers", [])) != sorted(want):
                r.append(f"released followers: engine {event.get('followers')}, spec {want}")
            reason = {FINISHED: "on-completion", ABORTED: "leader-aborted"}.get(b.ph[i], "after-prefill")
            if event.get("reason") != reason:
                r.append(f"release reason: engine {event.get('reason')}, spec {reason}")
        elif n == "abort" and event.get("phase") != PHASE_NAMES[b.ph[i]]:
            r.append(f"aborted phase: engine {event.get('phase')}, spec {PHASE_NAMES[b.ph[i]]}")
        elif n == "notify" and i < spec.num_requests and spec.accepts(b, i):
            self._fail("termination", f"the engine rejected a termination of r{i} the coordinator must accept",
                       event, action, before, [f"r{i} is still known to the spec's coordinator"],
                       ["termination_validated"])
        if r:
            self._fail("payload", f"{action}: the event's details differ from the spec", event, action, before, r,
                       violated(spec, after))

    def compare(self, event: dict | None, action: Action | None, before: State | None,
                context: str = "") -> None:
        """Compare the engine's abstract state with the spec state (ghosts aside)."""
        spec, expected = self.spec, self.tracker.state
        actual = abstract_state(self.engine, self.tracker, self.witness)
        diffs = state_diff(spec, without_ghosts(spec, expected), actual)
        bad = violated(spec, actual)
        if not diffs and not bad:
            return
        props, notes = list(bad), [f"the engine's abstract state violates {p}" for p in bad]
        if not bad:
            ahead = lookahead(spec, actual, self.depth)
            if ahead is not None:
                props.append(ahead[0])
                notes.append(f"from the engine's state the spec reaches a violation of {ahead[0]} by: "
                             + ", ".join(ahead[1]))
        where = f" after {action}" if action else (f" {context}" if context else "")
        reasons = [f"{slot}: spec {_slot_text(slot, x)}, engine {_slot_text(slot, y)}" for slot, x, y in diffs]
        self._fail("state" if diffs else "property", f"the engine's state differs from the spec{where}"
                   if diffs else f"the engine's state violates {', '.join(bad)}{where}", event, action,
                   before if before is not None else expected, reasons, props, notes)


def _slot_text(slot: str, v: int) -> str:
    if slot.startswith("ph["):
        return PHASE_NAMES[v]
    if slot.startswith("pg["):
        return ("not cached", "reserved (KV not written)", "ready")[v]
    return str(v)


class Monitor:
    """The online monitor: every event of ``engine`` is checked against the spec as it is emitted.

    A failure raises :class:`ConformanceError` out of the engine call that emitted the event and is kept
    in ``failure``. ``check`` compares the engine's state at a quiet point (between engine calls).
    """

    def __init__(self, engine: Any, policy: Policy | None = None, *, scenario: Scenario | None = None,
                 spec_class: type = FlightSpec, compare: bool = True, depth: int = 2) -> None:
        self.engine = engine
        self.witness = KVWitness.attach(engine)
        self.tracker = SpecTracker(policy or policy_of(engine.config), scenario=scenario, spec_class=spec_class)
        self.validator = TraceValidator(self.tracker, engine=engine, witness=self.witness, depth=depth,
                                        compare_states=compare)
        self.failure: Diagnosis | None = None
        engine.events.add_listener(self._on_event)

    def _on_event(self, event: dict[str, Any]) -> None:
        if self.failure is not None:
            return
        try:
            self.validator.feed(event)
        except ConformanceError as error:
            self.failure = error.diagnosis
            raise

    def check(self, context: str = "") -> None:
        """Compare the engine's abstract state with the spec's now; raises ConformanceError."""
        if self.failure is not None:
            raise ConformanceError(self.failure)
        if self.tracker.spec is None:
            return
        try:
            self.validator.compare(None, None, None, context)
        except ConformanceError as error:
            self.failure = error.diagnosis
            raise

    @property
    def spec(self) -> FlightSpec | None:
        """The spec the monitor checks against (None before the first arrival)."""
        return self.tracker.spec

    @property
    def state(self) -> State | None:
        """The spec state the engine's events have led to."""
        return self.tracker.state


# --- offline ------------------------------------------------------------------------------------------
@dataclass
class ValidationReport:
    """The verdict of an offline validation: events checked, the spec actions, and any diagnosis."""

    ok: bool
    num_events: int
    actions: list[str]
    diagnosis: Diagnosis | None
    final_state: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"verdict": "ok" if self.ok else "mismatch", "events": self.num_events, "actions": self.actions,
                "diagnosis": self.diagnosis.to_json() if self.diagnosis else None, "final_state": self.final_state}


def read_events(path: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Events of a JSON-lines log and an optional header (a first line with a "policy" object).

    Raises ValueError naming the line of anything that is not an event.
    """
    events, header = [], None
    with open(path, encoding="utf-8") as fh:
        for num, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{num}: not JSON ({error.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{num}: expected a JSON object, got {type(obj).__name__}")
            if "policy" in obj and "action" not in obj and not events:
                header = obj
                continue
            if "action" not in obj:
                raise ValueError(f"{path}:{num}: an event needs an \"action\" field")
            events.append(obj)
    return events, header


_REQUIRED = {"arrive": ("request", "input", "num_tokens"), "admit": ("request",), "prefill": ("request",),
             "publish": ("request", "pages"), "release": ("flight",), "decode": ("request",),
             "finish": ("request",), "abort": ("request", "phase"), "notify": ("request",),
             "evict": ("key",)}


def validate_events(events: Iterable[dict[str, Any]], policy: Policy, *, scenario: Scenario | None = None,
                    spec_class: type = FlightSpec) -> ValidationReport:
    """Validate a whole event log offline (no engine state: guards, details and properties).

    The decode bound of each request is its ``max_tokens - 1`` when the arrive event carries
    ``max_tokens``, else the number of decode events it has in the log.
    """
    events = list(events)
    decodes: dict[int, int] = {}
    for ev in events:
        if ev.get("action") == "decode":
            decodes[ev.get("request")] = decodes.get(ev.get("request"), 0) + 1
    tracker = SpecTracker(policy, scenario=scenario, spec_class=spec_class)
    validator = TraceValidator(tracker)
    for num, ev in enumerate(events, 1):
        name = ev.get("action")
        missing = [f for f in _REQUIRED.get(name, ()) if f not in ev]
        if name not in _REQUIRED or missing:
            d = Diagnosis("payload", f"event {num}: " + (f"unknown action {name!r}" if name not in _REQUIRED
                                                         else f"{name} event lacks {', '.join(missing)}"), ev)
            return ValidationReport(False, num - 1, validator.actions, d, None)
        if name == "arrive":
            ev = dict(ev, num_decode=ev["max_tokens"] - 1 if "max_tokens" in ev else decodes.get(ev["request"], 0))
        try:
            validator.feed(ev)
        except ConformanceError as error:
            return ValidationReport(False, num, validator.actions, error.diagnosis, None)
    final = describe(tracker.spec, tracker.state) if tracker.spec is not None else None
    return ValidationReport(True, len(events), validator.actions, None, final)
