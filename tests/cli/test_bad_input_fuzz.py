"""Valid inputs mutated byte by byte: every command answers with a verdict (0 or 1) or a named error (2).

The valid inputs are real: an event log written by a tiny-model engine run (a burst, a solo request,
an abort), the first lines of both shared Mooncake traces, and a counterexample the explorer found. A
few bytes are replaced, inserted or deleted (biased towards the bytes JSON is made of, so mutations
reach types and fields, not only syntax). The command runs in this process, and no exception may
escape it: that would be a traceback in front of a user.
"""

from __future__ import annotations

import json

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
