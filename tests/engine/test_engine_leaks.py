"""No page leaks: thousands of random requests with aborts, under every coordination and publication
setting, on the tiny real model with a small pool (so that eviction is exercised); the pool's invariants
are checked after every step and, at the end, every page is free or cached with zero references."""

from dataclasses import replace

import numpy as np
import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.sampling import SamplingParams
from flightcheck.impl.tiny import TINY_ARGS, tiny_model

from switches import SLOW  # noqa: E402
NUM_REQUESTS = 18000 if SLOW else 2700   # split over the 9 settings below
NUM_PAGES = 32

SETTINGS = [
    dict(coordination="none", prefix_caching=False),
    dict(coordination="none", publication="incremental"),
    dict(coordination="none", publication="on-completion"),
    dict(coordination="single-flight", release="after-prefill", publication="incremental"),
    dict(coordination="single-flight", release="after-prefill", publication="on-completion"),
    dict(coordination="single-flight", release="on-completion", publication="incremental"),
    dict(coordination="single-flight", release="on-completion", publication="on-completion", follower_wait_bound=6),
    dict(coordination="prefix", release="after-prefill", publication="incremental", leader_loss="promote"),
    dict(coordination="prefix", release="on-completion", publication="on-completion", min_shared_pages=2,
         follower_wait_bound=6),
]


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0, args=replace(TINY_ARGS, num_hidden_layers=1))


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(SETTINGS)))
def test_random_requests_with_aborts_leak_no_pages(model, index):
    settings = SETTINGS[index]
    rng = np.random.default_rng(index)
    config = EngineConfig(num_pages=NUM_PAGES, max_running=4, prefill_chunk_pages=2, **settings)
    engine = Engine(ModelRunner(model, num_pages=NUM_PAGES), config=config)
    docs = [[int(t) for t in rng.integers(0, 256, size=70)] for _ in range(8)]
    exact = [d[:n] for d in docs for n in (1, 16, 17, 40, 70)]  # a few exact inputs, so flights form
    num_added = num_aborted = 0
    live: list[int] = []
    while num_added < NUM_REQUESTS // len(SETTINGS) or engine.has_unfinished():
        if num_added < NUM_REQUESTS // len(SETTINGS):
            for _ in range(rng.integers(0, 4)):
                if rng.random() < 0.6:
                    tokens = exact[rng.integers(len(exact))]
                else:
                    doc = docs[rng.integers(len(docs))]
                    tokens = doc[: rng.integers(1, 60)] + [int(t) for t in rng.integers(0, 256, size=rng.integers(0, 8))]
                live.append(engine.add_request(tokens, SamplingParams(max_tokens=int(rng.integers(1, 6)))))
                num_added += 1
        live = [i for i in live if engine.phase(i) not in ("finished", "aborted")]
        if live and rng.random() < 0.15:
            # Pick a phase first, then a request in it, so that short phases get aborts too.
            by_phase: dict[str, list[int]] = {}
            for i in live:
                by_phase.setdefault(engine.phase(i), []).append(i)
            group = list(by_phase.values())[rng.integers(len(by_phase))]
            victim = group[rng.integers(len(group))]
            engine.abort(victim)
            live.remove(victim)
            num_aborted += 1
        if rng.random() < 0.05:
            with pytest.raises(UnknownRequestError):
                engine.notify_termination(10**6)
        engine.step()
        engine.check_invariants()

    pool = engine.scheduler.pool
    assert all(p.ref_count == 0 for p in pool.pages)
    assert pool.num_free + len(pool.cached) == NUM_PAGES
    coordinator = engine.scheduler.coordinator
    assert coordinator.flights == {} and coordinator.index == {} and coordinator.released_request_ids == set()
    # Every request terminated exactly once, by finish or abort, in the log.
    terminal = [e["request"] for e in engine.events.events if e["action"] in ("finish", "abort")]
    assert sorted(terminal) == list(range(num_added)) and num_aborted == len(engine.events.of("abort"))
    phases = {e["phase"] for e in engine.events.of("abort")}
    assert {"waiting", "prefill", "decode"} <= phases  # aborts hit every phase that holds or awaits pages
    counters = engine.counters
    if settings.get("prefix_caching", True):
        assert counters["num_pages_evicted"] > 0 and counters["num_hit_pages"] > 0
    if settings["coordination"] != "none":
        assert counters["num_followers_released"] > 0 and "blocked" in phases
    if settings["coordination"] == "prefix":
        assert counters["num_via_waits"] > 0 and counters["num_waiters_released"] > 0


def test_a_terminated_request_never_publishes_its_computed_pages():
    # Found by the exhaustive engine check (checks/symbolic): between a prefill and its publication the
    # request is aborted; can_publish said yes and publish then indexed the pages the abort had freed.
    from flightcheck.impl.request import Phase

    engine = Engine.tiny(EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1))
    rid = engine.add_request([3, 1, 4, 1, 5, 9, 2, 6] * 5, SamplingParams(max_tokens=3))
    sched = engine.scheduler
    req = sched.admit(sched.can_admit())
    work = sched.plan_prefill(req, 1)
    sched.prefill(work, sched.forward([work])[0])
    assert sched.can_publish(req)  # one computed page waits for its publication
    engine.abort(rid)
    assert req.phase is Phase.ABORTED and not sched.can_publish(req)
    engine.check_invariants()
    assert sched.pool.num_free == 16 - sched.pool.num_evictable
