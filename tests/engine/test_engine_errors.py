"""Bad input gets a clear error naming the problem; the engine's state and other requests are untouched."""

from dataclasses import replace

import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import (InvalidConfigError, InvalidRequestError, InvalidSamplingError,
                                     UnknownRequestError)
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
