"""Every reader bounded: limits on counts, lengths, times and IDs, one strict reader for whole files, strict
programs for ``conform --replay``, nothing to score is not a pass, and messages that quote input safely.

Each case is one command on one input, and the answer is exact: its exit status, one line ``error: ...``
naming the file (and the line and the field where there is one), and never a traceback. Inputs that used
to exhaust memory, hang or crash (a 10**10-token arrival, a FIFO, ``/dev/zero``, ``["step", 10**9]``,
a timestamp of 10**400, JSON 1000 levels deep) are here, so each must answer in well under a second or
two: a test that hangs is the bug it guards against.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from bad_input import assert_names, flat, invoke, jsonl

from flightcheck.checks import inputs
from flightcheck.checks.inputs import (MAX_HASH_IDS, MAX_LINE_BYTES, MAX_LINES_FILE_BYTES, MAX_PROGRAM_STEPS,
                                       MAX_REQUEST_TOKENS, InputError, read_json_file, read_text_file, shown)
from flightcheck.checks.workload import trace as trace_module

HEADER = {"policy": {"coordination": "single-flight", "release": "after-prefill", "publication": "incremental",
                     "capacity": 2, "chunk": 1}, "model": "tiny random Llama (seed 0)"}
ARRIVE = {"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0, "input": "k",
          "num_tokens": 40, "t": 0.0}
REQUEST = {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}


def _write(tmp_path, name, data: bytes | str):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def one_line(result, status: int, *fragments: str) -> str:
    """The exit status is ``status`` and the output is one line ``error: ...`` holding every fragment."""
    text = result.output
    assert "Traceback" not in text, text
    assert result.exit_code == status, (result.exit_code, text)
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), text
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# --- case 1 and 4: counts, lengths, timestamps and IDs bounded before anything is allocated -------------
BIG_EVENT_LOGS = [
    ("ten billion tokens", ARRIVE | {"num_tokens": 10_000_000_000}, "num_tokens",
     f"must be at most {MAX_REQUEST_TOKENS:,}"),
    ("tokens as 1e15", '{"seq":0,"action":"arrive","request":0,"role":"leader","flight":0,"input":"k",'
                       '"num_tokens":1e15}', "num_tokens", "must be an integer >= 1"),
    ("a time of 10**400", json.dumps(ARRIVE).replace('"t": 0.0', '"t": 1' + "0" * 400), "t",
     "must be at most 1,000,000,000"),
    ("a time of 1e400", json.dumps(ARRIVE).replace('"t": 0.0', '"t": 1e400'), "t", "must be a finite number"),
    ("a request ID past 64 bits", ARRIVE | {"request": 2**64}, "request", "must fit in 64 bits"),
    ("max_tokens of 10**12", ARRIVE | {"max_tokens": 10**12}, "max_tokens", f"must be at most {MAX_REQUEST_TOKENS:,}"),
]


@pytest.mark.parametrize("case, line, field, fragment", BIG_EVENT_LOGS, ids=[c[0] for c in BIG_EVENT_LOGS])
def test_an_out_of_range_event_is_exit_2_for_both_readers(tmp_path, case, line, field, fragment):
    path = _write(tmp_path, "run.events.jsonl", jsonl(HEADER, line))
    for args in (("validate", path), ("workload", "--from-events", path, "--workers", 1)):
        started = time.monotonic()
        result = invoke(*args)
        assert time.monotonic() - started < 20, "bounded before anything is allocated"
        assert_names(result, path, 2, field, fragment)
        one_line(result, 2)


BIG_TRACES = [
    ("a timestamp of 10**400", json.dumps(REQUEST).replace('"timestamp": 0', '"timestamp": 1' + "0" * 400),
     "timestamp", "must be at most 1,000,000,000,000 ms"),
    ("a timestamp of 1e15", REQUEST | {"timestamp": 1e15}, "timestamp", "must be at most"),
    ("a timestamp of 1e400", json.dumps(REQUEST).replace('"timestamp": 0', '"timestamp": 1e400'), "timestamp",
     "must be a finite number"),
    ("an input of 10**10 tokens", REQUEST | {"input_length": 10**10}, "input_length", "must be at most"),
    ("a hash id past 64 bits", REQUEST | {"hash_ids": [7, 2**64]}, "hash_ids", "position 1 must fit in 64 bits"),
    ("too many hash ids", REQUEST | {"hash_ids": list(range(MAX_HASH_IDS + 1))}, "hash_ids",
     f"more than the {MAX_HASH_IDS:,} a request may have"),
]


@pytest.mark.parametrize("case, line, field, fragment", BIG_TRACES, ids=[c[0] for c in BIG_TRACES])
def test_an_out_of_range_trace_request_is_exit_2(tmp_path, case, line, field, fragment):
    path = _write(tmp_path, "trace.jsonl", jsonl(REQUEST, line))
    result = invoke("workload", path, "--workers", 1)
    assert_names(result, path, 2, field, fragment)
    one_line(result, 2)


def test_a_line_longer_than_its_limit_is_refused_before_it_is_parsed(tmp_path):
    huge = json.dumps(REQUEST | {"hash_ids": [1] * (MAX_LINE_BYTES // 3 + 1)})
    assert len(huge) > MAX_LINE_BYTES
    path = _write(tmp_path, "trace.jsonl", jsonl(REQUEST, huge))
    result = invoke("workload", path, "--workers", 1)
    assert_names(result, path, 2, None, f"bytes long; a line may hold at most {MAX_LINE_BYTES >> 20} MiB")
    log = _write(tmp_path, "run.events.jsonl", jsonl(HEADER, ARRIVE | {"input": "k" * (MAX_LINE_BYTES + 1)}))
    assert_names(invoke("validate", log), log, 2, None, "a line may hold at most")


def test_a_file_larger_than_its_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "trace.jsonl"
    with open(path, "wb") as f:  # sparse: nothing is written, the size is all that is checked
        f.truncate(MAX_LINES_FILE_BYTES + 1)
    result = invoke("workload", path, "--workers", 1)
    one_line(result, 2, str(path), f"is larger than {MAX_LINES_FILE_BYTES >> 20} MiB")
    result = invoke("validate", path)
    one_line(result, 2, str(path), "is larger than")


def test_a_file_of_more_lines_than_its_limit_is_refused_before_it_is_split(tmp_path):
    path = _write(tmp_path, "run.events.jsonl", b"{}\n" * inputs.MAX_FILE_LINES)
    for args in (("validate", path), ("workload", path), ("replay", path)):
        one_line(invoke(*args), 2, str(path), f"holds more than {inputs.MAX_FILE_LINES:,} lines")


def test_a_trace_whose_blocks_add_up_past_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_module, "MAX_TRACE_BLOCKS", 3)
    path = _write(tmp_path, "trace.jsonl", jsonl(REQUEST, REQUEST))
    assert_names(invoke("workload", path, "--workers", 1), path, 2, "hash_ids", "add up to more than 3")
    log = _write(tmp_path, "run.events.jsonl", jsonl(HEADER, ARRIVE))  # 40 tokens: 3 blocks of 16
    assert invoke("workload", "--from-events", log, "--workers", 1, "--json").exit_code == 0
    log = _write(tmp_path, "two.events.jsonl", jsonl(HEADER, ARRIVE, ARRIVE | {"seq": 1, "request": 1, "input": "j",
                                                                               "t": 0.5}))
    assert_names(invoke("workload", "--from-events", log, "--workers", 1), log, 3, "num_tokens",
                 "add up to more than 3")


def test_too_many_requests_for_offline_validation_is_exit_2(tmp_path, monkeypatch):
    from flightcheck.checks.conform import eventlog

    monkeypatch.setattr(eventlog, "MAX_LOG_REQUESTS", 1)
    path = _write(tmp_path, "run.events.jsonl", jsonl(HEADER, ARRIVE, ARRIVE | {"seq": 1, "request": 1, "t": 0.1,
                                                                                "role": "follower"}))
    one_line(invoke("validate", path), 2, str(path), "holds 2 requests, more than the 1")


def test_a_validation_past_its_time_limit_is_exit_2_naming_the_event(tmp_path):
    from flightcheck.checks.conform.eventlog import read_events, validate_events
    from flightcheck.spec.scenario import Policy

    path = _write(tmp_path, "run.events.jsonl", jsonl(HEADER, ARRIVE))
    events, _ = read_events(str(path))
    with pytest.raises(InputError, match="too large to validate offline: -1 s passed at event 1 of 1"):
        validate_events(events, Policy(), source=str(path), max_seconds=-1)


# --- case 2: one strict reader for whole files ---------------------------------------------------------
def _results_path(tmp_path, name="results.json"):
    return _write(tmp_path, name, json.dumps({"meta": {}, "mutants": []}))


WHOLE_FILE_READERS = {
    "conform --replay": lambda p: ("conform", "--replay", p),
    "mutate --from-results": lambda p: ("mutate", "--file", "impl/coordinator.py", "--from-results", p),
    "mutate --equivalent": lambda p: ("mutate", "--file", "impl/coordinator.py", "--list", "--equivalent", p),
}


@pytest.mark.parametrize("reader", list(WHOLE_FILE_READERS))
@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "missing", "too large", "not UTF-8"])
def test_every_whole_file_reader_refuses_what_is_not_a_small_regular_text_file(tmp_path, reader, kind):
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)  # opening it to read would block until a writer came
        fragment = "is not a regular file"
    elif kind == "device":
        path, fragment = "/dev/zero", "is not a regular file"  # reading it would never end
    elif kind == "directory":
        path, fragment = tmp_path, "is a directory"
    elif kind == "missing":
        path, fragment = tmp_path / "absent.json", "no such"
    elif kind == "too large":
        path = tmp_path / "big.json"
        with open(path, "wb") as f:
            f.truncate(inputs.MAX_DOCUMENT_BYTES + 1)
        fragment = "is larger than 32 MiB"
    else:
        path, fragment = _write(tmp_path, "bad.json", b'{"a":\n "\xff"}'), "line 2: not UTF-8 text (byte 0xff at column 3)"
    started = time.monotonic()
    result = invoke(*WHOLE_FILE_READERS[reader](path))
    assert time.monotonic() - started < 30
    one_line(result, 2, str(path), fragment)


def test_the_shared_reader_in_code(tmp_path):
    path = _write(tmp_path, "doc.json", '{"a": [1, 2]}')
    assert read_json_file(path, "a document") == {"a": [1, 2]}
    assert read_text_file(path, "a document", max_bytes=13) == '{"a": [1, 2]}'
    with pytest.raises(InputError, match="is larger than 12 bytes, the most flightcheck reads as a document"):
        read_text_file(path, "a document", max_bytes=12)
    deep = _write(tmp_path, "deep.json", "[" * 33 + "]" * 33)
    with pytest.raises(InputError, match="nested too deeply: more than 32 levels"):
        read_json_file(deep, "a document")
    assert read_json_file(deep, "a document", max_depth=33) is not None
    with pytest.raises(InputError, match="the file is empty"):
        read_json_file(_write(tmp_path, "empty.json", " \n"), "a document")


# --- case 3: programs, every field checked --------------------------------------------------------------
GOOD_PROGRAM = {"setup": {"config": {"max_running": 2, "num_pages": 8},
                          "templates": [{"tokens": [1] * 20, "max_tokens": 2, "label": "A"}]},
                "ops": [["arrive", 0, 0.0, 0], ["step", 2]]}


def _program(change) -> dict:
    program = json.loads(json.dumps(GOOD_PROGRAM))
    change(program)
    return program


def _op(op):
    return lambda p: p["ops"].append(op)


def _template(key, value):
    return lambda p: p["setup"]["templates"][0].__setitem__(key, value)


def _setup(key, value):
    return lambda p: p["setup"].__setitem__(key, value)


def _config(key, value):
    return lambda p: p["setup"]["config"].__setitem__(key, value)


BAD_PROGRAMS = [
    ("a billion steps", _op(["step", 1_000_000_000]), "ops[2][1]", f"must be at most {MAX_PROGRAM_STEPS:,}"),
    ("steps adding up past the limit", lambda p: p["ops"].extend([["step", 600]] * 2), "ops[3][1]",
     "the program's steps add up to more than"),
    ("zero steps", _op(["step", 0]), "ops[2][1]", "must be an integer >= 1"),
    ("a hot temperature", _op(["arrive", 0, "hot", 0]), "ops[2][2]", "the temperature must be 0 or a number"),
    ("a negative temperature", _op(["arrive", 0, -1, 0]), "ops[2][2]", "got -1"),
    ("a temperature of 10**400", _op(["arrive", 0, 10**400, 0]), "ops[2][2]", "an integer of about 401 digits"),
    ("an infinite temperature", _op(["arrive", 0, float("inf"), 0]), "ops[2][2]", "got inf"),
    ("a negative seed", _op(["arrive", 0, 0.0, -1]), "ops[2][3]", "the seed must be an integer >= 0"),
    ("an arrival of template 99", _op(["arrive", 99, 0.0, 0]), "ops[2][1]",
     "must name one of the setup's 1 templates (0 to 0), got 99"),
    ("an abort of kind bogus", _op(["abort", "bogus", 0]), "ops[2][1]", "the kind must be one of leader"),
    ("a refusal the call cannot have", _op(["refuse", "hold", "unblocked", 0]), "ops[2][2]",
     "must be one of terminated, unknown for a refused hold"),
    ("an unknown operation", _op(["teleport", 0]), "ops[2]", "whose NAME is one of arrive, step"),
    ("an operation of the wrong arity", _op(["abort", "any"]), "ops[2]", "abort takes 2 arguments"),
    ("an operation that is not an array", _op("step"), "ops[2]", "must be an array [NAME, ...]"),
    ("max_tokens 0", _template("max_tokens", 0), "setup.templates[0].max_tokens", "must be an integer >= 1"),
    ("a token of -1", lambda p: p["setup"]["templates"][0]["tokens"].__setitem__(0, -1),
     "setup.templates[0].tokens[0]", "must be an integer >= 0, got -1"),
    ("a token of 300", lambda p: p["setup"]["templates"][0]["tokens"].__setitem__(3, 300),
     "setup.templates[0].tokens[3]", "must be a token id below 256"),
    ("no tokens", _template("tokens", []), "setup.templates[0].tokens", "must hold 1 to"),
    ("an unknown template key", _template("prompt", "hi"), "setup.templates[0].prompt", "unknown"),
    ("scenario -1", _setup("scenario", -1), "setup.scenario", "must be null or a scenario's name"),
    ("scenario 2**64", _setup("scenario", 2**64), "setup.scenario", "got 18446744073709551616"),
    ("scenario nope", _setup("scenario", "nope"), "setup.scenario", "got 'nope'"),
    ("an unknown policy key", lambda p: p["setup"].update(scenario="burst2", policy={"pool": 3}),
     "setup.policy.pool", "unknown (known: coordination"),
    ("a policy without a scenario", _setup("policy", {"release": "on-completion"}), "setup.policy",
     "applies only to a program bound to a scenario"),
    ("an unknown config key", _config("pool", 1), "setup.config.pool", "unknown (known: coordination"),
    ("a pool of 10**9 pages", _config("num_pages", 10**9), "setup.config.num_pages", "must be at most 4,096"),
    ("a pool too small for a template", _config("num_pages", 1), "setup.templates[0]",
     "needs 2 KV pages (20 prompt tokens and max_tokens 2), but setup.config.num_pages is 1"),
    ("an EOS template that is not one", _setup("eos_template", 5), "setup.eos_template", "the eos_template 5 names no template"),
    ("a scenario-bound program of another shape", _setup("scenario", "burst2"), "setup.templates",
     "scenario burst2 has 2 requests, one template each; got 1"),
    ("an unknown top-level key", lambda p: p.__setitem__("extra", 1), "extra", "unknown (known: setup, ops, trace)"),
]


@pytest.mark.parametrize("case, change, field, fragment", BAD_PROGRAMS, ids=[c[0] for c in BAD_PROGRAMS])
def test_a_bad_program_is_exit_2_naming_the_field(tmp_path, case, change, field, fragment):
    path = _write(tmp_path, "program.json", json.dumps(_program(change)))
    started = time.monotonic()
    result = invoke("conform", "--replay", path)
    assert time.monotonic() - started < 30, "checked before any engine runs"
    one_line(result, 2, f"{path}, field {field!r}: ", fragment)


@pytest.mark.parametrize("text, fragment", [
    ("[" * 1000 + "]" * 1000, "nested too deeply"),
    ('{"setup": ', "not valid JSON (Expecting value at column 11)"),
    ("[1, 2]", "expected a conformance program (a JSON object with setup and ops), got [1, 2]"),
    ('{"setup": {}, "ops": []}', "field 'setup.config': missing"),
])
def test_a_program_file_that_is_not_a_program_is_exit_2(tmp_path, text, fragment):
    path = _write(tmp_path, "program.json", text)
    one_line(invoke("conform", "--replay", path), 2, str(path), fragment)


def test_a_good_program_still_runs(tmp_path):
    path = _write(tmp_path, "program.json", json.dumps(GOOD_PROGRAM))
    result = invoke("conform", "--replay", path)
    assert result.exit_code == 0 and "conformed" in flat(result.output), result.output


# --- case 5: mutate --from-results: nested input, and nothing to score ---------------------------------
def test_saved_results_nested_too_deeply_are_exit_2(tmp_path):
    path = _write(tmp_path, "results.json", '{"mutants": ' + "[" * 1000 + "]" * 1000 + "}")
    one_line(invoke(*WHOLE_FILE_READERS["mutate --from-results"](path)), 2, str(path), "nested too deeply")


@pytest.mark.parametrize("name, text, fragment", [
    ("results.json", "", "the file is empty"),
    ("results.jsonl", "", "the file is empty"),
    ("results.json", json.dumps({"mutants": []}), "--min-score 0.9: nothing to score"),
    ("results.json", json.dumps({"mutants": [{"id": "impl/gone.py::f::x", "status": "survived"}]}),
     "--min-score 0.9: nothing to score"),
])
def test_nothing_to_score_is_not_a_pass(tmp_path, name, text, fragment):
    path = _write(tmp_path, name, text)
    result = invoke(*WHOLE_FILE_READERS["mutate --from-results"](path), "--min-score", "0.9", "--json")
    assert "Traceback" not in result.output and result.exit_code == 2, result.output
    assert fragment in flat(result.output)


@pytest.mark.parametrize("entry, field, fragment", [
    ({"id": 5, "status": "survived"}, "mutants[0].id", "must be a string, got 5"),
    ({"id": "x", "status": "alive"}, "mutants[0].status", "must be one of failed, crashed"),
    ({"id": "x", "status": "failed", "kills": [{"stage": "s"}]}, "mutants[0].kills[0].item", "missing"),
    ({"id": "x", "status": "failed", "kills": [{"stage": "s", "item": "i", "detail": "d", "x": 1}]},
     "mutants[0].kills[0].x", "unknown"),
    ({"id": "x", "status": "survived", "seconds": "1"}, "mutants[0].seconds", "must be a finite number"),
])
def test_saved_results_of_the_wrong_shape_are_exit_2_naming_the_field(tmp_path, entry, field, fragment):
    path = _write(tmp_path, "results.json", json.dumps({"mutants": [entry]}))
    result = invoke(*WHOLE_FILE_READERS["mutate --from-results"](path))
    one_line(result, 2, f"field {field!r}", fragment, "not a results.json or results.jsonl")
    lines = _write(tmp_path, "results.jsonl", json.dumps(entry) + "\n")
    result = invoke(*WHOLE_FILE_READERS["mutate --from-results"](lines))
    one_line(result, 2, f"{lines} line 1, field {field.split('.', 1)[1]!r}")


# --- case 6: printing what came from outside -------------------------------------------------------------
def test_a_diagnosis_quoting_a_lone_surrogate_prints_escaped(tmp_path):
    path = _write(tmp_path, "run.events.jsonl", jsonl(HEADER, json.dumps(ARRIVE | {"role": "\ud800"})))
    result = invoke("validate", path)
    assert "Traceback" not in result.output and result.exit_code == 1, result.output
    assert "the engine made it \\ud800, the spec leader" in flat(result.output)


def test_an_error_quoting_a_long_value_cuts_it(tmp_path):
    long_action = "x" * 1_000_000
    path = _write(tmp_path, "run.events.jsonl", jsonl(HEADER, {"seq": 0, "action": long_action, "request": 0}))
    line = one_line(invoke("validate", path), 2, "unknown action 'xxxx", "... (1,000,002 characters)")
    assert len(line) < 600
    path = _write(tmp_path, "same.events.jsonl", jsonl(HEADER, ARRIVE | {"input": "k" * 100_000},
                                                       ARRIVE | {"seq": 1, "request": 1, "role": "follower",
                                                                 "input": "k" * 100_000, "num_tokens": 41}))
    line = one_line(invoke("validate", path), 2, "for the same input 'kkk", "(100,002 characters)")
    assert len(line) < 600
    trace = _write(tmp_path, "trace.jsonl", jsonl(REQUEST | {"hash_ids": list(range(50_000)) + ["x"]}))
    line = one_line(invoke("workload", trace, "--workers", 1), 2, "position 50000 must be an integer, got 'x'")
    one_line(invoke("workload", "y" * 100_000, "--workers", 1), 2, "(100,002 characters) not found")


def test_shown_and_printable():
    assert shown("a" * 10, 5) == "'aaaa... (12 characters)"
    assert shown(list(range(100)), 10).endswith("... (an array of 100 items)")
    assert shown(10**5000) == "an integer of about 5,001 digits"
    assert inputs.printable("bell\x07 esc\x1b[2J \ud800 ok\n") == "bell\\x07 esc\\x1b[2J \\ud800 ok\n"
    error = InputError("f.jsonl", 3, "x", "bad " + "v" * 10_000)
    assert len(str(error)) < inputs.MAX_MESSAGE_CHARS + 100 and "(10,004 characters)" in str(error)
