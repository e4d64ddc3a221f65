"""Bad input to every reader of the command line: a catalogue of malformed files, made here in tmp_path.

Each case is fed to the command that reads it (``validate`` and ``workload --from-events`` for event
logs, ``workload`` for traces, ``replay`` for counterexample paths, ``diff`` for KEY=VALUE options) and
must exit 2 with one message that names the file, the line and the field, and says what was expected;
no traceback. A well-formed log of a run the spec rejects stays exit 1: a broken log is not a broken
engine.
"""

from __future__ import annotations

import json
import os

import pytest

from bad_input import assert_names, flat, invoke, jsonl, without

HEADER = {"policy": {"coordination": "single-flight", "release": "after-prefill", "publication": "incremental",
                     "capacity": 2, "chunk": 1}, "model": "tiny random Llama (seed 0)"}
ARRIVE = {"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0, "input": "a1f0",
          "num_tokens": 40, "t": 0.0}
ADMIT = {"seq": 1, "action": "admit", "request": 0, "hit_pages": 0, "recovered_tokens": 0}
PREFILL = {"seq": 2, "action": "prefill", "request": 0, "first_page": 0, "num_units": 1, "num_tokens": 16,
           "first_token": False}

# (case, file contents, line, field, what the message says): each a malformed event log.
EVENT_LOGS = [
    ("field of the wrong type", jsonl(HEADER, ARRIVE | {"num_tokens": "forty"}), 2, "num_tokens",
     "must be an integer >= 1, got 'forty'"),
    ("request that is a list", jsonl(HEADER, ARRIVE, ADMIT | {"request": [0]}), 3, "request",
     "must be an integer, got [0]"),
    ("missing field", jsonl(HEADER, without(ARRIVE, "input")), 2, "input",
     "missing from this arrive event (expected a string)"),
    ("unknown action", jsonl(HEADER, ARRIVE, {"seq": 1, "action": "teleport", "request": 0}), 3, "action",
     "unknown action 'teleport' (known: arrive, admit,"),
    ("action that is not a string", jsonl(HEADER, ARRIVE | {"action": 5}), 2, "action", "must be a string, got 5"),
    ("event without an action", jsonl(HEADER, without(ADMIT, "action")), 2, "action", "missing"),
    ("boolean where a count goes", jsonl(HEADER, ARRIVE, ADMIT | {"hit_pages": True}), 3, "hit_pages",
     "must be an integer >= 0, got True"),
    ("page of the wrong type", jsonl(HEADER, ARRIVE, ADMIT, PREFILL | {"first_token": True},
                                     {"seq": 3, "action": "publish", "request": 0,
                                      "pages": [{"index": "0", "key": "0c9d"}]}),
     5, "pages[0].index", "must be an integer >= 0, got '0'"),
    ("time that is not a number", jsonl(HEADER, ARRIVE | {"t": float("nan")}), 2, "t",
     "must be a finite number >= 0, got nan"),
    ("negative count", jsonl(HEADER, ARRIVE | {"num_tokens": -40}), 2, "num_tokens", "got -40"),
    ("one input with two lengths", jsonl(HEADER, ARRIVE, ARRIVE | {"seq": 1, "request": 1, "num_tokens": 20}), 3,
     "num_tokens", "20, where line 2 gave 40 for the same input 'a1f0'"),
    ("header policy of the wrong type", jsonl(HEADER | {"policy": {"capacity": "two"}}, ARRIVE), 1,
     "policy.capacity", "must be an integer >= 1, got 'two'"),
    ("header policy with an unknown knob", jsonl(HEADER | {"policy": {"pool": 3}}, ARRIVE), 1, "policy.pool",
     "unknown (known: coordination, release, publication, leader_loss, prefix_caching, capacity, chunk, "
     "min_shared_pages)"),
    ("header policy with an unknown choice", jsonl(HEADER | {"policy": {"release": "later"}}, ARRIVE), 1,
     "policy.release", "must be one of after-prefill, on-completion"),
    ("header after the first line", jsonl(ARRIVE, HEADER), 2, "policy", "may only be the first line"),
    ("blank line between events", jsonl(HEADER, ARRIVE, "", ADMIT), 3, None, "blank line"),
    ("line of spaces", jsonl(HEADER, ARRIVE, "   ", ADMIT), 3, None, "blank line"),
    ("two newlines at the end", jsonl(HEADER, ARRIVE, ADMIT) + b"\n", 4, None, "blank line"),
    ("bytes that are not UTF-8", jsonl(HEADER, ARRIVE, b'{"seq": 1, "action": "admit", "request": 0, "x": "\xe9"}'),
     3, None, "not UTF-8 text (byte 0xe9 at column 51)"),
    ("line that is not JSON", jsonl(HEADER, ARRIVE, '{"seq": 1, "action": "admit",'), 3, None, "not valid JSON"),
    ("line that is not an object", jsonl(HEADER, [1, 2]), 2, None, "expected a JSON object, got an array"),
    ("number too long to read", jsonl(HEADER, '{"seq": ' + "9" * 5000 + "}"), 2, None, "not valid JSON here"),
    ("nesting too deep", jsonl(HEADER, "[" * 100_000), 2, None, "nested too deeply"),
]

