"""The engine on the tiny real MLX model: greedy outputs do not depend on caching, coordination,
release point or publication policy; followers recover the leader's shareable pages; the event log of
a burst has the shape the spec expects."""

import itertools
from dataclasses import replace

import numpy as np
import pytest

from flightcheck.impl.blas import mx
from flightcheck.impl.engine import Engine, EngineConfig
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.sampling import SamplingParams
from flightcheck.impl.tiny import TINY_ARGS, tiny_model

NUM_PAGES = 192


@pytest.fixture(scope="module")
def model():
    # Why untied: with tied embeddings the random tiny model echoes its last input token, so its output
    # would hardly depend on the cached prefix; an untied head makes outputs depend on the whole context.
    return tiny_model(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False))


def make_engine(model, **overrides):
    config = EngineConfig(num_pages=NUM_PAGES, **overrides)
    return Engine(ModelRunner(model, num_pages=NUM_PAGES), config=config)


def prompt(seed, length):
    return [int(t) for t in np.random.default_rng(seed).integers(1, 256, size=length)]


def reference_greedy(model, token_ids, max_tokens):
    """Greedy decoding on the model's plain contiguous cache: the trusted reference."""
    cache = model.make_cache()
    logits = model(mx.array([token_ids]), cache)[0, -1]
    out = [int(mx.argmax(logits).item())]
    while len(out) < max_tokens:
        logits = model(mx.array([[out[-1]]]), cache)[0, -1]
        out.append(int(mx.argmax(logits).item()))
    return out


DOC = prompt(1, 70)
WORKLOAD = (
    [DOC] * 4                                  # identical burst (a flight under single-flight)
    + [DOC[:40] + prompt(2, 9), DOC[:33]]      # partial overlaps: page hits, then their own tails
    + [prompt(3, 16), prompt(4, 17), prompt(5, 1)]  # page-boundary lengths, a one-token prompt
)
MAX_TOKENS = 12


def run(model, **overrides):
    engine = make_engine(model, max_running=3, prefill_chunk_pages=2, **overrides)
    results = engine.generate(WORKLOAD, SamplingParams(max_tokens=MAX_TOKENS))
    engine.check_invariants()
    return [r.output_token_ids for r in results], engine


def test_uncached_engine_matches_the_contiguous_reference(model):
    outputs, _ = run(model, coordination="none", prefix_caching=False)
    for token_ids, out in zip(WORKLOAD, outputs):
        assert out == reference_greedy(model, token_ids, MAX_TOKENS)


CONFIGS = [dict(coordination="none", prefix_caching=True, publication=p) for p in ("incremental", "on-completion")] + [
    dict(coordination="single-flight", release=r, publication=p)
    for r, p in itertools.product(("after-prefill", "on-completion"), ("incremental", "on-completion"))
] + [dict(coordination="prefix", release=r, publication=p)
     for r, p in (("after-prefill", "incremental"), ("on-completion", "on-completion"))]


