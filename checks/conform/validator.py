"""Trace validation: the engine's event log fed through the spec, event by event.

:class:`TraceValidator` maps each event to its spec action (naming requests through a
:class:`~flightcheck.checks.conform.tracker.SpecTracker`) and checks:

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

:class:`~flightcheck.checks.conform.monitor.Monitor` hooks a validator into an engine's event listener
(every event checked as it happens); :func:`~flightcheck.checks.conform.eventlog.validate_events` checks
a log offline (``flightcheck validate EVENTS.jsonl``).

For example::

    >>> from flightcheck.spec.scenario import Policy
    >>> from flightcheck.checks.conform.eventlog import validate_events
    >>> events = [{"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0,
    ...            "input": "ab", "num_tokens": 40},
    ...           {"seq": 1, "action": "prefill", "request": 0, "first_page": 0, "num_units": 1,
    ...            "num_tokens": 16, "first_token": False}]
    >>> report = validate_events(events, Policy())
    >>> report.ok, report.diagnosis.reasons[0]
    (False, 'r0 is waiting, not prefill')
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, Iterator

from flightcheck.checks.conform.abstraction import abstract_state, state_diff, without_ghosts
from flightcheck.checks.conform.books import engine_books, finish_problems, planned_pages
from flightcheck.checks.conform.outputs import request_output_problems
from flightcheck.checks.conform.counters import ReferenceCounters
from flightcheck.checks.conform.recency import Recency
from flightcheck.checks.conform.witness import KVWitness
from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.explain import explain_guard, explain_notice, forced, lookahead, violated
from flightcheck.checks.conform.tracker import SpecTracker, lift_state
from flightcheck.spec.describe import describe
from flightcheck.spec.actions import FLIGHT_ACTIONS, HANDOVERS, NOTICES, PROMPT_PASSES, SUBMISSIONS
from flightcheck.impl.events import (RELEASE_AFTER_PREFILL, RELEASE_LEADER_ABORTED, RELEASE_LEADER_FAILED,
                                     RELEASE_ON_COMPLETION)
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.properties import safety_properties
from flightcheck.spec.state import ABORTED, BLOCKED, DECODE, FAILED, FINISHED, PHASE_NAMES, State


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
        self.reference = ReferenceCounters(PAGE_SIZE, tracker.policy.prefix_caching)
        # Engine IDs a replay finished itself (the spec's finish at any decode point): their outputs do not end them.
        self.forced_finishes: set[int] = set()
        self.last_arrival = 0.0
        self.prompt_tokens: dict[Any, Any] = {}  # engine ID -> prompt length from its arrive event
        self.recency = Recency()  # the LRU order the spec's pool abstracts away, kept from the outside

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
        if "seq" in event and event["seq"] != self.num_events:  # a lost or repeated event makes every later verdict moot
            self._fail("order", f"event seq {event['seq']} where seq {self.num_events} was due", event, None,
                       tr.state, [f"{event['seq'] - self.num_events} events missing" if event["seq"] > self.num_events
                                  else "an event repeated or out of order"])
        if name in SUBMISSIONS and isinstance(event.get("t"), (int, float)):
            if event["t"] < self.last_arrival:
                self._fail("order", f"request {event.get('request')} arrived at t={event['t']}, before the previous "
                           f"arrival (t={self.last_arrival})", event, None, tr.state, ["arrival times go back"])
            self.last_arrival = event["t"]
        self.num_events += 1
        if name in SUBMISSIONS:
            before = tr.state
            if self.engine is not None:
                old_spec = tr.spec
                tr.observe_arrival(event, self.engine)
                if old_spec is not tr.spec:  # the spec grew: the state before, in the new layout
                    before = lift_state(old_spec, before, tr.spec)
            else:
                i = tr.arrive(event["request"], event["input"], event["num_tokens"], event.get("num_decode", 0),
                              page_keys=event.get("page_keys"))
                before = tr.state
                tr.apply_arrival(i)
            action = tr.last_action
            self._check_arrive(event, action, before)
            self.prompt_tokens[event.get("request")] = event.get("num_tokens")
            self.reference.observe(tr.spec, event, action, tr.state, tr.state)  # an arrival counts by its role
        elif tr.spec is None:
            if name in NOTICES:  # nothing has arrived: every ID is unknown, and there is no state to check
                if claims_accepted(event):
                    self._fail("termination", f"the engine accepted a termination notice for request "
                               f"{event.get('request')}, which never arrived", event, Action(name, 0), None,
                               ["no request has arrived: the spec's coordinator knows no ID and rejects every "
                                "notice"], ["termination_validated"], [_NOTICE_NOTE])
                return Action("notify", 0)
            self._fail("disabled", f"{name} before any arrival", event, None, None, ["no request has arrived"])
        else:
            action = tr.action_of(event)
            before = tr.state
            with self._chunk_of(event, action):
                if not self.spec.guard(before, action):
                    self._refused(event, action, before)
                after = self.spec.apply(before, action)
            self._check_payload(event, action, before, after)
            self.reference.observe(self.spec, event, action, before, after)
            tr.state = after
            tr.last_action = action
            if action.name in HANDOVERS:  # the flight keeps its engine ID under its new leader's name
                tr.flight_id_of[action.arg] = event.get("flight")
        self.actions.append(str(action))
        bad = violated(self.spec, tr.state)
        if bad:
            self._fail("property", f"the spec state after {action} violates {', '.join(bad)}", event, action, before,
                       [f"{p} fails in the state the engine's events lead to" for p in bad], bad)
        if self.compare_states:
            self.compare(event, action, before)
        if self.engine is not None:
            self.recency.observe(self.engine.scheduler, self.num_events, refresh=action.name not in HANDOVERS)
        return action

    @contextmanager
    def _chunk_of(self, event: dict, action: Action) -> Iterator[None]:
        """A prefill the engine cut short is the spec's prefill with that chunk (guard and update).

        Why: the spec's ``chunk`` is what one prefill of one request computes, the engine's
        ``prefill_chunk_pages`` a budget one step shares among requests, so a request may get fewer
        units than the budget. Such a prefill is a run of the same spec with a smaller chunk, and
        every property is checked for every chunk size, so it is accepted (more units are not).
        """
        spec = self.spec
        units = event.get("num_units") if action.name in PROMPT_PASSES else None
        if not (type(units) is int and 1 <= units < spec.policy.chunk):
            yield
            return
        full = spec.policy
        spec.policy = replace(full, chunk=units)
        try:
            yield
        finally:
            spec.policy = full

    def _refused(self, event: dict, action: Action, before: State) -> None:
        props, notes = [], []
        if self.compare_states:
            eng = abstract_state(self.engine, self.tracker, self.witness)
            for p in violated(self.spec, eng):
                props.append(p)
                notes.append(f"the engine's abstract state violates {p}")
        for p in forced(self.spec, before, action):
            if p not in props:
                props.append(p)
                notes.append(f"forcing {action} through would violate {p}")
        if action.name in NOTICES:
            props.append("termination_validated")
            notes.append("the engine logged a notice it accepted for a live request (a live request's termination is "
                         "an abort, logged as one)" if claims_accepted(event)
                         else "the engine rejected the termination of a live request")
        pending = [f for f in range(self.spec.num_requests) if self.spec.is_orphaned(self.spec.view(before), f)]
        if pending and action.name not in FLIGHT_ACTIONS:
            props.insert(0, "no_deadlock")
            notes.insert(0, f"the engine did not release or hand on flight f{pending[0]} in the call that ended its "
                            "leader: its followers would wait for a leader that is gone")
        reasons = explain_guard(self.spec, before, action)
        self._fail("disabled", f"{action} is not enabled in the spec", event, action, before, reasons, props, notes)

    def _check_arrive(self, event: dict, action: Action, before: State) -> None:
        s = self.spec.view(self.tracker.state)
        i = action.arg
        follows = s.ph[i] == BLOCKED and s.mem[i] != i + 1
        role = "solo" if not self.tracker.policy.single_flight else ("follower" if follows else "leader")
        flight = None if role == "solo" else self.tracker.flight_id(s.mem[i] - 1)
        via = self.tracker.flight_id(s.via[i] - 1) if s.via[i] else None
        reasons = []
        if event.get("role") != role:
            reasons.append(f"the engine made it {event.get('role')}, the spec {role}")
        elif event.get("flight") != flight:
            reasons.append(f"the engine put it in flight {event.get('flight')}, the spec in {flight}")
        elif event.get("via") != via:
            reasons.append(f"the engine has it wait via flight {event.get('via')}, the spec via {via} (the open flight "
                           "whose prompt shares the most pages with its own, at least min_shared_pages)")
        elif via is not None and (wrong := _shared_pages(self.spec, event, i, s.via[i] - 1, "shared_pages")):
            reasons.append(wrong + " (the pages its prompt has in common with the flight's)")
        if reasons:
            props = ["one_flight_per_input"] if role != "solo" else []
            if via is not None or event.get("via") is not None:
                props.append("waits_for_shared_pages")
            self._fail("payload", f"{action}: the role differs", event, action, before, reasons, props)

    def _check_payload(self, event: dict, action: Action, before: State, after: State) -> None:
        """The event's details against the spec's step, by its action's entry of :data:`PAYLOAD`."""
        spec, n, i = self.spec, action.name, action.arg
        r = PAYLOAD[n](self, event, action, spec.view(before), spec.view(after))
        if r:
            at_stake = violated(spec, after) + [p for p in _PAYLOAD_PROPERTIES.get(n, []) if p not in violated(spec, after)]
            self._fail("payload", f"{action}: the event's details differ from the spec", event, action, before, r,
                       at_stake)
        if n in _ENDS_WITH_OUTPUT and self.engine is not None and self.tracker.engine_of[i] not in self.forced_finishes:
            wrong = request_output_problems(self.engine, self.tracker.engine_of[i])
            if wrong:
                self._fail("output", f"{action}: the request's output is not the model's answer to its own sequence",
                           event, action, before, wrong, ["outputs_as_uncached"],
                           ["an engine rule the spec has no tokens for: caching, coordination and batching must not "
                            "change what a request generates (checks/conform/outputs.py)"])

    # --- each action's details (PAYLOAD): the reasons its event differs from the spec's step --------------
    def _admit_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        i = action.arg
        if event.get("hit_pages") != a.hit[i]:
            return [f"hit_pages: engine {event.get('hit_pages')}, spec {a.hit[i]}"]
        if "recovered_tokens" in event and event["recovered_tokens"] != a.hit[i] * PAGE_SIZE:
            return [f"recovered_tokens: engine {event['recovered_tokens']}, spec {a.hit[i] * PAGE_SIZE}"]
        return []

    def _prefill_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        i, r = action.arg, []
        length = self.prompt_tokens.get(self.tracker.engine_of.get(i))  # a run draws its own tail lengths
        if event.get("num_units") != a.done[i] - b.done[i]:
            r.append(f"num_units: engine {event.get('num_units')}, spec {a.done[i] - b.done[i]}")
        if bool(event.get("first_token")) != (a.ph[i] == DECODE):
            r.append(f"first_token: engine {event.get('first_token')}, spec {a.ph[i] == DECODE}")
        if "first_page" in event and event["first_page"] != b.done[i]:
            r.append(f"first_page: engine {event['first_page']}, spec {b.done[i]}")
        tokens = min(length, a.done[i] * PAGE_SIZE) - b.done[i] * PAGE_SIZE if isinstance(length, int) else None
        if "num_tokens" in event and tokens is not None and event["num_tokens"] != tokens:
            r.append(f"num_tokens: engine {event['num_tokens']}, spec {tokens}")
        return r

    def _published(self, event: dict, action: Action, b: Any, pages: list[dict], upto: int) -> list[str]:
        """The pages a publication or a finish published: the spec's, in order; their keys learnt."""
        i = action.arg
        got, want = [p["index"] for p in pages], list(range(b.pubd[i], upto))
        self.tracker.learn_keys(self.tracker.cls_slot(i), {p["index"]: p["key"] for p in pages})
        return [f"published page indices: engine {got}, spec {want}"] if got != want else []

    def _publish_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        return self._published(event, action, b, event.get("pages", []), a.pubd[action.arg])

    def _finish_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        i = action.arg
        r = self._published(event, action, b, event.get("published", []), self.spec.published_upto(b, i))
        if self.engine is not None and not r and self.tracker.engine_of[i] not in self.forced_finishes:
            r += finish_problems(self.engine, self.tracker.engine_of[i], event)
        return r

    def _release_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        i, r = action.arg, []
        want = self._followers(b, i)
        if sorted(_ids(event.get("followers"))) != sorted(want):
            r.append(f"released followers: engine {event.get('followers')}, spec {want}")
        waiters = self._waiters(b, i, a)
        if sorted(_ids(event.get("waiters") or [])) != sorted(waiters):
            r.append(f"released waiters (via this flight): engine {event.get('waiters') or []}, spec {waiters}")
        reason = {FINISHED: RELEASE_ON_COMPLETION, ABORTED: RELEASE_LEADER_ABORTED,
                  FAILED: RELEASE_LEADER_FAILED}.get(b.ph[i], RELEASE_AFTER_PREFILL)
        if event.get("reason") != reason:
            r.append(f"release reason: engine {event.get('reason')}, spec {reason}")
        if event.get("flight") != self.tracker.flight_id(i):
            r.append(f"flight: engine {event.get('flight')}, spec {self.tracker.flight_id(i)}")
        return r

    def _promote_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        spec, i, r = self.spec, action.arg, []
        old = next((f for f in range(spec.num_requests) if f != i and b.mem[i] == f + 1), None)
        want = self._followers(a, i)
        if old is None or event.get("previous") != self.tracker.engine_of.get(old):
            r.append(f"previous leader: engine {event.get('previous')}, spec "
                     f"{self.tracker.engine_of.get(old) if old is not None else None}")
        elif event.get("flight") != self.tracker.flight_id(old):
            r.append(f"flight: engine {event.get('flight')}, spec {self.tracker.flight_id(old)}")
        if sorted(_ids(event.get("followers"))) != sorted(want):
            r.append(f"followers still waiting: engine {event.get('followers')}, spec {want}")
        via = self.tracker.flight_id(a.via[i] - 1) if a.via[i] else None
        if event.get("via") != via:
            r.append(f"the wait it takes over: engine via {event.get('via')}, spec via {via}")
        elif via is not None and (wrong := _shared_pages(spec, event, i, a.via[i] - 1,
                                                           "shared_pages of the wait it takes over")):
            r.append(wrong)
        return r

    def _expire_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        i, r = action.arg, []
        f = b.via[i] - 1 if b.via[i] else b.mem[i] - 1
        if bool(event.get("via")) != bool(b.via[i]):
            r.append(f"expired wait: engine {'via a flight' if event.get('via') else 'as a follower'}, spec "
                     f"{'via a flight' if b.via[i] else 'as a follower'}")
        elif b.via[i] and (wrong := _shared_pages(self.spec, event, i, f, "shared_pages of the expired wait")):
            r.append(wrong)
        if event.get("leader") != self.tracker.engine_of.get(f) or event.get("flight") != self.tracker.flight_id(f):
            r.append(f"flight and leader: engine {event.get('flight')}/{event.get('leader')}, spec "
                     f"{self.tracker.flight_id(f)}/{self.tracker.engine_of.get(f)}")
        return r

    def _evict_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        if self.engine is None:  # the victim's recency is read off the live engine only
            return []
        problem = self.recency.eviction_problem(self.engine.scheduler, event.get("page_id"), event.get("key"))
        return [problem] if problem else []

    def _ended_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        """An abort or a failure names the phase the request was in."""
        phase = PHASE_NAMES[b.ph[action.arg]]
        if event.get("phase") == phase:
            return []
        return [f"{'aborted' if action.name == 'abort' else 'failed'} phase: engine {event.get('phase')}, spec {phase}"]

    def _notify_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        self._check_notice(event, action, self.tracker.state)
        return []

    def _no_details(self, event: dict, action: Action, b: Any, a: Any) -> list[str]:
        """An action whose event carries nothing beyond its request (a decode), or whose details are
        checked where it is read (an arrival's role, on arrival: :meth:`_check_arrive`)."""
        return []

    def _check_notice(self, event: dict, action: Action, before: State) -> None:
        """The log's verdict on a termination notice (its ``accepted``; a notice without it was rejected,
        the only kind the engine logs) must be the spec's: accept an ID the coordinator knows, reject any
        other (never submitted, or terminated and let go)."""
        spec, i = self.spec, action.arg
        want = bool(spec.accepts(spec.view(before), i))
        if claims_accepted(event) == want:
            return
        who = f"r{i} (request {event.get('request')})" if i < spec.num_requests else \
            f"request {event.get('request')}, which never arrived"
        if want:
            self._fail("termination", f"the engine rejected a termination of r{i} the coordinator must accept",
                       event, action, before, [explain_notice(spec, before, i)], ["termination_validated"])
        self._fail("termination", f"the engine accepted a termination notice for {who}", event, action, before,
                   [explain_notice(spec, before, i)], ["termination_validated"], [_NOTICE_NOTE])

    def _waiters(self, s: Any, f: int, after: Any) -> list[int]:
        """Engine IDs of the requests blocked waiting via flight ``f`` (prefix coordination) that its release
        sends to admission (state ``after``: a lost leader's waiters handed on stay blocked)."""
        return [self.tracker.engine_of.get(j) for j in range(self.spec.num_requests)
                if j != f and s.via[j] == f + 1 and s.ph[j] == BLOCKED and after.ph[j] != BLOCKED]

    def _followers(self, s: Any, f: int) -> list[int]:
        """Engine IDs of the blocked followers of flight ``f`` in spec state view ``s``."""
        return self._blocked_on(s.mem, s, f)

    def _blocked_on(self, field: Any, s: Any, f: int) -> list[int]:
        return [self.tracker.engine_of.get(j) for j in range(self.spec.num_requests)
                if j != f and field[j] == f + 1 and s.ph[j] == BLOCKED]

    def compare(self, event: dict | None, action: Action | None, before: State | None,
                context: str = "") -> None:
        """Compare the engine's abstract state with the spec state (ghosts aside), and the engine's own
        accounting (queues, pool, coordinator, what terminated requests still hold) with the spec's."""
        spec, expected = self.spec, self.tracker.state
        actual = abstract_state(self.engine, self.tracker, self.witness)
        diffs = state_diff(spec, without_ghosts(spec, expected), actual)
        bad = violated(spec, actual)
        books = engine_books(self.engine, self.tracker, expected, self.witness)
        if books:
            self._fail("state", f"the engine's own accounting is wrong{f' after {action}' if action else ''}",
                       event, action, before if before is not None else expected, books,
                       _at_stake(books), ["the engine's structures disagree with each other or with the spec's "
                                           "derived figures (free, reserved, block tables)"])
        if not diffs and not bad:
            # Last, as the least telling: the counters users read, recounted from the events.
            counts = self.reference.differences(self.engine.counters, planned_pages(self.engine))
            if counts:
                self._fail("state", f"the engine's counters are wrong{f' after {action}' if action else ''}",
                           event, action, before if before is not None else expected, counts, [],
                           ["each counter is recounted from the events the monitor has checked"])
            return
        props, notes = list(bad), [f"the engine's abstract state violates {p}" for p in bad]
        if not bad:
            ahead = lookahead(spec, actual, self.depth)
            if ahead is not None:
                props.append(ahead[0])
                notes.append(f"from the engine's state the spec reaches a violation of {ahead[0]} by: "
                             + ", ".join(ahead[1]))
        for slot, _x, _y in diffs:
            for p in _SLOT_PROPERTIES.get(slot.split("[")[0], []):
                if p not in props and any(q.name == p for q in safety_properties(spec)):
                    props.append(p)
                    notes.append(f"{p} speaks of {slot.split('[')[0]}, where the engine and the spec differ")
        where = f" after {action}" if action else (f" {context}" if context else "")
        reasons = [f"{slot}: spec {_slot_text(slot, x)}, engine {_slot_text(slot, y)}" for slot, x, y in diffs]
        self._fail("state" if diffs else "property", f"the engine's state differs from the spec{where}"
                   if diffs else f"the engine's state violates {', '.join(bad)}{where}", event, action,
                   before if before is not None else expected, reasons, props, notes)