# (case, file contents, what the message says): malformed as a whole, no line to name.
EMPTY_LOGS = [
    ("empty file", b"", "the file is empty (expected an engine event log"),
    ("only a header", jsonl(HEADER), "holds no events, only the header line"),
]


def _write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("case, data, line, field, fragment", EVENT_LOGS, ids=[c[0] for c in EVENT_LOGS])
def test_a_malformed_event_log_exits_2_naming_file_line_and_field(tmp_path, case, data, line, field, fragment):
    path = _write(tmp_path, "run.events.jsonl", data)
    assert_names(invoke("validate", path), path, line, field, fragment)
    assert_names(invoke("validate", path, "--json"), path, line, field, fragment)
    # The same reader for the conversion: the same log is the same error.
    assert_names(invoke("workload", "--from-events", path, "--workers", 1), path, line, field, fragment)


@pytest.mark.parametrize("case, data, fragment", EMPTY_LOGS, ids=[c[0] for c in EMPTY_LOGS])
def test_an_event_log_without_events_exits_2(tmp_path, case, data, fragment):
    path = _write(tmp_path, "run.events.jsonl", data)
    assert_names(invoke("validate", path), path, None, None, fragment)
    assert_names(invoke("workload", "--from-events", path), path, None, None, fragment)


def test_event_log_paths_that_are_not_files_exit_2(tmp_path):
    assert_names(invoke("validate", tmp_path / "absent.jsonl"), tmp_path / "absent.jsonl", None, None, "no such file")
    assert_names(invoke("validate", tmp_path), tmp_path, None, None, "is a directory, not a file of events")
    os.mkfifo(tmp_path / "fifo")  # reading it would block: refused before opening
    assert_names(invoke("validate", tmp_path / "fifo"), tmp_path / "fifo", None, None, "is not a regular file")
    assert_names(invoke("workload", "--from-events", tmp_path), tmp_path, None, None, "is a directory")


def test_a_well_formed_log_is_a_verdict_a_malformed_one_is_not(tmp_path):
    good = _write(tmp_path, "good.jsonl", jsonl(HEADER, ARRIVE, ADMIT, PREFILL))
    assert invoke("validate", good).exit_code == 0
    # Well-formed, but the engine prefilled a request it never admitted: the spec rejects the run (exit 1).
    departs = _write(tmp_path, "departs.jsonl", jsonl(HEADER, ARRIVE, dict(PREFILL, seq=1)))
    result = invoke("validate", departs)
    assert result.exit_code == 1 and "mismatch at event 2" in flat(result.output)
    assert "prefill(0) is not enabled" in flat(result.output)


GOOD_REQUEST = {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}

TRACES = [
    ("bytes that are not UTF-8", jsonl(GOOD_REQUEST, b'{"timestamp": 1, "\xff": 0}'), 2, None,
     "not UTF-8 text (byte 0xff at column 19)"),
    ("blank line", jsonl(GOOD_REQUEST, "", GOOD_REQUEST), 2, None, "blank line"),
    ("field of the wrong type", jsonl(GOOD_REQUEST, GOOD_REQUEST | {"timestamp": "5"}), 2, "timestamp",
     "must be a finite number >= 0, got '5'"),
    ("missing field", jsonl(GOOD_REQUEST, without(GOOD_REQUEST, "hash_ids")), 2, "hash_ids", "missing"),
    ("list where a request goes", jsonl(GOOD_REQUEST, [0, 600, 5, [7]]), 2, None,
     "expected a JSON object, got an array"),
    ("boolean length", jsonl(GOOD_REQUEST | {"input_length": True}), 1, "input_length", "must be an integer >= 0"),
    ("bad block id", jsonl(GOOD_REQUEST | {"hash_ids": [7, None]}), 1, "hash_ids", "position 1 must be an integer"),
    ("number too long to read", jsonl('{"timestamp": ' + "1" * 5000 + "}"), 1, None, "not valid JSON here"),
]


