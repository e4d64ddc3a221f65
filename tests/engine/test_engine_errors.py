"""Bad input gets a clear error naming the problem; the engine's state and other requests are untouched."""

import json
import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import pytest

from flightcheck.checks.conform.program import Program, Setup, Template
from flightcheck.impl import config as config_module
from flightcheck.impl.config import (KV_MEMORY_FRACTION, MIN_KV_PAGE_BYTES, EngineConfig, kv_page_bytes,
                                     machine_memory_bytes)
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import (EngineError, EventLogError, InvalidArgumentError, InvalidConfigError,
                                     InvalidRequestError, InvalidSamplingError, NoProgressError, UnknownRequestError)
from flightcheck.impl.llama import ModelArgs
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.sampling import SamplingParams
from flightcheck.impl.tiny import TINY_ARGS, tiny_model


class ByteCodec:
    """A real byte-level tokenizer for the tiny model's 256-token vocabulary (token id = UTF-8 byte)."""

    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, token_ids):
        return bytes(token_ids).decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False, max_position_embeddings=256))


def busy_engine(model, **overrides):  # noqa: D401
    """An engine in the middle of work: a flight with a blocked follower, a decoding request, a finished one."""
    config = EngineConfig(num_pages=64, max_running=2, **overrides)
    engine = Engine(ModelRunner(model, num_pages=64), ByteCodec(), config)
    done = engine.add_request("finished early", SamplingParams(max_tokens=1))
    engine.step()
    ids = [engine.add_request("a shared prompt of some length", SamplingParams(max_tokens=20)) for _ in range(2)]
    ids.append(engine.add_request("another one", SamplingParams(max_tokens=20)))
    engine.hold(ids[0])  # the leader's prefill waits, so its follower stays blocked
    engine.step()
    assert engine.phase(done) == "finished" and engine.phase(ids[1]) == "blocked"
    assert engine.phase(ids[0]) == "prefill" and engine.phase(ids[2]) == "decode"
    return engine, done, ids


def finish_all(engine, ids):
    engine.resume(ids[0])
    engine.run()
    assert [len(engine.result(i).output_token_ids) for i in ids] == [20, 20, 20]
    engine.check_invariants()


BAD_REQUESTS = [
    ("", None, InvalidRequestError, "prompt is empty"),
    ([], None, InvalidRequestError, "prompt is empty"),
    ([1] * 257, None, InvalidRequestError, "257 tokens, longer than the context of 256"),
    ([1, 300], None, InvalidRequestError, "prompt token 1 is 300"),
    ([1, -1], None, InvalidRequestError, "prompt token 1 is -1"),
    ("x", {"temperature": -1}, InvalidSamplingError, "sampling.temperature"),
    ("x", {"top_p": 0}, InvalidSamplingError, "sampling.top_p"),
    ("x", {"max_tokens": 0}, InvalidSamplingError, "sampling.max_tokens"),
    ("x", {"seed": -3}, InvalidSamplingError, "sampling.seed"),
    ("x", {"temprature": 0.5}, InvalidSamplingError, "unknown sampling field.*temprature"),
]


@pytest.mark.parametrize("prompt, sampling, error, message", BAD_REQUESTS)
def test_bad_requests_raise_and_leave_state_unchanged(model, prompt, sampling, error, message):
    engine, _, ids = busy_engine(model, max_context=None)
    before = engine.snapshot()
    with pytest.raises(error, match=message):
        engine.add_request(prompt, sampling)
    assert engine.snapshot() == before
    finish_all(engine, ids)  # the other requests finish normally


def test_request_larger_than_the_pool_names_pages(model):
    engine = Engine(ModelRunner(model, num_pages=4), config=EngineConfig(num_pages=4))
    with pytest.raises(InvalidRequestError, match="needs 5 KV pages .* the pool has 4"):
        engine.add_request([1] * 70, SamplingParams(max_tokens=5))


