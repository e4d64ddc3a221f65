"""Valid inputs mutated byte by byte: every command answers with a verdict (0 or 1) or a named error (2).

The valid inputs are real: an event log written by a tiny-model engine run (a burst, a solo request,
an abort), the first lines of both shared Mooncake traces, and a counterexample the explorer found. A
few bytes are replaced, inserted or deleted (biased towards the bytes JSON is made of, so mutations
reach types and fields, not only syntax). The command runs in this process, and no exception may
escape it: that would be a traceback in front of a user.

Two whole-file formats are fuzzed by structure instead (a byte mutation of them is nearly always a
JSON syntax error): the conformance programs of ``conform --replay`` (a generated plain program with
every kind of operation, and a scenario-bound one) and the saved results of ``mutate --from-results``
(results.json and results.jsonl). One to three values anywhere in the document are replaced by a
plausible one (of the same type and of a real document's sizes, so the run behind the reader is reached)
or an odd one (huge, negative, non-finite, of the wrong type, a lone surrogate), deleted, duplicated, or
joined by an unknown key. Every case must answer within :data:`CASE_SECONDS`, with 0, 1 or 2, never 3 (a fault of
flightcheck).
"""

from __future__ import annotations

import _thread
import json
import random
import threading
import time
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bad_input import flat, invoke

from flightcheck.checks.workload.trace import shared_trace_path
from flightcheck.impl.engine import Engine, EngineConfig
from flightcheck.impl.sampling import SamplingParams

from switches import SLOW