@pytest.mark.parametrize("case, data, line, field, fragment", TRACES, ids=[c[0] for c in TRACES])
def test_a_malformed_trace_exits_2_naming_file_line_and_field(tmp_path, case, data, line, field, fragment):
    path = _write(tmp_path, "trace.jsonl", data)
    assert_names(invoke("workload", path, "--workers", 1), path, line, field, fragment)


def test_trace_files_that_hold_nothing_or_are_not_files_exit_2(tmp_path):
    empty = _write(tmp_path, "empty.jsonl", b"")
    assert_names(invoke("workload", empty), empty, None, None, "the file is empty (expected a trace")
    assert_names(invoke("workload", tmp_path), tmp_path, None, None, "is a directory, not a trace file")


CX = {"verdict": "violated", "counterexample": ["arrive(0)", "admit(0)", "prefill(0)"], "scenario": "burst2",
      "variant": "correct", "policy": HEADER["policy"]}

PATHS = [
    ("bytes that are not UTF-8", b"arrive(0)\nadmit(0) \xc3\x28\n", 2, None, "not UTF-8 text (byte 0xc3 at column 10)"),
    ("blank line", b"arrive(0)\n\nadmit(0)\n", 2, None, "blank line"),
    ("unknown action", b"arrive(0)\njump(0)\n", 2, None, "not an action: 'jump(0)'"),
    ("action out of the scenario", b"arrive(0)\narrive(9)\n", 2, None,
     "arrive(9) is not an action of this scenario (arrive takes 0 to 1 here)"),
    ("path that is not a run of the spec", b"arrive(0)\n  2. prefill(0)   r0: prefill\n", 2, None,
     "prefill(0) is not enabled in the spec after the path's first 1 action(s)"),
    ("JSON that does not parse", b'{"counterexample":\n  ["arrive(0)",\n}\n', 3, None, "not valid JSON"),
    ("action that is not a string", json.dumps(CX | {"counterexample": ["arrive(0)", 5]}).encode(), 1,
     "counterexample[1]", "must be a string, got 5"),
    ("scenario that is a list", json.dumps(CX | {"scenario": ["burst2"]}).encode(), 1, "scenario",
     "must be a string or null"),
    ("policy of the wrong type", json.dumps(CX | {"policy": {"capacity": "x"}}).encode(), 1, "policy.capacity",
     "must be an integer >= 1, got 'x'"),
    ("no counterexample", json.dumps(CX | {"verdict": "ok", "counterexample": None}).encode(), 1, "counterexample",
     "no actions (did the exploration find a violation?"),
    ("list of something else", b'["arrive(0)", {"a": 1}]', 1, "item 1", "must be a string"),
]


@pytest.mark.parametrize("case, data, line, field, fragment", PATHS, ids=[c[0] for c in PATHS])
def test_a_malformed_path_exits_2_naming_file_line_and_field(tmp_path, case, data, line, field, fragment):
    path = _write(tmp_path, "cx.txt", data)
    assert_names(invoke("replay", path), path, line, field, fragment)


def test_path_files_that_hold_nothing_exit_2(tmp_path):
    empty = _write(tmp_path, "empty.txt", b"")
    assert_names(invoke("replay", empty), empty, None, None, "the file is empty (expected actions, one per line)")
    comments = _write(tmp_path, "comments.txt", b"# nothing yet\n")
    assert_names(invoke("replay", comments), comments, None, None, "holds only comments, no actions")
    assert_names(invoke("replay", tmp_path / "nope.txt"), tmp_path / "nope.txt", None, None, "no such file")


def test_a_well_formed_path_is_replayed(tmp_path):
    path = _write(tmp_path, "cx.json", json.dumps(CX).encode())
    result = invoke("replay", path)
    assert result.exit_code == 0 and "the engine follows the whole path" in flat(result.output)


@pytest.mark.parametrize("option, message", [
    ("capacity=²", "--a: capacity must be a positive integer; got '²'"),
    ("capacity=1,capacity=2", "--a: capacity is given twice"),
    ("capacity", "--a: 'capacity' is not KEY=VALUE"),
    ("pool=3", "--a: unknown key 'pool'"),
    ("release=later", "--a: release must be one of after-prefill, on-completion; got 'later'"),
])
def test_a_bad_key_value_option_exits_2_naming_it(option, message):
    result = invoke("diff", "--a", option)
    assert result.exit_code == 2 and message in flat(result.output), result.output


def test_corpus_of_an_unknown_scenario_exits_2_naming_it():
    # The listing once reused the name of the helper that quotes the bad value: a crash (exit 3), not exit 2.
    result = invoke("corpus", "--scenario", "burst9")
    assert result.exit_code == 2 and "unknown scenario 'burst9'; known: burst2" in flat(result.output), result.output
