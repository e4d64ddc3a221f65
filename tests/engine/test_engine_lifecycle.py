"""Aborts, leader failure and the follower wait bound, read off the event log of the tiny real model."""

from dataclasses import replace

import numpy as np
import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import EngineError
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.sampling import SamplingParams
from flightcheck.impl.tiny import TINY_ARGS, tiny_model

DOC = [int(t) for t in np.random.default_rng(5).integers(0, 256, size=100)]  # 6 full pages, H = 6


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False))


def engine_for(model, **overrides):
    settings = {"num_pages": 64, "prefill_chunk_pages": 2} | overrides
    return Engine(ModelRunner(model, num_pages=64), config=EngineConfig(**settings))


def burst(engine, n=3, max_tokens=4):
    return [engine.add_request(DOC, SamplingParams(max_tokens=max_tokens)) for _ in range(n)]


@pytest.mark.parametrize("publication, steps, expected_hits", [
    ("incremental", 2, 4),      # two 2-page chunks were published before the abort
    ("on-completion", 2, 0),    # nothing published: the followers compute everything
    ("incremental", 0, 0),      # aborted while still waiting for admission
])
def test_leader_abort_releases_its_followers_at_once(model, publication, steps, expected_hits):
    engine = engine_for(model, publication=publication, max_running=1 if steps == 0 else 8)
    if steps == 0:
        blocker = engine.add_request([1, 2, 3], SamplingParams(max_tokens=3))
        engine.step()
    ids = burst(engine)
    for _ in range(steps):
        engine.step()
    phase = engine.phase(ids[0])
    engine.abort(ids[0])
    log = engine.events
    abort, release = log.events[-2:]
    assert abort == {"seq": abort["seq"], "action": "abort", "request": ids[0], "phase": phase}
    assert (release["action"], release["reason"], release["followers"]) == ("release", "leader-aborted", ids[1:])
    assert [engine.phase(i) for i in ids[1:]] == ["waiting", "waiting"]
    engine.run()
    assert [engine.result(i).finish_reason for i in ids[1:]] == ["length", "length"]
    first_follower_admit = [e for e in log.of("admit") if e["request"] == ids[1]][0]
    assert first_follower_admit["hit_pages"] == expected_hits
    assert engine.scheduler.coordinator.flights == {}
    engine.check_invariants()
    if steps == 0:
        assert engine.result(blocker).finish_reason == "length"


def test_leader_abort_in_decode_after_early_release_needs_no_second_release(model):
    engine = engine_for(model, release="after-prefill")
    ids = burst(engine, max_tokens=10)
    while engine.phase(ids[0]) != "decode":
        engine.step()
    engine.abort(ids[0])
    assert [e["reason"] for e in engine.events.of("release")] == ["after-prefill"]
    engine.run()
    assert [engine.result(i).recovered_tokens for i in ids[1:]] == [96, 96]


def test_aborted_blocked_follower_is_not_released(model):
    engine = engine_for(model)
    ids = burst(engine, n=4)
    engine.abort(ids[2])
    engine.run()
    (release,) = engine.events.of("release")
    assert release["followers"] == [ids[1], ids[3]]
    assert engine.events.of("abort") == [{"seq": engine.events.of("abort")[0]["seq"], "action": "abort",
                                          "request": ids[2], "phase": "blocked"}]


def test_follower_wait_bound_expires_a_follower_that_waited_too_long(model):
    engine = engine_for(model, follower_wait_bound=2)
    ids = burst(engine, n=2)
    engine.hold(ids[0])
    for _ in range(3):
        engine.step()
    (expired,) = engine.events.of("expire")
    assert (expired["request"], expired["flight"], expired["leader"]) == (ids[1], ids[0], ids[0])
    assert engine.phase(ids[1]) in ("waiting", "prefill") and engine.scheduler.requests[ids[1]].is_expired
    engine.resume(ids[0])
    engine.run()
    (release,) = engine.events.of("release")
    assert (release["followers"], release["reason"]) == ([], "after-prefill")
    assert engine.result(ids[1]).recovered_tokens == 0  # it computed for itself
    engine.check_invariants()


def test_an_expiry_requested_by_the_client_pins_what_the_leader_published(model):
    engine = engine_for(model, prefill_chunk_pages=1)
    ids = burst(engine, n=2)
    engine.step()  # the leader computes and publishes its first page
    engine.expire(ids[1])
    follower = engine.scheduler.requests[ids[1]]
    assert (follower.phase.value, len(follower.block_table), follower.num_published) == ("waiting", 1, 1)
    with pytest.raises(EngineError, match="not a blocked follower"):
        engine.expire(ids[1])
    engine.run()
    assert engine.result(ids[1]).recovered_tokens == 16  # the pinned page
    engine.check_invariants()


def test_a_failing_forward_pass_fails_its_request_and_promotes_a_follower(model):
    engine = engine_for(model, prefill_chunk_pages=1, leader_loss="promote")
    ids = burst(engine, n=3)
    engine.step()
    engine.inject_fault(ids[0])
    engine.step()
    res = engine.result(ids[0])
    assert (res.finish_reason, res.error) == ("error", "its forward pass gave non-finite logits")
    (promote,) = engine.events.of("promote")
    assert (promote["leader"], promote["previous"], promote["followers"]) == (ids[1], ids[0], [ids[2]])
    engine.run()
    assert [engine.result(i).finish_reason for i in ids[1:]] == ["length", "length"]
    assert engine.counters["num_failures"] == 1 and engine.counters["num_promotions"] == 1
    engine.check_invariants()


def test_without_a_wait_bound_followers_wait_indefinitely(model):
    engine = engine_for(model)
    ids = burst(engine, n=2)
    engine.hold(ids[0])
    for _ in range(20):
        engine.step()
    assert engine.phase(ids[1]) == "blocked" and not engine.events.of("release")


def test_new_identical_request_after_release_opens_a_new_flight_and_hits(model):
    engine = engine_for(model, release="after-prefill")
    first = burst(engine, n=2, max_tokens=20)
    while engine.phase(first[0]) != "decode":
        engine.step()
    late = engine.add_request(DOC, SamplingParams(max_tokens=2))
    arrive = engine.events.of("arrive")[-1]
    assert (arrive["role"], arrive["flight"]) == ("leader", late)
    engine.run()
    assert engine.result(late).recovered_tokens == 96
    assert engine.counters["num_flights_opened"] == 2


def test_run_with_only_held_requests_raises_instead_of_spinning(model):
    engine = engine_for(model)
    ids = burst(engine, n=2)
    engine.hold(ids[0])
    with pytest.raises(EngineError, match=rf"request\(s\) \[{ids[0]}\] are held"):
        engine.run()
    engine.resume(ids[0])
    engine.run()
    assert [engine.result(i).finish_reason for i in ids] == ["length", "length"]


@pytest.mark.parametrize("length, recovered", [(1, 0), (16, 0), (17, 16), (32, 16), (33, 32), (532, 528)])
def test_a_hit_covers_at_most_length_minus_one_tokens(model, length, recovered):
    engine = engine_for(model)
    prompt = DOC * 6
    results = engine.generate([prompt[:length]] * 2, SamplingParams(max_tokens=2))
    assert [r.recovered_tokens for r in results] == [0, recovered]
    # The follower computes the rest: at least one token, so it has logits for its first output.
    follower_prefill = [e for e in engine.events.of("prefill") if e["request"] == results[1].request_id]
    assert sum(e["num_tokens"] for e in follower_prefill) == length - recovered
