"""Trace loading and validation, the shared-folder lookup, and the event-log converter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flightcheck.checks.workload.trace import (TraceError, events_to_trace, load_trace, parse_trace_lines,
                                               shared_dir, shared_trace_path, write_trace)

GOOD = {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}


def line(**changes) -> str:
    record = dict(GOOD) | changes
    return json.dumps({k: v for k, v in record.items() if v is not ...})


def test_the_shared_traces_load_completely():
    conversation = load_trace(shared_trace_path("conversation"))
    synthetic = load_trace(shared_trace_path("synthetic"))
    assert (conversation.name, conversation.num_requests, conversation.num_block_lookups) == ("conversation_trace", 12_031, 288_500)
    assert (synthetic.num_requests, synthetic.num_block_lookups) == (3_993, 121_877)
    assert conversation.requests[-1].line_number == 12_031
    assert conversation.requests[0].hash_ids[:3] == (0, 1, 2)


def test_shared_folder_follows_the_environment_override(monkeypatch, tmp_path):
    monkeypatch.setenv("FLIGHTCHECK_SHARED", str(tmp_path))
    assert shared_trace_path("conversation") == tmp_path / "traces" / "conversation_trace.jsonl"
    monkeypatch.delenv("FLIGHTCHECK_SHARED")
    assert shared_dir() == Path(__file__).resolve().parents[3] / "shared"


@pytest.mark.parametrize("bad, field, message", [
    (line(timestamp=...), "timestamp", "missing"),
    (line(timestamp=-1), "timestamp", "finite number >= 0"),
    (line(timestamp="5"), "timestamp", "finite number"),
    (line(timestamp=True), "timestamp", "finite number"),
    (line(input_length=1.5), "input_length", "integer >= 0"),
    (line(output_length=-2), "output_length", "integer >= 0"),
    (line(hash_ids=...), "hash_ids", "missing"),
    (line(hash_ids="7,8"), "hash_ids", "list of integers"),
    (line(hash_ids=[7, "x"]), "hash_ids", "position 1 must be an integer"),
    ("[1, 2]", None, "expected a JSON object"),
    ('{"timestamp": 0,', None, "not valid JSON"),
    ("   ", None, "blank line"),
])
def test_a_malformed_line_names_its_line_number_and_field(bad, field, message):
    with pytest.raises(TraceError, match=message) as raised:
        parse_trace_lines([line(), line(timestamp=1), bad, line(timestamp=3)], source="x.jsonl")
    assert raised.value.line_number == 3
    assert raised.value.field == field
    assert str(raised.value).startswith("x.jsonl line 3")


def test_only_a_final_newline_may_be_empty(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(line() + "\n" + line(timestamp=2) + "\n")
    assert load_trace(path).num_requests == 2
    path.write_text(line() + "\n\n" + line(timestamp=2) + "\n")
    with pytest.raises(TraceError, match="line 2: blank line"):
        load_trace(path)
    path.write_text("")
    with pytest.raises(TraceError, match="the file is empty"):
        load_trace(path)


def test_write_then_load_round_trips(tmp_path):
    trace = parse_trace_lines([line(), line(timestamp=2.5, hash_ids=[])])
    write_trace(trace, tmp_path / "r.jsonl")
    again = load_trace(tmp_path / "r.jsonl")
    assert [(r.timestamp_ms, r.hash_ids, r.input_length) for r in again.requests] == [(0.0, (7, 8), 600), (2.5, (), 600)]


EVENTS = """\
{"seq": 0, "action": "arrive", "request": 1, "role": "leader", "flight": 1, "input": "a1f0", "num_tokens": 40, "t": 0.0}
{"seq": 1, "action": "arrive", "request": 2, "role": "follower", "flight": 1, "input": "a1f0", "num_tokens": 40, "t": 0.002}
{"seq": 2, "action": "admit", "request": 1, "hit_pages": 0, "recovered_tokens": 0}
{"seq": 3, "action": "prefill", "request": 1, "first_page": 0, "num_units": 3, "num_tokens": 40, "first_token": true}
{"seq": 4, "action": "arrive", "request": 3, "role": "leader", "flight": 3, "input": "77c2", "num_tokens": 16, "t": 0.0105}
{"seq": 5, "action": "decode", "request": 1, "token": 42}
{"seq": 6, "action": "decode", "request": 1, "token": 43}
{"seq": 7, "action": "finish", "request": 1, "reason": "length", "published": []}
"""


def test_an_engine_event_log_converts_to_the_trace_schema():
    trace = events_to_trace(EVENTS.split("\n"), source="ev.jsonl")
    got = [(r.timestamp_ms, r.input_length, r.output_length, r.hash_ids, r.line_number) for r in trace.requests]
    assert got == [(0.0, 40, 3, (0, 1, 2), 1), (2.0, 40, 0, (0, 1, 2), 2), (10.5, 16, 0, (3,), 5)]
    coarse = events_to_trace(EVENTS.split("\n"), block_tokens=32)
    assert [r.hash_ids for r in coarse.requests] == [(0, 1), (0, 1), (2,)]


def test_event_logs_without_times_arrive_together_and_mixed_times_are_rejected():
    untimed = [json.dumps({"seq": i, "action": "arrive", "request": i, "input": "k", "num_tokens": 20}) for i in range(2)]
    assert [r.timestamp_ms for r in events_to_trace(untimed).requests] == [0.0, 0.0]
    mixed = untimed[:1] + [json.dumps({"seq": 1, "action": "arrive", "request": 1, "input": "k", "num_tokens": 20, "t": 1})]
    with pytest.raises(TraceError, match="line 1, field 't': missing"):
        events_to_trace(mixed)


@pytest.mark.parametrize("bad, field", [
    ('{"seq": 9, "request": 4}', "action"),
    ('{"seq": 9, "action": "arrive", "request": 4, "num_tokens": 3}', "input"),
    ('{"seq": 9, "action": "arrive", "request": 4, "input": "k", "num_tokens": -3}', "num_tokens"),
    ('{"seq": 9, "action": "arrive", "request": 4, "input": "a1f0", "num_tokens": 99, "t": 1}', "num_tokens"),
    ('{"seq": 9, "action": "arrive", "request": 4, "input": "k", "num_tokens": 3, "t": "soon"}', "t"),
])
def test_a_bad_event_names_its_line_and_field(bad, field):
    with pytest.raises(TraceError) as raised:
        events_to_trace(EVENTS.split("\n")[:8] + [bad])
    assert (raised.value.line_number, raised.value.field) == (9, field)


@pytest.mark.parametrize("changes, field, fragment", [
    ({"timestamp": 10**400}, "timestamp", "must be at most 1,000,000,000,000 ms"),
    ({"timestamp": 1e13}, "timestamp", "must be at most"),
    ({"input_length": 2**24 + 1}, "input_length", "must be at most 16,777,216 tokens"),
    ({"output_length": 10**30}, "output_length", "must be at most"),
    ({"hash_ids": [0, -2**63 - 1]}, "hash_ids", "position 1 must fit in 64 bits"),
    ({"hash_ids": [0] * (2**16 + 1)}, "hash_ids", "holds 65,537 ids, more than the 65,536"),
])
def test_a_value_past_its_limit_names_the_field(changes, field, fragment):
    with pytest.raises(TraceError) as info:
        parse_trace_lines([line(), line(**changes)], source="t.jsonl")
    assert (info.value.line_number, info.value.field) == (2, field)
    assert fragment in info.value.message


def test_the_limits_hold_the_largest_values_they_allow():
    from flightcheck.checks.inputs import MAX_HASH_IDS, MAX_TIMESTAMP_MS, MAX_TRACE_TOKENS

    trace = parse_trace_lines([line(timestamp=MAX_TIMESTAMP_MS, input_length=MAX_TRACE_TOKENS,
                                    hash_ids=[2**63 - 1, -2**63] + [0] * (MAX_HASH_IDS - 2))])
    assert trace.requests[0].timestamp_ms == float(MAX_TIMESTAMP_MS) and trace.num_block_lookups == MAX_HASH_IDS


def test_the_blocks_of_a_trace_and_of_a_converted_log_are_bounded_in_all(monkeypatch):
    from flightcheck.checks.workload import trace as trace_module

    monkeypatch.setattr(trace_module, "MAX_TRACE_BLOCKS", 5)
    assert parse_trace_lines([line(hash_ids=[1, 2, 3]), line(hash_ids=[1, 2])]).num_block_lookups == 5
    with pytest.raises(TraceError, match="line 3, field 'hash_ids': the trace's hash ids add up to more than 5"):
        parse_trace_lines([line(hash_ids=[1, 2, 3]), line(hash_ids=[1, 2]), line(hash_ids=[1])], source="t")
    arrive = {"action": "arrive", "request": 0, "input": "a", "num_tokens": 48, "t": 0.0}
    log = [json.dumps(arrive), json.dumps(arrive | {"request": 1, "input": "b", "num_tokens": 40})]
    with pytest.raises(TraceError, match="line 2, field 'num_tokens': the requests' blocks of 16 tokens add up"):
        events_to_trace(log, source="e")
    with pytest.raises(TraceError, match="field 'num_tokens': must be at most 16,384"):
        events_to_trace([json.dumps(arrive | {"num_tokens": 10**10})], source="e")
