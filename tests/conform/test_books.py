"""The engine's books beyond the spec's slots: the K/V each computed position holds, why a request
finished, and the counters users read. Each test breaks one thing in a real tiny-model run and
asserts the monitor names it."""

import pytest

from flightcheck.checks.conform.books import finish_problems, kv_problems
from flightcheck.checks.conform.diagnosis import ConformanceError
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.impl.engine import Engine, EngineConfig
from flightcheck.impl.sampling import SamplingParams

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6] * 5  # 40 tokens: 2 shareable pages and a tail
CONFIG = EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1)


def started(max_tokens=4):
    engine = Engine.tiny(CONFIG)
    mon = Monitor(engine)
    ids = [engine.add_request(PROMPT, SamplingParams(max_tokens=max_tokens)) for _ in range(2)]
    return engine, mon, ids


def step_until(engine, mon, done):
    while not done():
        engine.step()
        mon.check()


def test_a_clean_run_keeps_every_book():
    engine, mon, ids = started()
    engine.run()
    mon.check()
    assert mon.failure is None
    assert all(engine.result(i).finish_reason == "length" for i in ids)


def test_a_computed_position_holding_other_kv_is_named():
    engine, mon, ids = started()
    step_until(engine, mon, lambda: engine.scheduler.requests[ids[1]].phase.value == "decode")
    follower = engine.scheduler.requests[ids[1]]
    page = follower.block_table[1]  # a page it took from its leader through the cache
    assert kv_problems(engine.scheduler, mon.witness) == []
    mon.witness.tags[page][3] = 0  # the runner overwrote slot 3 of a page two requests read
    assert kv_problems(engine.scheduler, mon.witness) == [
        f"{ids[0]}'s position 19 in page {page} (index 1) does not hold the K/V of its own tokens",
        f"{ids[1]}'s position 19 in page {page} (index 1) does not hold the K/V of its own tokens"]
    with pytest.raises(ConformanceError) as caught:
        mon.check()
    assert "visible_after_compute" in caught.value.diagnosis.properties


def test_a_wrong_finish_reason_is_named(monkeypatch):
    engine, mon, ids = started()
    sched = engine.scheduler
    sched.eos_token_ids = frozenset(range(1 << 16))  # every token is an EOS: the first output ends each request
    monkeypatch.setattr(sched, "can_finish", lambda r: "length" if r.output_token_ids else None)
    with pytest.raises(ConformanceError):
        engine.run()
    assert mon.failure.reasons == ["finish reason: engine length, its outputs say eos"]


def test_a_request_that_runs_past_its_end_is_named(monkeypatch):
    engine, mon, ids = started(max_tokens=2)
    sched = engine.scheduler
    sched.eos_token_ids = frozenset(range(1 << 16))
    real = type(sched).can_finish
    # Ignores the EOS of the first output: finishes only at max_tokens.
    monkeypatch.setattr(sched, "can_finish", lambda r: "length" if len(r.output_token_ids) >= 2 else
                        (None if r.phase.value == "decode" else real(sched, r)))
    with pytest.raises(ConformanceError):
        engine.run()
    assert mon.failure.reasons == [f"finish: r{ids[0]} should have finished at output 1 (eos), finished after 2"]


def test_finish_problems_reads_the_outputs_not_the_engine():
    engine, mon, ids = started(max_tokens=3)
    engine.run()
    assert finish_problems(engine, ids[0], {"reason": "length"}) == []
    assert finish_problems(engine, ids[0], {"reason": "stop"}) == ["finish reason: engine stop, its outputs say length"]
    assert finish_problems(engine, 99, {"reason": "length"}) == ["finish: the engine no longer knows request 99"]


def test_a_counter_off_by_one_is_named():
    engine, mon, ids = started()
    engine.run()
    engine.scheduler.counters.num_hit_pages += 1
    with pytest.raises(ConformanceError) as caught:
        mon.check()
    assert caught.value.diagnosis.summary == "the engine's counters are wrong"
    assert caught.value.diagnosis.reasons == ["num_hit_pages: the engine counts 3, its events 2"]
