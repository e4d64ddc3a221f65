"""The OpenAI-compatible API with the official ``openai`` client, over the tiny model (token-id
prompts): completions and chat shapes, streaming and whole, usage with cached tokens, single-flight
visible in /metrics, and a client that disconnects mid-stream (its request aborted, its pages back)."""

import threading

import pytest

from flightcheck.impl.sampling import SamplingParams
from tests.server.conftest import PROMPT, client, metrics, page_gauges, raw, tiny_engine, wait_for


@pytest.fixture(scope="module")
def expected(model):
    reference = tiny_engine(model, coordination="none", prefix_caching=False, num_pages=64)
    return reference.generate([PROMPT], SamplingParams(max_tokens=10))[0].output_token_ids


def test_completion_whole_matches_the_engine_and_reports_usage(server, expected):
    reply = client(server).completions.create(model="tiny", prompt=PROMPT, max_tokens=10, temperature=0)
    choice = reply.choices[0]
    assert choice.token_ids == expected and choice.finish_reason == "length" and choice.text == ""
    assert reply.object == "text_completion" and reply.model == "tiny"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (100, 10, 110)
    assert reply.usage.prompt_tokens_details.cached_tokens == 0
    again = client(server).completions.create(model="tiny", prompt=[PROMPT], max_tokens=10, temperature=0)
    assert again.choices[0].token_ids == expected
    assert again.usage.prompt_tokens_details.cached_tokens == 96  # 6 shareable pages from the first run


def test_completion_stream_delivers_every_token_then_usage(server, expected):
    chunks = list(client(server).completions.create(model="tiny", prompt=PROMPT, max_tokens=10, temperature=0,
                                                    stream=True, stream_options={"include_usage": True}))
    tokens = [t for c in chunks if c.choices for t in c.choices[0].token_ids]
    assert tokens == expected
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 10
    assert len({c.id for c in chunks}) == 1


def test_chat_needs_a_tokenizer_and_says_so(server):
    from openai import BadRequestError

    with pytest.raises(BadRequestError) as info:
        client(server).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}])
    assert info.value.body["param"] == "messages" and "tokenizer" in info.value.body["message"]


def test_models_health_info(server):
    models = client(server).models.list()
    assert [m.id for m in models.data] == ["tiny"]
    status, health = raw(server, "GET", "/health")
    assert status == 200 and health["status"] == "ok" and health["pages"]["free"] == 256
    status, info = raw(server, "GET", "/info")
    assert status == 200 and info["config"]["coordination"] == "single-flight" and info["num_pages"] == 256


def test_concurrent_identical_requests_meet_in_one_flight(server, expected):
    replies = [None] * 4

    def one(k):
        replies[k] = client(server).completions.create(model="tiny", prompt=PROMPT, max_tokens=10, temperature=0)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(r.choices[0].token_ids == expected for r in replies)
    m = metrics(server)
    # However the four arrivals interleave, the first opens a flight and the others reuse its 6 pages:
    # as followers of that flight, or as hits after it finished.
    assert sorted(r.usage.prompt_tokens_details.cached_tokens for r in replies) == [0, 96, 96, 96]
    # what each request prefilled itself, so an outside probe can count duplicated work per request
    assert sorted(r.flightcheck["prompt_tokens_computed"] for r in replies) == [4, 4, 4, 100]
    assert m["flightcheck_engine_prefill_tokens_total"] == 100 + 3 * 4
    assert m["flightcheck_engine_recovered_tokens_total"] == 288
    assert m['flightcheck_requests_total{finish_reason="length"}'] == 4
    assert m["flightcheck_ttft_seconds_count"] == 4 and m["flightcheck_completion_seconds_count"] == 4


def test_identical_requests_held_at_the_barrier_are_one_leader_and_followers(model):
    """Deterministic single-flight: the first request is held before its prefill, so the other three
    arrive while it leads an open flight; /metrics shows 1 flight and 3 released followers."""
    from tests.server.conftest import make_server

    server = make_server(model)
    try:
        c = client(server)
        first = threading.Thread(target=lambda: c.completions.create(model="tiny", prompt=PROMPT, max_tokens=4))
        server.loop.call(lambda e: _hold_next(e))
        first.start()
        wait_for(lambda: metrics(server)['flightcheck_live_requests{phase="prefill"}'] == 1, "the leader admitted")
        others = [threading.Thread(target=lambda: c.completions.create(model="tiny", prompt=PROMPT, max_tokens=4))
                  for _ in range(3)]
        for t in others:
            t.start()
        wait_for(lambda: metrics(server)['flightcheck_live_requests{phase="blocked"}'] == 3, "three followers")
        server.loop.call(lambda e: e.resume(0))
        for t in [first, *others]:
            t.join(60)
        m = metrics(server)
        assert m["flightcheck_engine_flights_opened_total"] == 1
        assert m["flightcheck_engine_followers_released_total"] == 3
        assert m["flightcheck_engine_recovered_tokens_total"] == 3 * 96
    finally:
        server.close()


def _hold_next(engine):
    """Holds request 0 as soon as it arrives (the engine's test barrier)."""
    def on_event(event):
        if event["action"] == "arrive" and event["request"] == 0:
            engine.hold(0)
    engine.events.add_listener(on_event)


def test_disconnect_mid_stream_aborts_and_returns_the_pages(server):
    stream = client(server).completions.create(model="tiny", prompt=PROMPT, max_tokens=1900, stream=True)
    first = next(iter(stream))
    assert first.choices[0].token_ids  # streaming has begun
    assert page_gauges(server)["in_use"] > 0
    stream.close()
    # This is the only live request: its stream must still end (the loop delivers after the abort).
    wait_for(lambda: metrics(server).get('flightcheck_requests_total{finish_reason="abort"}') == 1, "the abort")
    wait_for(lambda: metrics(server).get('flightcheck_streams_closed_total{how="disconnect"}') == 1,
             "the handler to finish")
    pages = page_gauges(server)
    assert pages["in_use"] == 0 and pages["free"] + pages["cached"] == 256
    assert server.loop.call(lambda e: e.check_invariants()) is None