EXAMPLES = 600 if SLOW else 120
JSON_BYTES = b'0123456789-.eE"[]{},: \n\\tfnrulsa'  # what JSON is made of, and the names of its literals
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` with one to four bytes replaced, inserted or deleted, or digits changed (keeping the JSON
    well-formed, so that the mutation reaches the values: counts, IDs, page indices)."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("replace", "insert", "delete", "digit", "digit")))
        digits = [i for i, b in enumerate(out) if chr(b).isdigit()]
        if kind == "digit" and digits:
            out[draw(st.sampled_from(digits))] = draw(st.sampled_from(b"0123456789"))
            continue
        position = draw(st.integers(0, len(out)))
        byte = draw(st.one_of(st.sampled_from(JSON_BYTES), st.sampled_from(JSON_BYTES), st.integers(0, 255)))
        if kind == "insert" or position == len(out):
            out.insert(position, byte)
        elif kind == "replace":
            out[position] = byte
        else:
            del out[position]
    return bytes(out)


def real_event_log(path) -> bytes:
    engine = Engine.tiny(EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1), event_log_path=str(path))
    prompt = [3, 1, 4, 1, 5, 9, 2, 6] * 5
    for _ in range(2):
        engine.add_request(prompt, SamplingParams(max_tokens=2))
    doomed = engine.add_request([5] * 20, SamplingParams(max_tokens=2))
    engine.step()
    engine.abort(doomed)
    engine.run()
    engine.close()
    return path.read_bytes()


@pytest.fixture(scope="module")
def event_log(tmp_path_factory):
    return real_event_log(tmp_path_factory.mktemp("log") / "run.events.jsonl")


def shared_lines(name: str, count: int = 6) -> bytes:
    with open(shared_trace_path(name), "rb") as f:
        return b"".join(f.readline() for _ in range(count))


COUNTEREXAMPLE = ("arrive(0)\nadmit(0)\nprefill(0)\npublish(0)\nprefill(0)\npublish(0)\nprefill(0)\n"
                  "release(0)\nfinish(0)\n").encode()


def check_answer(result, path, verdicts: dict[int, str]) -> None:
    """Exit 2 with an error naming the file, or one of ``verdicts`` (exit status -> what the output says)."""
    text = flat(result.output)
    if result.exit_code == 2:
        assert text.startswith("error: ") and str(path) in text, text
    else:
        assert result.exit_code in verdicts, (result.exit_code, text)
        assert verdicts[result.exit_code] in text, (result.exit_code, text)


def test_the_unmutated_inputs_are_valid(event_log, tmp_path):
    (tmp_path / "run.jsonl").write_bytes(event_log)
    assert invoke("validate", tmp_path / "run.jsonl").exit_code == 0
    for name in ("conversation", "synthetic"):
        (tmp_path / f"{name}.jsonl").write_bytes(shared_lines(name))
        assert invoke("workload", tmp_path / f"{name}.jsonl", "--workers", 1, "--json").exit_code == 0
    (tmp_path / "cx.txt").write_bytes(COUNTEREXAMPLE)
    result = invoke("replay", tmp_path / "cx.txt", "--variant", "forget-at-release", "--mutant", "forget-released")
    assert result.exit_code == 0 and "reproduced" in flat(result.output)


@FUZZ
@given(data=st.data())
def test_a_mutated_event_log_is_a_verdict_or_a_named_error(event_log, tmp_path, data):
    path = tmp_path / "run.events.jsonl"
    path.write_bytes(data.draw(mutated(event_log), label="log"))
    check_answer(invoke("validate", path), path, {0: "valid: ", 1: "mismatch at event"})


@FUZZ
@given(data=st.data())
def test_a_mutated_event_log_converts_or_is_a_named_error(event_log, tmp_path, data):
    path = tmp_path / "run.events.jsonl"
    path.write_bytes(data.draw(mutated(event_log), label="log"))
    check_answer(invoke("workload", "--from-events", path, "--workers", 1, "--json"), path, {0: '"summary"'})


@FUZZ
@given(data=st.data(), name=st.sampled_from(["conversation", "synthetic"]))
def test_a_mutated_trace_runs_or_is_a_named_error(tmp_path, data, name):
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(data.draw(mutated(shared_lines(name)), label="trace"))
    check_answer(invoke("workload", path, "--workers", 1, "--json"), path, {0: '"summary"'})


@settings(FUZZ, max_examples=EXAMPLES // 3)
@given(data=st.data(), as_json=st.booleans())
def test_a_mutated_counterexample_replays_or_is_a_named_error(tmp_path, data, as_json):
    path = tmp_path / "cx.txt"
    base = json.dumps({"counterexample": COUNTEREXAMPLE.decode().split(), "scenario": "burst2",
                       "variant": "forget-at-release"}).encode() if as_json else COUNTEREXAMPLE
    path.write_bytes(data.draw(mutated(base), label="path"))
    check_answer(invoke("replay", path, "--mutant", "forget-released"), path,
                 {0: "the engine ", 1: "the engine "})


# --- structural fuzzing of whole-file formats ------------------------------------------------------------
PROGRAM_EXAMPLES = 200 if SLOW else 40
RESULTS_EXAMPLES = 100 if SLOW else 16
CASE_SECONDS = 60  # a case that parses is one short run of the tiny model or one mutation plan: seconds
ODD_VALUES = [None, True, False, 0, 1, -1, 2, 3, 5, 99, 255, 256, 300, 1000, 1001, 2**31, 2**63, 2**64, 10**400,
              0.5, 0.8, 1e-7, 1e-320, -0.0, 1e15, float("inf"), float("-inf"), float("nan"), "", "x", "hot", "any",
              "leader", "unknown", "terminated", "unblocked", "expire", "step", "arrive", "burst2", "nope", "\ud800",
              "failed", "survived", "x" * 300, [], {}, [1], [0, 0.0, 0], {"a": 1}, [[[[[[1]]]]]]]
ODD = st.one_of(st.sampled_from(ODD_VALUES), st.integers(-2**70, 2**70),
                st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
                st.lists(st.integers(-5, 300), max_size=4))


WORDS = ["leader", "follower", "waiting", "running", "any", "unknown", "terminated", "unblocked", "arrive", "step",
         "abort", "notify", "hold", "resume", "expire", "fault", "refuse", "burst2", "burst3", "burst2-abort",
         "single-flight", "none", "prefix", "after-prefill", "on-completion", "incremental", "release-all", "promote",
         "failed", "crashed", "timeout", "survived", "skipped", "equivalent", "A", ""]


def plausible(original) -> st.SearchStrategy:
    """A value of ``original``'s type and of the sizes a real document holds (so a mutation often stays
    valid, and the run behind the reader is reached), or an odd value when there is no such type."""
    if isinstance(original, bool):
        return st.booleans()
    if isinstance(original, int):
        return st.integers(0, 6)
    if isinstance(original, float):
        return st.sampled_from([0.0, 0.8, 1.0, 2.5])
    if isinstance(original, str):
        return st.sampled_from(WORDS)
    return ODD


def _paths(value, here=()):
    """Every place in a JSON value: a tuple of keys and indices."""
    yield here
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, here + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, here + (i,))


@st.composite
def restructured(draw, document):
    """``document`` (JSON data) with one to three values replaced, deleted, duplicated or given a sibling."""
    doc = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        places = list(_paths(doc))
        place = draw(st.sampled_from(places[1:] or places))
        if not place:
            doc = draw(ODD)
            continue
        parent = doc
        for key in place[:-1]:
            parent = parent[key]
        key = place[-1]
        kind = draw(st.sampled_from(("plausible", "plausible", "plausible", "odd", "odd", "delete", "duplicate",
                                     "sibling")))
        if kind == "plausible":
            parent[key] = draw(plausible(parent[key]))
        elif kind == "odd":
            parent[key] = draw(ODD)
        elif kind == "delete":
            del parent[key]
        elif kind == "duplicate" and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(("extra", "pool", "id", "policy")))] = draw(ODD)
        else:
            parent.append(draw(ODD))
    return doc


@contextmanager
def time_cap(seconds: float):
    """Fail the case if it runs past ``seconds``: a hang is interrupted (as Ctrl-C would) and reported."""
    fired = threading.Event()

    def ring() -> None:
        fired.set()
        _thread.interrupt_main()
    timer = threading.Timer(seconds, ring)
    started = time.monotonic()
    timer.start()
    try:
        yield
    except KeyboardInterrupt:
        if not fired.is_set():
            raise
    finally:
        timer.cancel()
    if fired.is_set() or time.monotonic() - started > seconds:
        pytest.fail(f"the case ran past its time cap of {seconds} s")


def base_programs() -> list[dict]:
    """A plain program with every kind of operation, and one bound to scenario burst2 (as the generators
    make them)."""
    from flightcheck.checks.conform.generate import scenario_program

    plain = {"setup": {"config": {"max_running": 2, "num_pages": 12, "prefill_chunk_pages": 1,
                                  "follower_wait_bound": 3},
                       "templates": [{"tokens": [3, 1, 4, 1, 5, 9, 2, 6] * 5, "max_tokens": 3, "label": "A"},
                                     {"tokens": [7] * 20, "max_tokens": 2, "label": "B"}],
                       "eos_template": None, "stop_template": 1},
             "ops": [["arrive", 0, 0.0, 0], ["arrive", 0, 0.8, 1], ["hold", "waiting", 0], ["arrive", 1, 0.0, 2],
                     ["step", 2], ["resume", 0], ["abort", "follower", 1], ["notify", "unknown", 2],
                     ["fault", "running", 0], ["expire", 0], ["step", 3], ["refuse", "expire", "unblocked", 1],
                     ["refuse", "hold", "terminated", 0], ["notify", "terminated", 0], ["step", 1]]}
    return [plain, scenario_program(random.Random(0), "burst2").to_json()]


@pytest.fixture(scope="module")
def programs():
    return base_programs()


def test_the_base_programs_conform(programs, tmp_path):
    for n, program in enumerate(programs):
        path = tmp_path / f"program{n}.json"
        path.write_text(json.dumps(program))
        result = invoke("conform", "--replay", path)
        assert result.exit_code == 0 and "conformed" in flat(result.output), result.output


@settings(FUZZ, max_examples=PROGRAM_EXAMPLES)
@given(data=st.data())
def test_a_restructured_program_conforms_departs_or_is_a_named_error(programs, tmp_path, data):
    base = data.draw(st.sampled_from(programs), label="base")
    path = tmp_path / "program.json"
    path.write_text(json.dumps(data.draw(restructured(base), label="program")))
    with time_cap(CASE_SECONDS):
        result = invoke("conform", "--replay", path)
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    check_answer(result, path, {0: "conformed: ", 1: "the engine departs from the spec"})


ADD = "impl/coordinator.py::Coordinator.arrive::delete::self.released_request_ids.add(request_id) => pass"
INDEX = "impl/coordinator.py::Coordinator.arrive::delete::self.index[token_ids] = request_id => pass"
SAVED = {"meta": {"command": "flightcheck mutate --out runs", "date": "2026-01-01", "stages": ["m:f"], "quick": True,
                  "jobs": 2, "timeout": 120.0, "all_rows": False, "baseline_seconds": 1.5, "seconds": 30.0,
                  "files": ["impl/coordinator.py"], "operators": ["delete"], "sample": None, "seed": 0},
         "mutants": [{"id": ADD, "file": "impl/coordinator.py", "status": "failed", "seconds": 2.5, "reason": "",
                      "kills": [{"stage": "m:f", "item": "burst2", "detail": "violated", "properties": ["p"],
                                 "run_length": 3, "rules": ["arrive(0)"]}], "imported": True},
                     {"id": INDEX, "status": "survived", "seconds": 1.0, "reason": "", "kills": [],
                      "imported": None}]}


@settings(FUZZ, max_examples=RESULTS_EXAMPLES)
@given(data=st.data(), as_lines=st.booleans(), min_score=st.sampled_from([None, "0.5", "1.0"]))
def test_restructured_saved_results_score_or_are_a_named_error(tmp_path, data, as_lines, min_score):
    saved = data.draw(restructured(SAVED["mutants"] if as_lines else SAVED), label="results")
    path = tmp_path / ("results.jsonl" if as_lines else "results.json")
    if as_lines and isinstance(saved, list):
        path.write_text("".join(json.dumps(entry) + "\n" for entry in saved))
    else:
        path.write_text(json.dumps(saved))
    args = ["mutate", "--file", "impl/coordinator.py", "--from-results", path, "--json"]
    with time_cap(CASE_SECONDS):
        result = invoke(*args, *(["--min-score", min_score] if min_score else []))
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    check_answer(result, path, {0: '"score"', 1: '"score"'})