# Which properties speak of each slot: what a mismatch there puts at stake.
_SLOT_PROPERTIES = {
    "pubd": ["refcounts_exact", "in_use_never_evicted"], "ref": ["refcounts_exact"],
    "pg": ["visible_after_compute", "in_use_never_evicted"], "mem": ["one_flight_per_input", "blocked_in_open_flight"],
    "fl": ["one_flight_per_input"], "idx": ["one_flight_per_input"], "rel": ["termination_validated", "known_once"],
    "ph": ["follower_waits_for_release", "no_deadlock"], "hit": ["single_prefill"], "done": ["single_prefill"],
    "exp": ["expired_never_blocked"], "via": ["waits_for_shared_pages", "blocked_in_open_flight", "single_prefill"],
}
# Which properties a disagreement in an event's details puts at stake, by action.
_PAYLOAD_PROPERTIES = {
    "admit": ["single_prefill"], "prefill": ["single_prefill"], "publish": ["visible_after_compute"],
    "finish": ["visible_after_compute"], "release": ["follower_waits_for_release", "one_flight_per_input"],
    "promote": ["blocked_in_open_flight"], "expire": ["expired_never_blocked"], "abort": ["termination_validated"],
    "evict": ["evicts_least_recently_used"],  # an engine rule the spec's pool abstracts away (recency.py)
    "fail": ["termination_validated"],
}