@pytest.mark.parametrize("call", ["abort", "notify_termination"])
def test_unknown_ids_are_rejected_logged_and_change_nothing(model, call):
    engine, done, ids = busy_engine(model)
    for bad, detail in ((999, "never submitted"), (done, "already finished")):
        before = engine.snapshot()
        num_events = len(engine.events.events)
        with pytest.raises(UnknownRequestError, match=f"unknown request ID {bad}: {detail}"):
            getattr(engine, call)(bad)
        assert engine.snapshot() == before
        notify = engine.events.events[num_events:]
        assert [(e["action"], e["request"], e["accepted"]) for e in notify] == [("notify", bad, False)]
    finish_all(engine, ids)


def test_double_abort_is_an_error(model):
    engine, _, ids = busy_engine(model)
    engine.abort(ids[2])
    with pytest.raises(UnknownRequestError, match="already aborted"):
        engine.abort(ids[2])
    with pytest.raises(UnknownRequestError):
        engine.notify_termination(ids[2])


def test_termination_notice_of_a_live_request_terminates_it(model):
    engine, _, ids = busy_engine(model)
    engine.notify_termination(ids[1])  # the blocked follower
    assert engine.phase(ids[1]) == "aborted"
    engine.resume(ids[0])
    engine.run()
    (release,) = [e for e in engine.events.of("release") if e["flight"] == ids[0]]
    assert release["followers"] == [] and release["reason"] == "after-prefill"
    assert [e["phase"] for e in engine.events.of("abort")] == ["blocked"]


