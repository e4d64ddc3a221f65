"""The event-log schema is the engine's vocabulary: every action, every field it emits, every policy knob.

When the engine learns an action or a field, these tests fail and say which row of
checks/conform/schema.py to add; until then a log carrying it is bad input for ``flightcheck validate``.
"""

from dataclasses import fields

import pytest

from flightcheck.checks.conform.eventlog import validate_events
from flightcheck.checks.conform.policy_map import policy_of
from flightcheck.checks.conform.schema import (COMMON_FIELDS, EVENT_FIELDS, HEADER_FIELDS, POLICY_FIELDS,
                                               check_event, check_header)
from flightcheck.checks.inputs import InputError
from flightcheck.impl.engine import Engine, EngineConfig
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.events import ACTIONS
from flightcheck.impl.sampling import SamplingParams
from flightcheck.spec.scenario import Policy

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6] * 5


def busy_engine(coordination: str) -> Engine:
    """A run with every action: a burst (publish, release), an abort, evictions under memory pressure, a
    rejected termination notice; with coordination, a leader lost to promotion, an expiry and a failure."""
    leader_loss = "promote" if coordination == "single-flight" else "release-all"
    engine = Engine.tiny(EngineConfig(num_pages=10, max_running=2, prefill_chunk_pages=1, coordination=coordination,
                                      leader_loss=leader_loss))
    for _ in range(3):
        engine.add_request(PROMPT, SamplingParams(max_tokens=3))
    doomed = engine.add_request([7] * 40, SamplingParams(max_tokens=3))
    engine.step()
    engine.abort(doomed)
    engine.run()
    if coordination == "single-flight":
        burst = [engine.add_request([9] * 40, SamplingParams(max_tokens=3)) for _ in range(4)]
        engine.step()
        engine.abort(burst[0])   # the leader is lost: burst[1] is promoted
        engine.expire(burst[3])  # a follower stops waiting
        engine.step()
        engine.inject_fault(burst[1])
        engine.run()
    for k in range(3):
        engine.add_request([k + 20] * 50, SamplingParams(max_tokens=2))
    engine.run()
    with pytest.raises(UnknownRequestError):
        engine.notify_termination(999)
    return engine


ENGINES: dict[str, Engine] = {}


def engine_of(coordination: str) -> Engine:
    """The busy run under ``coordination``, made once per module."""
    if coordination not in ENGINES:
        ENGINES[coordination] = busy_engine(coordination)
    return ENGINES[coordination]


@pytest.fixture(params=["single-flight", "none"])
def engine(request):
    return engine_of(request.param)


def test_every_engine_action_has_a_row():
    assert set(ACTIONS) == set(EVENT_FIELDS), (
        f"add a row to EVENT_FIELDS in checks/conform/schema.py for {sorted(set(ACTIONS) - set(EVENT_FIELDS))}; "
        f"drop the rows of {sorted(set(EVENT_FIELDS) - set(ACTIONS))}")


def test_the_two_runs_show_every_action():
    """So that the check below covers every row (coordination none has no release)."""
    emitted = {e["action"] for c in ("single-flight", "none") for e in engine_of(c).events.events}
    assert emitted == set(ACTIONS)


def test_every_event_the_engine_emits_fits_its_row_and_every_field_is_listed(engine):
    for event in engine.events.events:
        check_event(event, "engine", event["seq"])
        unlisted = set(event) - set(COMMON_FIELDS) - set(EVENT_FIELDS[event["action"]])
        assert not unlisted, f"add {sorted(unlisted)} to the {event['action']!r} row of checks/conform/schema.py"
    check_header(engine.events.header, "engine", 1)
    assert set(engine.events.header) <= set(HEADER_FIELDS)


def test_every_policy_knob_is_in_the_header_table():
    assert {f.name for f in fields(Policy)} <= set(POLICY_FIELDS)


def test_validate_events_checks_the_schema_before_the_spec(engine):
    events = [dict(e) for e in engine.events.events]
    report = validate_events(events, policy_of(engine.config))
    assert report.ok, report.diagnosis.format()
    events[3]["request"] = [events[3]["request"]]
    with pytest.raises(InputError, match=r"^event 4, field 'request': must be an integer, got \["):
        validate_events(events, policy_of(engine.config))


@pytest.mark.parametrize("row", sorted(EVENT_FIELDS))
def test_each_required_field_of_each_row_is_enforced(row):
    """Generic over the table: leaving out any required field of any action names that field."""
    event = {"seq": 0, "action": row}
    for name, f in EVENT_FIELDS[row].items():
        for value in (0, 1, "k", [], False, 0.5, None):
            if f.kind.problem(value) is None:
                event[name] = value
                break
    check_event(event, "t.jsonl", 1)
    for name, f in EVENT_FIELDS[row].items():
        if f.required:
            with pytest.raises(InputError, match=rf"t.jsonl line 1, field '{name}': missing from this {row} event"):
                check_event({k: v for k, v in event.items() if k != name}, "t.jsonl", 1)


def prefix_engine() -> Engine:
    """Coordination "prefix": a leader waiting via another flight, released with its shared pages; one
    inheriting a lost leader's wait (promote); one whose wait expires."""
    doc = [5, 3, 8] * 11  # two full pages, then tails of their own
    engine = Engine.tiny(EngineConfig(num_pages=32, prefill_chunk_pages=1, coordination="prefix",
                                      leader_loss="promote", min_shared_pages=2))
    engine.add_request(doc + [1] * 20, SamplingParams(max_tokens=2))
    lost = engine.add_request(doc + [2] * 20, SamplingParams(max_tokens=2))
    engine.add_request(doc + [2] * 20, SamplingParams(max_tokens=2))
    late = engine.add_request(doc + [3] * 20, SamplingParams(max_tokens=2))
    engine.abort(lost)     # its follower inherits the wait
    engine.expire(late)
    engine.run()
    return engine


def test_every_prefix_event_fits_its_row_and_every_field_is_listed():
    engine = prefix_engine()
    seen = set()
    for event in engine.events.events:
        check_event(event, "engine", event["seq"])
        unlisted = set(event) - set(COMMON_FIELDS) - set(EVENT_FIELDS[event["action"]])
        assert not unlisted, f"add {sorted(unlisted)} to the {event['action']!r} row of checks/conform/schema.py"
        # Why "is not": a flight ID 0 is a via too, but 0 == False.
        seen |= {(event["action"], k) for k in ("via", "shared_pages", "waiters")
                 if event.get(k) is not None and event.get(k) is not False and event.get(k) != []}
    assert seen == {("arrive", "via"), ("arrive", "shared_pages"), ("promote", "via"), ("promote", "shared_pages"),
                    ("expire", "via"), ("expire", "shared_pages"), ("release", "waiters")}
    check_header(engine.events.header, "engine", 1)
    assert engine.events.header["policy"]["min_shared_pages"] == 2