_NOTICE_NOTE = ("a termination notice for an ID the coordinator does not know must be rejected with nothing changed: "
                "accepting it could end another request, or end one twice")


def claims_accepted(event: dict) -> bool:
    """Whether a ``notify`` event says the engine accepted the notice: ``"accepted": true``. The engine logs
    only the notices it rejects (``"accepted": false``); a notice without the field counts as rejected."""
    return event.get("accepted") is True


def _shared_pages(spec: Any, event: dict, i: int, f: int, what: str) -> str | None:
    """What is wrong with the event's ``shared_pages``, the pages request ``i``'s prompt shares with flight
    ``f``'s (an arrival, promotion or expiry of a wait via that flight), or None."""
    want = spec.num_shared(i, f)
    return None if event.get("shared_pages") == want else f"{what}: engine {event.get('shared_pages')}, spec {want}"


def _ids(value: Any) -> list:
    """A list field of an event as a list (anything else compares as a mismatch, never raises)."""
    return list(value) if isinstance(value, list) else [value]


def _at_stake(reasons: list[str]) -> list[str]:
    """The properties an accounting error puts at stake, read from its words."""
    out = []
    for word, prop in (("reserv", "admission_has_room"), ("free", "admission_has_room"), ("ref", "refcounts_exact"),
                       ("queue", "no_deadlock"), ("released set", "termination_validated"),
                       ("flight", "one_flight_per_input"), ("holds", "quiescent_clean"),
                       ("K/V of its own tokens", "visible_after_compute")):
        if any(word in r for r in reasons) and prop not in out:
            out.append(prop)
    return out


def _slot_text(slot: str, v: int) -> str:
    if slot.startswith("ph["):
        return PHASE_NAMES[v]
    if slot.startswith("pg["):
        return ("not cached", "reserved (KV not written)", "ready")[v]
    return str(v)


# How each action's event details are checked against the spec's step, one entry per spec action
# (tests/test_registries.py holds the keys equal to the spec's action names).
PAYLOAD: dict[str, Callable[[TraceValidator, dict, Action, Any, Any], list[str]]] = {
    "arrive": TraceValidator._no_details, "admit": TraceValidator._admit_details, "prefill": TraceValidator._prefill_details,
    "publish": TraceValidator._publish_details, "release": TraceValidator._release_details,
    "promote": TraceValidator._promote_details, "decode": TraceValidator._no_details, "finish": TraceValidator._finish_details,
    "evict": TraceValidator._evict_details, "abort": TraceValidator._ended_details, "notify": TraceValidator._notify_details,
    "expire": TraceValidator._expire_details, "fail": TraceValidator._ended_details,
}
_ENDS_WITH_OUTPUT = frozenset({"finish", "abort"})  # a request whose output is whole: checked against the model's