@pytest.mark.parametrize("field, value", [("coordination", "maybe"), ("release", "later"), ("publication", "never"),
                                          ("max_running", 0), ("prefill_chunk_pages", -1), ("num_pages", 0),
                                          ("follower_wait_bound", 0), ("max_context", True)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(InvalidConfigError, match=f"config.{field}"):
        EngineConfig(**{field: value})


def test_single_flight_needs_prefix_caching():
    with pytest.raises(InvalidConfigError, match="needs prefix_caching"):
        EngineConfig(coordination="single-flight", prefix_caching=False)


def test_config_pool_size_must_match_the_runner(model):
    with pytest.raises(InvalidConfigError, match="num_pages is 32 but the runner's pools hold 64"):
        Engine(ModelRunner(model, num_pages=64), config=EngineConfig(num_pages=32))


def test_text_prompt_without_tokenizer_and_stop_without_tokenizer(model):
    engine = Engine(ModelRunner(model, num_pages=16), config=EngineConfig(num_pages=16))
    with pytest.raises(InvalidRequestError, match="needs a tokenizer"):
        engine.add_request("hello")
    with pytest.raises(InvalidSamplingError, match="sampling.stop needs a tokenizer"):
        engine.add_request([1, 2], SamplingParams(stop=("x",)))


def test_eos_and_stop_strings_end_the_output(model):
    engine = Engine(ModelRunner(model, num_pages=64), ByteCodec(), EngineConfig(num_pages=64))
    free = engine.generate(["Hello, world"], SamplingParams(max_tokens=12))[0]
    assert free.finish_reason == "length" and len(free.output_token_ids) == 12
    eos = free.output_token_ids[4]
    first = free.output_token_ids.index(eos)
    engine = Engine(ModelRunner(model, num_pages=64), ByteCodec(), EngineConfig(num_pages=64), eos_token_ids=[eos])
    ended = engine.generate(["Hello, world"], SamplingParams(max_tokens=12))[0]
    assert ended.finish_reason == "eos" and ended.output_token_ids == free.output_token_ids[:first]
    ignored = engine.generate(["Hello, world"], SamplingParams(max_tokens=12, ignore_eos=True))[0]
    assert ignored.output_token_ids == free.output_token_ids
    # A stop string: the text of the first three tokens, cut before the stop.
    text = ByteCodec().decode(free.output_token_ids)
    stop = text[3:5]
    stopped = engine.generate(["Hello, world"], SamplingParams(max_tokens=12, stop=(stop,), ignore_eos=True))[0]
    assert stopped.finish_reason == "stop" and stopped.text == text[:text.find(stop)]


def test_generate_checks_every_prompt_before_adding_any(model):
    engine, _, ids = busy_engine(model)
    before = engine.snapshot()
    with pytest.raises(InvalidRequestError, match="prompt is empty"):
        engine.generate(["fine", "also fine", ""], SamplingParams(max_tokens=2))
    with pytest.raises(InvalidSamplingError, match="got 1 sampling settings for 2 prompts"):
        engine.generate(["a", "b"], [SamplingParams()])
    with pytest.raises(InvalidSamplingError, match="sampling.top_p"):
        engine.generate(["a", "b"], [SamplingParams(), {"top_p": 2.0}])
    assert engine.snapshot() == before
    finish_all(engine, ids)


# --- issue 23: every knob has a limit, every argument a type ----------------------------------------------

def test_the_config_floor_of_kv_bytes_per_page_is_the_tiny_models():
    assert kv_page_bytes(TINY_ARGS) == MIN_KV_PAGE_BYTES
    runner = ModelRunner(tiny_model(), num_pages=4)
    assert runner.kv_bytes // runner.num_pages == MIN_KV_PAGE_BYTES


@pytest.mark.parametrize("num_pages", [10**8, 3_000_000])
def test_a_pool_larger_than_the_machine_is_a_config_error_naming_the_limit(num_pages):
    limit = int(machine_memory_bytes() * KV_MEMORY_FRACTION) // MIN_KV_PAGE_BYTES
    assert num_pages > limit  # the test's premise: more than half of this machine's memory
    with pytest.raises(InvalidConfigError, match=rf"config.num_pages is {num_pages}: .* 8192 bytes of KV cache per "
                                                 rf"page .*50% of this machine's .* the limit is {limit} pages"):
        EngineConfig(num_pages=num_pages)


def test_a_pool_beyond_int32_slots_is_a_config_error_not_an_overflow():
    with pytest.raises(InvalidConfigError, match=r"config.num_pages is 1000000000, above its limit of 134217727 "
                                                 r"\(pages: the runner's int32 slot indices\)"):
        EngineConfig(num_pages=10**9)


def test_an_oversized_pool_never_reaches_the_allocator(tmp_path):
    """The attack's two doors, in a fresh process (a regression would be a segfault, not a failure):
    the API, and a conformance program replayed from a file (exit 2 naming the knob)."""
    script = ("from flightcheck.impl.engine import Engine, EngineConfig\n"
              "from flightcheck.impl.errors import InvalidConfigError\n"
              "try:\n    Engine.tiny(EngineConfig(num_pages=10**8))\n"
              "except InvalidConfigError as error:\n    print('refused:', error)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "refused: config.num_pages is 100000000" in done.stdout, done.stderr
    program = Program(Setup({"num_pages": 10**8, "max_running": 2}, (Template((3,) * 20, 2, "A"),)),
                      (("arrive", 0, 0.0, 0), ("step", 2)))
    path = tmp_path / "program.json"
    path.write_text(json.dumps(program.to_json()))
    done = subprocess.run([sys.executable, "-m", "flightcheck.checks.cli.app", "conform", "--replay", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "num_pages" in done.stderr + done.stdout and "100000000" in done.stderr + done.stdout


def test_a_pool_too_large_for_the_model_is_refused_before_its_pools_exist(monkeypatch):
    """The config knows no model, so it checks the smallest page; Engine.tiny and Engine.smollm2 check
    the model's own page before allocating anything, and Engine(...) holds a runner to the same limit."""
    monkeypatch.setattr(config_module, "machine_memory_bytes", lambda: 64 << 20)  # 32 MiB for the pool
    config = EngineConfig(num_pages=4096)  # 32 MiB at the tiny model's 8 KiB a page: fits exactly
    with pytest.raises(InvalidConfigError, match="the limit is 4096 pages"):
        EngineConfig(num_pages=4097)

    def no_allocation(*args, **kwargs):
        raise AssertionError("the KV pools were allocated before the check")

    smollm2_args = ModelArgs(hidden_size=576, num_hidden_layers=30, intermediate_size=1536, num_attention_heads=9,
                             num_key_value_heads=3, vocab_size=49152)
    fake = (SimpleNamespace(args=smollm2_args), None, SimpleNamespace(is_dequantized=False, name="SmolLM2"))
    monkeypatch.setattr(ModelRunner, "__init__", no_allocation)
    with pytest.raises(InvalidConfigError, match=r"config.num_pages is 4096: at 737280 bytes of KV cache per page "
                                                 r"\(SmolLM2's\) .* the limit is 45 pages"):
        Engine.smollm2(config, model=fake)
    monkeypatch.undo()
    monkeypatch.setattr(config_module, "machine_memory_bytes", lambda: 64 << 20)
    big = tiny_model(args=replace(TINY_ARGS, num_hidden_layers=4))  # 16 KiB a page
    runner = ModelRunner(big, num_pages=4096)
    with pytest.raises(InvalidConfigError, match=r"16384 bytes .*\(this runner's\).* the limit is 2048 pages"):
        Engine(runner, config=config)


@pytest.mark.parametrize("field, value, limit", [
    ("max_running", 1025, "1024"), ("prefill_chunk_pages", 65537, "65536"), ("min_shared_pages", 10**6, "65536"),
    ("max_context", 2**20 + 1, "1048576"), ("follower_wait_bound", 100_001, "100000"),
    ("seed", 2**63, "9223372036854775807")])
def test_every_knob_has_an_upper_bound_named_in_the_message(field, value, limit):
    with pytest.raises(InvalidConfigError, match=rf"config.{field} is {value}, above its limit of {limit} \("):
        EngineConfig(**{field: value})
    EngineConfig(**{field: int(limit)})  # the limit itself is allowed


@pytest.mark.parametrize("field, value", [("seed", -1), ("prefix_caching", "yes"), ("prefix_caching", 1),
                                          ("coordination", ["none"]), ("num_pages", 16.0), ("max_running", "2"),
                                          ("follower_wait_bound", 1.5), ("seed", 1.0)])
def test_ill_typed_knobs_are_config_errors(field, value):
    with pytest.raises(InvalidConfigError, match=f"config.{field}"):
        EngineConfig(**{field: value})


def request_id_calls(engine):
    """Every public call that takes a request ID, as (name, function of the ID)."""
    return [("abort", engine.abort), ("notify_termination", engine.notify_termination), ("forget", engine.forget),
            ("expire", engine.expire), ("inject_fault", engine.inject_fault), ("hold", engine.hold),
            ("resume", engine.resume), ("result", engine.result), ("phase", engine.phase),
            ("stream", engine.stream)]


@pytest.mark.parametrize("bad", [True, False, 2.0, 1.5, "x", None, [1], (2,), b"\x01", 2**63, -(2**63) - 1, 10**5000],
                         ids=lambda v: f"{type(v).__name__}-{v.bit_length() if isinstance(v, int) else v!r}")
def test_a_request_id_that_is_not_an_integer_is_refused_before_anything_changes_or_is_logged(model, bad):
    engine, _, ids = busy_engine(model)
    for name, call in request_id_calls(engine):
        before = engine.snapshot()
        num_events = engine.events.num_emitted
        with pytest.raises(InvalidArgumentError, match=f"{name}: request_id"):
            call(bad)
        assert engine.snapshot() == before and engine.events.num_emitted == num_events, name
    finish_all(engine, ids)


def test_bools_and_floats_do_not_abort_requests_1_and_2(model):
    """The attack: abort(True) and abort(2.0) aborted requests 1 and 2 and logged "request": true / 2.0."""
    engine, _, ids = busy_engine(model)
    assert ids[:2] == [1, 2]
    for bad in (True, 2.0):
        with pytest.raises(InvalidArgumentError):
            engine.abort(bad)
    assert engine.phase(1) == "prefill" and engine.phase(2) == "blocked"
    assert engine.events.of("notify") == [] and engine.events.of("abort") == []
    finish_all(engine, ids)


def test_an_unknown_integer_id_is_still_a_logged_refusal(model):
    engine, _, ids = busy_engine(model)
    with pytest.raises(UnknownRequestError, match="unknown request ID -1: never submitted"):
        engine.abort(-1)
    assert [(e["request"], e["accepted"]) for e in engine.events.of("notify")] == [(-1, False)]


BAD_TYPED_REQUESTS = [
    (None, None, InvalidRequestError, "prompt must be a string or a list of token ids, got NoneType"),
    (5, None, InvalidRequestError, "got int"),
    (b"hello", None, InvalidRequestError, "got bytes"),
    (bytearray(b"hi"), None, InvalidRequestError, "got bytearray"),
    ({1: 2, 3: 4}, None, InvalidRequestError, "got dict"),
    ({1, 2}, None, InvalidRequestError, "got set"),
    (iter([1, 2]), None, InvalidRequestError, "got list_iterator"),
    ([1, True], None, InvalidRequestError, "prompt token 1 is True"),
    ([1, 2.0], None, InvalidRequestError, "prompt token 1 is 2.0"),
    ([1, 10**5000], None, InvalidRequestError, "prompt token 1 is an integer of 16610 bits"),
    (range(10**12), None, InvalidRequestError, "prompt has 1000000000000 tokens, longer than the context"),
    ("\ud800", None, InvalidRequestError, "prompt cannot be tokenized"),
    ("x", {"stop": None}, InvalidSamplingError, "sampling.stop must be a list of strings, got None"),
    ("x", {"stop": 5}, InvalidSamplingError, "sampling.stop must be a list of strings, got 5"),
    ("x", {"stop": ["a", 3]}, InvalidSamplingError, "sampling.stop entries must be non-empty strings, got 3"),
    ("x", {"stop": ["s"] * 17}, InvalidSamplingError, "sampling.stop holds 17 strings, above its limit of 16"),
    ("x", {"temperature": 10**400}, InvalidSamplingError, "sampling.temperature is .*, above its limit of 100"),
    ("x", {"temperature": 5e-324}, InvalidSamplingError, "use 0 for greedy, or at least 1e-06"),
    ("x", {"temperature": float("inf")}, InvalidSamplingError, "sampling.temperature must be a finite number"),
    ("x", {"temperature": "0.5"}, InvalidSamplingError, "sampling.temperature must be a finite number"),
    ("x", {"top_p": float("nan")}, InvalidSamplingError, "sampling.top_p must be in"),
    ("x", {"seed": 2**64}, InvalidSamplingError, "sampling.seed must be None or an integer in"),
    ("x", {"seed": 1.0}, InvalidSamplingError, "sampling.seed"),
    ("x", {"max_tokens": 2**31}, InvalidSamplingError, "sampling.max_tokens is 2147483648, above its limit"),
    ("x", {"max_tokens": 2.0}, InvalidSamplingError, "sampling.max_tokens must be an integer"),
    ("x", {"ignore_eos": "yes"}, InvalidSamplingError, "sampling.ignore_eos must be true or false, got 'yes'"),
    ("x", {"ignore_eos": 1}, InvalidSamplingError, "sampling.ignore_eos"),
    ("x", {1: 2}, InvalidSamplingError, "sampling field names must be strings, got 1"),
    ("x", {1: 2, "a": 3}, InvalidSamplingError, "sampling field names must be strings"),
    ("x", [("max_tokens", 2)], InvalidSamplingError, "sampling must be SamplingParams, a dict or None, got list"),
    ("x", 0.5, InvalidSamplingError, "got float"),
]


@pytest.mark.parametrize("prompt, sampling, error, message", BAD_TYPED_REQUESTS)
def test_ill_typed_requests_raise_engine_errors_and_leave_state_unchanged(model, prompt, sampling, error, message):
    engine, _, ids = busy_engine(model)
    before = engine.snapshot()
    num_events = engine.events.num_emitted
    with pytest.raises(error, match=message):
        engine.add_request(prompt, sampling)
    assert engine.snapshot() == before and engine.events.num_emitted == num_events
    finish_all(engine, ids)


class StrictCodec(ByteCodec):
    def encode(self, text):
        return list(text.encode("utf-8"))  # a lone surrogate raises UnicodeEncodeError


def test_sampling_params_check_types_themselves():
    for kwargs, message in [({"stop": None}, "sampling.stop"), ({"ignore_eos": "yes"}, "sampling.ignore_eos"),
                            ({"temperature": 10**400}, "sampling.temperature"), ({"stop": "abc"}, "the string 'abc'"),
                            ({"top_p": True}, "sampling.top_p"), ({"max_tokens": None}, "sampling.max_tokens")]:
        with pytest.raises(InvalidSamplingError, match=message):
            SamplingParams(**kwargs)
    assert SamplingParams(stop=["a"]).stop == ("a",) and SamplingParams(temperature=2, top_p=1).temperature == 2


def test_run_generate_and_stream_check_their_arguments(model):
    engine, _, ids = busy_engine(model)
    before = engine.snapshot()
    for bad in (1.5, -1, True, "3", [2]):
        with pytest.raises(InvalidArgumentError, match="run: max_steps must be None or an integer >= 0"):
            engine.run(bad)
    for bad, message in ((None, "got NoneType"), ("abc", "got str"), (b"ab", "got bytes"), (5, "got int"),
                         ({"a": 1}, "got dict")):
        with pytest.raises(InvalidRequestError, match=f"generate: prompts must be a list of prompts, {message}"):
            engine.generate(bad)
    with pytest.raises(InvalidRequestError, match="prompt must be a string or a list of token ids, got NoneType"):
        engine.generate(["fine", None])
    with pytest.raises(UnknownRequestError):
        engine.stream(999)  # at the call, not at the first next()
    assert engine.snapshot() == before
    assert engine.run(0) == 0
    finish_all(engine, ids)


def test_a_stall_is_a_no_progress_error_after_the_work_it_did(model):
    engine, _, ids = busy_engine(model)
    with pytest.raises(NoProgressError, match=r"no progress possible: request\(s\) \[1\] are held"):
        engine.run()
    engine.check_invariants()
    assert engine.phase(ids[2]) == "finished"  # the steps before the stall stand
    finish_all(engine, ids)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"config": {"num_pages": 16}}, InvalidConfigError, "config must be an EngineConfig or None, got dict"),
    ({"eos_token_ids": "abc"}, InvalidArgumentError, "eos_token_ids must be a list of token ids"),
    ({"eos_token_ids": [300]}, InvalidArgumentError, r"eos_token_ids holds 300, not a token id in \[0, 256\)"),
    ({"eos_token_ids": [True]}, InvalidArgumentError, "eos_token_ids holds True"),
    ({"eos_token_ids": None}, InvalidArgumentError, "eos_token_ids must be a list"),
    ({"tokenizer": object()}, InvalidArgumentError, "tokenizer must be None or have encode and decode"),
    ({"event_log_path": 5}, InvalidArgumentError, "event_log_path must be None or a non-empty path, got 5"),
    ({"event_log_path": ""}, InvalidArgumentError, "event_log_path must be None or a non-empty path"),
    ({"event_history": -1}, InvalidArgumentError, "event_history must be None or an integer in"),
    ({"event_history": 10**30}, InvalidArgumentError, "event_history must be None or an integer in"),
    ({"event_history": 2.0}, InvalidArgumentError, "event_history"),
    ({"model_name": 3}, InvalidArgumentError, "model_name must be a string"),
])
def test_the_constructor_checks_its_arguments(model, kwargs, error, message):
    runner = ModelRunner(model, num_pages=16)
    with pytest.raises(error, match=message):
        Engine(runner, **{"config": EngineConfig(num_pages=16), **kwargs})


def test_tiny_checks_its_seed_and_log_options():
    for bad in (-1, 2**64, 1.0, True):
        with pytest.raises(InvalidArgumentError, match="seed must be an integer in"):
            Engine.tiny(EngineConfig(num_pages=4), seed=bad)
    with pytest.raises(InvalidConfigError, match="config must be an EngineConfig"):
        Engine.tiny({"num_pages": 4})
    with pytest.raises(InvalidArgumentError, match="event_history"):
        Engine.tiny(EngineConfig(num_pages=4), event_history=-2)


def test_an_event_log_that_cannot_be_opened_is_an_engine_error_and_an_os_error(tmp_path):
    with pytest.raises(EventLogError, match="cannot open the event log .*absent") as raised:
        Engine.tiny(EngineConfig(num_pages=4), event_log_path=str(tmp_path / "absent" / "run.jsonl"))
    assert isinstance(raised.value, OSError) and isinstance(raised.value, EngineError)
