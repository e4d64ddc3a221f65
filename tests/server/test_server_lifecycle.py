"""The engine loop behind the server: every stream ends (even an aborted sole request's), shutdown
ends waiting and running requests with a clean error, the history of finished requests is bounded,
and a conformance failure found by the online monitor is reported instead of killing anything."""

import asyncio
import threading

import pytest

from flightcheck.impl.sampling import SamplingParams
from flightcheck.impl.server.loop import EngineLoop
from tests.server.conftest import PROMPT, client, make_server, metrics, raw, tiny_engine, wait_for


def test_an_aborted_sole_request_still_gets_its_end(model):
    """The bug of the stdlib server: output was delivered only after a step, and nothing steps once the
    only live request is aborted, so its stream waited for ever."""
    loop = EngineLoop(tiny_engine(model)).start()

    async def scenario():
        request_id, out = await loop.submit(PROMPT, SamplingParams(max_tokens=1900))
        first = await asyncio.wait_for(out.get(), 60)
        assert first.tokens
        loop.abort_soon(request_id)
        while True:
            item = await asyncio.wait_for(out.get(), 60)  # a generous bound, never reached when fixed
            if item.is_final:
                return item

    try:
        final = asyncio.run(scenario())
        assert final.result.finish_reason == "abort"
        assert loop.call(lambda e: e.has_unfinished()) is False
    finally:
        loop.close()


def test_shutdown_ends_running_and_waiting_requests_with_a_clean_error(model):
    from openai import APIError

    server = make_server(model, max_running=1)
    outcomes = {}

    def running():
        try:
            for _ in client(server).completions.create(model="tiny", prompt=PROMPT, max_tokens=1900, stream=True):
                pass
            outcomes["running"] = "completed"
        except APIError as error:
            outcomes["running"] = str(error)

    def waiting():
        try:
            client(server).completions.create(model="tiny", prompt=[7] * 20, max_tokens=5)
            outcomes["waiting"] = "completed"
        except APIError as error:
            outcomes["waiting"] = (getattr(error, "status_code", None), str(error))

    threads = [threading.Thread(target=running)]
    threads[0].start()
    wait_for(lambda: metrics(server)['flightcheck_live_requests{phase="decode"}'] == 1, "the first to decode")
    threads.append(threading.Thread(target=waiting))
    threads[1].start()
    wait_for(lambda: metrics(server)['flightcheck_live_requests{phase="waiting"}'] == 1, "the second to wait")
    closer = threading.Thread(target=server.close)
    closer.start()
    for t in threads + [closer]:
        t.join(120)
        assert not t.is_alive(), "shutdown must not hang"
    assert "shutting down" in outcomes["running"]
    assert outcomes["waiting"][0] == 503 and "shutting down" in outcomes["waiting"][1]
    assert not server.loop._thread.is_alive()


def test_finished_requests_are_forgotten_beyond_the_history(model):
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.runner import ModelRunner
    from flightcheck.impl.config import EngineConfig
    from flightcheck.impl.server import Server

    engine = Engine(ModelRunner(model, num_pages=64), config=EngineConfig(num_pages=64), event_history=50,
                    model_name="tiny")
    server = Server(engine, port=0, history=3).start()
    try:
        c = client(server)
        for k in range(10):
            c.completions.create(model="tiny", prompt=[k + 1] * 30, max_tokens=3)
        kept = server.loop.call(lambda e: sorted(e.scheduler.requests))
        assert kept == [7, 8, 9]
        # 8 events a request: arrive, admit, prefill, publish, release, 2 decodes, finish.
        assert server.loop.call(lambda e: (len(e.events.events), e.events.num_emitted)) == (50, 10 * 8)
        m = metrics(server)
        assert m['flightcheck_records_kept{kind="requests"}'] == 3 and m['flightcheck_records_kept{kind="events"}'] == 50
        assert m['flightcheck_requests_total{finish_reason="length"}'] == 10
        from flightcheck.impl.errors import UnknownRequestError

        with pytest.raises(UnknownRequestError):
            server.loop.call(lambda e: e.abort(2))
    finally:
        server.close()


def test_a_conformance_failure_is_logged_counted_and_fails_its_request(model, caplog):
    """A deliberately broken engine (publishes a page before computing it) under the online monitor:
    the request it concerns fails with a 500 naming the monitor, /metrics counts it, /health says
    degraded, and the server goes on serving."""
    from flightcheck.checks.cli.cmd_engine import attach_monitor
    from flightcheck.checks.conform.mutants import MUTANTS
    from flightcheck.impl.server import Server
    from openai import InternalServerError

    engine = tiny_engine(model, prefill_chunk_pages=1)
    attach_monitor(engine)
    server = Server(engine, port=0, history=None).start()
    try:
        with MUTANTS["publish-before-compute"].patched():
            with pytest.raises(InternalServerError) as info:
                client(server).completions.create(model="tiny", prompt=PROMPT, max_tokens=3)
        assert "departing from the spec" in info.value.body["message"]
        assert "publish" in info.value.body["message"]
        assert metrics(server)['flightcheck_engine_failures_total{kind="conformance"}'] == 1
        status, health = raw(server, "GET", "/health")
        assert status == 200 and health["status"] == "degraded" and "publish" in health["conformance_failure"]
        assert any("conformance failure" in r.getMessage() for r in caplog.records)
        again = client(server).completions.create(model="tiny", prompt=[9] * 20, max_tokens=2)
        assert len(again.choices[0].token_ids) == 2
    finally:
        server.close()


def test_a_call_that_timed_out_does_not_block_the_engine_thread(model):
    """``EngineLoop.call`` gives up after its timeout; the engine thread must still finish the command
    and go on (it once put the value twice on a queue of one and blocked on the second put for ever)."""
    import queue

    loop = EngineLoop(tiny_engine(model))  # not started: this test is the engine thread
    with pytest.raises(queue.Empty):
        loop.call(lambda engine: engine.has_unfinished(), timeout=0.01)  # nobody runs it in time
    drained = threading.Thread(target=loop.drain, daemon=True)
    drained.start()
    drained.join(10)
    assert not drained.is_alive(), "the engine thread blocked on the reply of a call nobody waits for"
    # And a call that is answered still returns its value.
    answer = threading.Thread(target=loop.drain, daemon=True)
    got = []
    asker = threading.Thread(target=lambda: got.append(loop.call(lambda engine: 41 + 1, timeout=10)), daemon=True)
    asker.start()
    while not loop.has_commands:
        pass
    answer.start()
    asker.join(10)
    answer.join(10)
    assert got == [42]


def test_health_and_metrics_count_an_arrival_before_its_first_forward_pass(model):
    """The snapshot /health and /metrics read is published after the engine thread drains its commands,
    not only after a step: a request that just arrived is counted during the long prefill that follows."""
    loop = EngineLoop(tiny_engine(model))  # not started: this test is the engine thread
    asker = threading.Thread(target=lambda: loop.call(
        lambda engine: engine.add_request(PROMPT, SamplingParams(max_tokens=4)), timeout=10), daemon=True)
    asker.start()
    while not loop.has_commands:
        pass
    loop.drain()
    asker.join(10)
    assert loop.snapshot.phases == {"waiting": 1} and loop.snapshot.counters  # no step has run yet
    loop.advance()
    assert "waiting" not in loop.snapshot.phases