@pytest.mark.parametrize("overrides", CONFIGS, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_greedy_outputs_equal_across_caching_and_coordination(model, overrides):
    baseline, _ = run(model, coordination="none", prefix_caching=False)
    outputs, engine = run(model, **overrides)
    assert outputs == baseline
    assert all(len(o) == MAX_TOKENS for o in outputs)
    if overrides["coordination"] in ("single-flight", "prefix"):
        # 3 followers of DOC recover its (70-1)//16 = 4 shareable pages each, plus the overlaps' hits.
        admits = {e["request"]: e["hit_pages"] for e in engine.events.of("admit")}
        assert [admits[i] for i in (1, 2, 3)] == [4, 4, 4]
        assert engine.counters["num_flights_opened"] == 6  # the burst is one flight; the 5 others lead their own
    if overrides["coordination"] == "prefix":
        # DOC[:40] + 9 and DOC[:33] share DOC's first two pages: both wait via the burst's flight.
        arrivals = engine.events.of("arrive")
        assert [(e["via"], e.get("shared_pages")) for e in arrivals[4:6]] == [(0, 2), (0, 2)]
        assert engine.counters["num_via_waits"] == 2


@pytest.mark.parametrize("release", ["after-prefill", "on-completion"])
def test_followers_recover_528_of_532_tokens(model, release):
    engine = make_engine(model, release=release, publication="on-completion")
    doc = prompt(7, 532)
    results = engine.generate([doc] * 3, SamplingParams(max_tokens=4))
    assert [r.recovered_tokens for r in results] == [0, 528, 528]
    assert [r.role for r in results] == ["leader", "follower", "follower"]
    assert engine.counters["num_recovered_tokens"] == 1056
    assert engine.counters["num_prefill_tokens"] == 532 + 2 * 4
    # The leader fills 34 pages (positions 0..534); each follower only its own page 33.
    assert engine.counters["num_pages_allocated"] == 34 + 2 * 1


def test_burst_event_log_one_leader_seven_followers_one_release(model):
    engine = make_engine(model, release="after-prefill", publication="incremental", prefill_chunk_pages=8)
    doc = prompt(8, 300)  # 19 full pages; shareable H = (300-1)//16 = 18
    ids = [engine.add_request(doc, SamplingParams(max_tokens=3)) for _ in range(8)]
    engine.run()
    log = engine.events
    roles = [e["role"] for e in log.of("arrive")]
    assert roles == ["leader"] + ["follower"] * 7
    assert {e["flight"] for e in log.of("arrive")} == {ids[0]}
    (release,) = log.of("release")
    assert release == {"seq": release["seq"], "action": "release", "flight": ids[0], "leader": ids[0],
                       "followers": ids[1:], "waiters": [], "reason": "after-prefill"}
    admits = log.of("admit")
    assert [(e["request"], e["hit_pages"], e["recovered_tokens"]) for e in admits] == \
        [(ids[0], 0, 0)] + [(i, 18, 288) for i in ids[1:]]
    # Every follower admit comes after the release, which comes after the leader's last prefill and publish.
    leader_last_prefill = [e for e in log.of("prefill") if e["request"] == ids[0]][-1]
    published = [p["index"] for e in log.of("publish") if e["request"] == ids[0] for p in e["pages"]]
    assert leader_last_prefill["first_token"] and published == list(range(18))
    assert leader_last_prefill["seq"] < release["seq"] < min(e["seq"] for e in admits[1:])
    # The leader's prefill came in ceil(19 units / 8) = 3 chunks; each follower computed one 12-token unit.
    assert [e["num_units"] for e in log.of("prefill") if e["request"] == ids[0]] == [8, 8, 3]
    assert [(e["num_units"], e["num_tokens"]) for e in log.of("prefill") if e["request"] != ids[0]] == [(1, 12)] * 7
    assert engine.counters["num_followers_released"] == 7 and engine.counters["num_flights_opened"] == 1


def test_hold_keeps_the_leader_prefill_while_more_followers_arrive(model):
    engine = make_engine(model)
    doc = prompt(9, 100)
    leader = engine.add_request(doc, SamplingParams(max_tokens=2))
    engine.hold(leader)
    for _ in range(3):
        engine.step()
    assert engine.phase(leader) == "prefill" and not engine.events.of("prefill")
    followers = [engine.add_request(doc, SamplingParams(max_tokens=2)) for _ in range(7)]
    engine.step()
    assert [engine.phase(f) for f in followers] == ["blocked"] * 7
    engine.resume(leader)
    engine.run()
    assert [engine.result(f).recovered_tokens for f in followers] == [96] * 7


def test_release_on_completion_waits_for_the_leader_finish(model):
    engine = make_engine(model, release="on-completion", publication="incremental")
    doc = prompt(10, 50)
    ids = [engine.add_request(doc, SamplingParams(max_tokens=5)) for _ in range(3)]
    engine.run()
    log = engine.events
    (release,) = log.of("release")
    leader_finish = [e for e in log.of("finish") if e["request"] == ids[0]][0]
    assert release["reason"] == "on-completion" and release["seq"] == leader_finish["seq"] + 1
    assert release["followers"] == ids[1:]
    assert [e["hit_pages"] for e in log.of("admit")] == [0, 3, 3]


def test_followers_sample_their_own_outputs(model):
    engine = make_engine(model)
    doc = prompt(11, 40)
    settings = [SamplingParams(max_tokens=10, temperature=1.0, seed=s) for s in (1, 2, 1)]
    results = engine.generate([doc] * 3, settings)
    outs = [r.output_token_ids for r in results]
    assert outs[0] == outs[2] and outs[0] != outs[1]  # same seed, same draw; another seed, its own
    assert [r.recovered_tokens for r in results] == [0, 32, 32]


def test_follower_really_reads_the_shared_pages(model):
    """Corrupting a published page changes a follower's output: the equality tests above could fail."""
    doc = prompt(14, 64)
    baseline = make_engine(model, coordination="none", prefix_caching=False).generate([doc], SamplingParams(max_tokens=8))
    engine = make_engine(model, release="after-prefill")
    leader = engine.add_request(doc, SamplingParams(max_tokens=8))
    follower = engine.add_request(doc, SamplingParams(max_tokens=8))
    while engine.phase(follower) == "blocked":
        engine.step()
    shared = engine.scheduler.requests[leader].block_table[1]
    other = engine.scheduler.requests[leader].block_table[0]
    engine.runner.copy_page(other, shared)  # page 1 now holds page 0's K/V
    engine.run()
    assert engine.result(follower).recovered_tokens == 48
    assert engine.result(follower).output_token_ids != baseline[0].output_token_ids


def test_stream_yields_the_tokens_of_the_result(model):
    engine = make_engine(model)
    rid = engine.add_request(prompt(12, 20), SamplingParams(max_tokens=6))
    other = engine.add_request(prompt(13, 20), SamplingParams(max_tokens=9))
    streamed = list(engine.stream(rid))
    assert streamed == engine.result(rid).output_token_ids and len(streamed) == 6
    engine.run()
    assert len(engine.result(other).output_token_ids) == 9


def test_event_log_file_and_listener_see_every_event(model, tmp_path):
    import json

    path = tmp_path / "events.jsonl"
    engine = Engine(ModelRunner(model, num_pages=NUM_PAGES), config=EngineConfig(num_pages=NUM_PAGES),
                    event_log_path=str(path))
    seen = []
    engine.events.add_listener(seen.append)
    engine.generate([prompt(15, 40)] * 2, SamplingParams(max_tokens=3))
    engine.close()
    header, *lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert header["policy"]["release"] == "after-prefill" and "action" not in header
    assert lines == seen == engine.events.events
    assert [e["seq"] for e in lines] == list(range(len(lines)))
    # Step 1: the leader's whole prefill, publish, release. Step 2: the follower is admitted; the leader's
    # decode and the follower's one-unit prefill share a forward pass. Then decodes until max_tokens = 3.
    assert [e["action"] for e in lines] == ["arrive", "arrive", "admit", "prefill", "publish", "release",
                                            "admit", "decode", "prefill", "decode", "finish", "decode", "decode",
                                            "finish"]


def test_a_listener_error_stops_the_engine_call(model):
    """A runtime monitor raises on a violation; the error reaches the caller of step()."""
    engine = make_engine(model)

    def monitor(event):
        if event["action"] == "prefill":
            raise AssertionError("monitor: prefill refused")

    engine.events.add_listener(monitor)
    engine.add_request(prompt(16, 20), SamplingParams(max_tokens=2))
    with pytest.raises(AssertionError, match="monitor: prefill refused"):
        engine.step()
