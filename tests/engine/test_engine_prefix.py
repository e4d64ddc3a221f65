"""Coordination "prefix" on the tiny real model: a leader whose prompt shares pages with an open flight
waits via that flight (blocked, holding nothing), is released with pins on exactly the shared pages,
computes only its own tail, and answers token for token as an uncached engine; the choice of flight,
min_shared_pages, exact followers of a via-waiter, expiry, aborts and promotion; pool and refcount
invariants after every step, nothing leaked at the end, unknown terminations rejected with nothing changed.
"""

from dataclasses import replace

import numpy as np
import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.coordinator import Coordinator, num_shared
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import InvalidConfigError, UnknownRequestError
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.sampling import SamplingParams
from flightcheck.impl.tiny import TINY_ARGS, tiny_model

NUM_PAGES = 64
MAX_TOKENS = 4


def tokens(seed: int, n: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1, 256, size=n)]


BASE = tokens(1, 64)              # four full pages of a document
DOC = BASE[:32]                   # its first two pages
A = DOC + tokens(2, 20)           # 52 tokens: 3 shareable pages, the first 2 shared with B
B = DOC + tokens(3, 25)           # 57 tokens: 3 shareable pages
C = DOC + tokens(4, 30)           # 62 tokens: 3 shareable pages, 2 shared with A and with B


@pytest.fixture(scope="module")
def model():
    # Untied, so that outputs depend on the whole context (see test_engine_outputs.py).
    return tiny_model(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False))


def engine_for(model, **overrides) -> Engine:
    settings = {"num_pages": NUM_PAGES, "prefill_chunk_pages": 2, "coordination": "prefix"} | overrides
    return Engine(ModelRunner(model, num_pages=NUM_PAGES), config=EngineConfig(**settings))


def add(engine: Engine, prompt: list[int]) -> int:
    return engine.add_request(prompt, SamplingParams(max_tokens=MAX_TOKENS))


def req(engine: Engine, request_id: int):
    return engine.scheduler.requests[request_id]


def step(engine: Engine, n: int = 1) -> None:
    """``n`` steps, with the pool's partition and every reference checked after each."""
    for _ in range(n):
        engine.step()
        engine.check_invariants()


def run_checked(engine: Engine, until=None) -> None:
    """Steps (checking invariants) until ``until()`` holds, or until every request has terminated."""
    for _ in range(500):
        if (until() if until is not None else not engine.has_unfinished()):
            return
        step(engine)
    raise AssertionError("no progress in 500 steps")


def released(engine: Engine, flight: int) -> bool:
    return any(e["flight"] == flight for e in engine.events.of("release"))


def assert_nothing_leaked(engine: Engine) -> None:
    pool, coordinator = engine.scheduler.pool, engine.scheduler.coordinator
    assert all(p.ref_count == 0 for p in pool.pages)
    assert pool.num_free + len(pool.cached) == NUM_PAGES and pool.num_available == NUM_PAGES
    assert coordinator.flights == {} and coordinator.index == {} and coordinator.by_page_key == {}
    assert coordinator.released_request_ids == set()


def computed(engine: Engine, request_id: int) -> int:
    """Prompt tokens the engine computed for ``request_id`` (its prefill events)."""
    return sum(e["num_tokens"] for e in engine.events.of("prefill") if e["request"] == request_id)


def uncached_outputs(model, prompts: list[list[int]]) -> list[list[int]]:
    engine = engine_for(model, coordination="none", prefix_caching=False)
    return [r.output_token_ids for r in engine.generate(prompts, SamplingParams(max_tokens=MAX_TOKENS))]


def test_the_prompts_share_exactly_the_document():
    engine = Engine.tiny(EngineConfig(num_pages=NUM_PAGES))
    keys = [req(engine, add(engine, p)).page_keys for p in (A, B, C)]
    assert [len(k) for k in keys] == [3, 3, 3]
    assert num_shared(keys[0], keys[1]) == num_shared(keys[0], keys[2]) == num_shared(keys[1], keys[2]) == 2


# --- the main path -----------------------------------------------------------------------------
def test_a_prompt_sharing_the_document_waits_via_the_first_and_computes_only_its_tail(model):
    engine = engine_for(model)
    a, b = add(engine, A), add(engine, B)
    arrive = engine.events.of("arrive")[-1]
    assert {k: arrive[k] for k in ("request", "role", "flight", "via", "shared_pages")} == \
        {"request": b, "role": "leader", "flight": b, "via": a, "shared_pages": 2}
    assert engine.events.of("arrive")[0]["via"] is None and "shared_pages" not in engine.events.of("arrive")[0]
    assert (engine.phase(b), req(engine, b).block_table) == ("blocked", [])
    assert engine.scheduler.coordinator.flights[a].via_request_ids == [b]
    engine.check_invariants()
    run_checked(engine, lambda: released(engine, a))
    (release,) = engine.events.of("release")
    assert (release["flight"], release["leader"], release["followers"], release["waiters"], release["reason"]) == \
        (a, a, [], [b], "after-prefill")
    leader, waiter = req(engine, a), req(engine, b)
    assert len(engine.scheduler.held_pages(leader)) == 3          # all three of A's shareable pages ...
    assert waiter.block_table == leader.block_table[:2]           # ... of which B pins exactly the shared two
    assert (engine.phase(b), waiter.num_published) == ("waiting", 2)
    pool = engine.scheduler.pool
    assert [pool.pages[p].ref_count for p in leader.block_table[:3]] == [2, 2, 1]
    assert engine.scheduler.coordinator.flights[b].via_flight_id is None
    run_checked(engine)
    assert computed(engine, a) == len(A) and computed(engine, b) == len(B) - 32
    assert engine.counters["num_prefill_tokens"] == len(A) + len(B) - 32
    assert [e["hit_pages"] for e in engine.events.of("admit")] == [0, 2]
    assert (engine.counters["num_via_waits"], engine.counters["num_waiters_released"]) == (1, 1)
    assert [engine.result(i).output_token_ids for i in (a, b)] == uncached_outputs(model, [A, B])
    assert_nothing_leaked(engine)


def test_exact_single_flight_does_not_wait_for_a_shared_document(model):
    engine = engine_for(model, coordination="single-flight")
    a, b = add(engine, A), add(engine, B)
    assert engine.phase(b) == "waiting" and engine.events.of("arrive")[-1]["via"] is None
    run_checked(engine)
    assert engine.counters["num_prefill_tokens"] == len(A) + len(B)  # side by side: both compute the document
    assert engine.counters["num_via_waits"] == 0
    assert [engine.result(i).output_token_ids for i in (a, b)] == uncached_outputs(model, [A, B])
    assert_nothing_leaked(engine)


@pytest.mark.parametrize("min_shared_pages, waits", [(1, True), (2, True), (3, False), (8, False)])
def test_min_shared_pages_above_the_overlap_means_no_wait(model, min_shared_pages, waits):
    engine = engine_for(model, min_shared_pages=min_shared_pages)
    a, b = add(engine, A), add(engine, B)
    assert engine.events.of("arrive")[-1]["via"] == (a if waits else None)
    assert engine.phase(b) == ("blocked" if waits else "waiting")
    run_checked(engine)
    assert engine.counters["num_prefill_tokens"] == len(A) + len(B) - (32 if waits else 0)
    assert [engine.result(i).output_token_ids for i in (a, b)] == uncached_outputs(model, [A, B])
    assert_nothing_leaked(engine)


# --- which flight ------------------------------------------------------------------------------
def test_the_largest_overlap_wins_even_when_its_leader_is_itself_waiting(model):
    p1 = BASE[:32] + tokens(5, 20)        # shares 2 pages with z
    p2 = BASE[:48] + tokens(6, 20)        # shares 3 pages with z (and 2 with p1: it waits via p1)
    z = BASE + tokens(7, 10)              # 74 tokens: 4 shareable pages
    engine = engine_for(model)
    i1, i2, iz = add(engine, p1), add(engine, p2), add(engine, z)
    vias = [(e["via"], e.get("shared_pages")) for e in engine.events.of("arrive")]
    assert vias == [(None, None), (i1, 2), (i2, 3)]
    assert engine.phase(i2) == engine.phase(iz) == "blocked"
    run_checked(engine, lambda: released(engine, i2))
    assert [e["waiters"] for e in engine.events.of("release")] == [[i2], [iz]]
    assert req(engine, iz).block_table == req(engine, i2).block_table[:3]
    run_checked(engine)
    assert [computed(engine, i) for i in (i1, i2, iz)] == [len(p1), len(p2) - 32, len(z) - 48]
    assert [engine.result(i).output_token_ids for i in (i1, i2, iz)] == uncached_outputs(model, [p1, p2, z])
    assert_nothing_leaked(engine)


def test_a_tie_goes_to_the_flight_whose_current_leader_arrived_first(model):
    engine = engine_for(model, leader_loss="promote")
    a, b = add(engine, A), add(engine, B)
    c = add(engine, C)                    # ties between flights a (leader a) and b (leader b): a
    assert engine.events.of("arrive")[-1]["via"] == a
    engine.abort(c)
    heir = add(engine, A)                 # a follower of flight a, arrived after b's leader
    engine.abort(a)                       # flight a goes to it: its current leader arrived after b
    assert engine.events.of("promote")[-1]["leader"] == heir
    d = add(engine, C)                    # ties again: now b's leader (b) arrived before a's (heir)
    assert engine.events.of("arrive")[-1]["via"] == b
    coordinator = engine.scheduler.coordinator
    assert (coordinator.flights[a].via_request_ids, coordinator.flights[b].via_request_ids) == ([b], [d])
    engine.check_invariants()
    run_checked(engine)
    assert [engine.result(i).output_token_ids for i in (heir, b, d)] == uncached_outputs(model, [A, B, C])
    assert_nothing_leaked(engine)


# --- exact followers of a via-waiter -----------------------------------------------------------
def test_exact_followers_of_a_via_waiting_leader_wait_for_its_own_release(model):
    engine = engine_for(model)
    a, b, b2 = add(engine, A), add(engine, B), add(engine, B)
    assert [e["role"] for e in engine.events.of("arrive")] == ["leader", "leader", "follower"]
    assert engine.events.of("arrive")[-1]["flight"] == b
    run_checked(engine, lambda: released(engine, a))
    assert (engine.phase(b), engine.phase(b2), req(engine, b2).block_table) == ("waiting", "blocked", [])
    assert engine.events.of("release")[0]["followers"] == []  # b2 follows b, not a
    run_checked(engine, lambda: released(engine, b))
    release = engine.events.of("release")[-1]
    assert (release["flight"], release["followers"], release["waiters"]) == (b, [b2], [])
    assert req(engine, b2).block_table == req(engine, b).block_table[:3]  # everything b holds
    run_checked(engine)
    assert [computed(engine, i) for i in (a, b, b2)] == [len(A), len(B) - 32, len(B) - 48]
    assert [engine.result(i).output_token_ids for i in (a, b, b2)] == uncached_outputs(model, [A, B, B])
    assert_nothing_leaked(engine)


# --- expiry ------------------------------------------------------------------------------------
def test_the_wait_bound_expires_a_via_waiter_which_keeps_leading_its_own_flight(model):
    engine = engine_for(model, follower_wait_bound=2)
    a, b, b2 = add(engine, A), add(engine, B), add(engine, B)
    engine.hold(a)  # nothing of A is computed: the waiter's pins are empty
    step(engine, 2)
    assert engine.events.of("expire") == []
    step(engine)
    expire = next(e for e in engine.events.of("expire") if e["request"] == b)
    assert {k: expire[k] for k in ("flight", "leader", "reason", "via", "shared_pages")} == \
        {"flight": a, "leader": a, "reason": "wait-bound", "via": True, "shared_pages": 2}
    waiter, coordinator = req(engine, b), engine.scheduler.coordinator
    assert (waiter.role, waiter.flight_id, waiter.is_expired, waiter.block_table) == ("leader", b, True, [])
    assert coordinator.flights[a].via_request_ids == [] and coordinator.flights[b].via_flight_id is None
    assert b not in coordinator.released_request_ids and coordinator.flights[b].leader_request_id == b
    # b2 (a follower of b) expired by the same bound, as a follower: into the released set.
    follower_expire = next(e for e in engine.events.of("expire") if e["request"] == b2)
    assert follower_expire["via"] is False and "shared_pages" not in follower_expire
    assert b2 in coordinator.released_request_ids
    engine.resume(a)
    run_checked(engine)
    assert engine.events.of("release")[0]["waiters"] == []
    assert computed(engine, b) == len(B) and engine.counters["num_expiries"] == 2
    assert [engine.result(i).output_token_ids for i in (a, b, b2)] == uncached_outputs(model, [A, B, B])
    assert_nothing_leaked(engine)


@pytest.mark.parametrize("release, num_steps, num_pins", [
    ("after-prefill", 1, 1),   # A has published its first page: min(held 1, shared 2)
    ("on-completion", 4, 2),   # A holds its three shareable pages, unreleased: min(held 3, shared 2)
])
def test_a_client_expiry_of_a_via_waiter_pins_only_what_the_leader_holds_of_the_shared_part(
        model, release, num_steps, num_pins):
    engine = engine_for(model, prefill_chunk_pages=1, release=release)
    a, b = add(engine, A), add(engine, B)
    step(engine, num_steps)
    waiter, leader = req(engine, b), req(engine, a)
    assert engine.phase(b) == "blocked" and len(engine.scheduler.held_pages(leader)) == (1 if num_pins == 1 else 3)
    engine.expire(b)
    assert waiter.block_table == leader.block_table[:num_pins] and waiter.num_published == num_pins
    assert engine.events.of("expire")[-1]["reason"] == "client"
    engine.check_invariants()
    run_checked(engine)
    assert engine.result(b).recovered_tokens == 16 * num_pins and computed(engine, b) == len(B) - 16 * num_pins
    assert [engine.result(i).output_token_ids for i in (a, b)] == uncached_outputs(model, [A, B])
    assert_nothing_leaked(engine)


# --- aborts and promotion ----------------------------------------------------------------------
def test_an_aborted_via_waiter_leaves_the_list_and_its_flight_is_released(model):
    engine = engine_for(model)
    a, b, b2 = add(engine, A), add(engine, B), add(engine, B)
    engine.abort(b)
    abort, release = engine.events.events[-2:]
    assert (abort["action"], abort["request"], abort["phase"]) == ("abort", b, "blocked")
    assert (release["action"], release["flight"], release["followers"], release["waiters"], release["reason"]) == \
        ("release", b, [b2], [], "leader-aborted")
    assert engine.scheduler.coordinator.flights[a].via_request_ids == []
    assert (engine.phase(b2), req(engine, b2).block_table) == ("waiting", [])  # b held nothing
    engine.check_invariants()
    run_checked(engine)
    assert engine.events.of("release")[-1]["waiters"] == [] and computed(engine, b2) == len(B)
    assert [engine.result(i).output_token_ids for i in (a, b2)] == uncached_outputs(model, [A, B])
    assert_nothing_leaked(engine)


def test_a_promoted_follower_inherits_its_lost_leaders_wait(model):
    engine = engine_for(model, leader_loss="promote")
    a, b, b2 = add(engine, A), add(engine, B), add(engine, B)
    engine.abort(b)
    promote = engine.events.events[-1]
    assert {k: promote[k] for k in ("action", "flight", "leader", "previous", "followers", "via", "shared_pages")} == \
        {"action": "promote", "flight": b, "leader": b2, "previous": b, "followers": [], "via": a, "shared_pages": 2}
    heir, coordinator = req(engine, b2), engine.scheduler.coordinator
    assert (heir.phase.value, heir.role, heir.block_table) == ("blocked", "leader", [])
    assert coordinator.flights[a].via_request_ids == [b2] and coordinator.flights[b].via_flight_id == a
    engine.check_invariants()
    run_checked(engine, lambda: released(engine, a))
    assert engine.events.of("release")[0]["waiters"] == [b2]
    assert heir.block_table == req(engine, a).block_table[:2]
    run_checked(engine)
    assert computed(engine, b2) == len(B) - 32 and engine.counters["num_promotions"] == 1
    assert [engine.result(i).output_token_ids for i in (a, b2)] == uncached_outputs(model, [A, B])
    assert_nothing_leaked(engine)


@pytest.mark.parametrize("leader_loss", ["release-all", "promote"])
def test_a_lost_leader_with_via_waiters(model, leader_loss):
    engine = engine_for(model, prefill_chunk_pages=1, leader_loss=leader_loss)
    a, a2, b = add(engine, A), add(engine, A), add(engine, B)
    step(engine)  # A computes and publishes its first page, then goes away
    first_page = req(engine, a).block_table[:1]
    engine.abort(a)
    engine.check_invariants()
    coordinator = engine.scheduler.coordinator
    if leader_loss == "release-all":
        release = engine.events.events[-1]
        assert (release["action"], release["followers"], release["waiters"]) == ("release", [a2], [b])
        assert req(engine, a2).block_table == req(engine, b).block_table == first_page  # min(held 1, shared 2)
        assert engine.phase(b) == "waiting" and coordinator.flights[b].via_flight_id is None
    else:
        promote = engine.events.events[-1]
        assert (promote["action"], promote["leader"], promote["via"]) == ("promote", a2, None)
        assert "shared_pages" not in promote
        assert req(engine, a2).block_table == first_page and engine.phase(a2) == "waiting"
        assert engine.phase(b) == "blocked" and coordinator.flights[a].via_request_ids == [b]  # still attached
    run_checked(engine)
    expected = len(B) - 16 if leader_loss == "release-all" else len(B) - 32
    assert computed(engine, b) == expected
    assert [engine.result(i).output_token_ids for i in (a2, b)] == uncached_outputs(model, [A, B])
    assert_nothing_leaked(engine)


def test_a_lost_leader_with_nobody_to_promote_hands_its_waiters_on(model):
    # Three questions over one document: B and C wait via A's flight (C's tie between A and B goes to A,
    # which arrived first). A is cancelled before computing anything and has no follower to promote: B
    # (the earliest of the two sharing the most with A) is the heir and goes to admission, C waits via B
    # and computes only its tail. Freeing both (the spec's variant waiters-all-freed) would have both
    # compute the document.
    engine = engine_for(model, leader_loss="promote")
    a, b, c = add(engine, A), add(engine, B), add(engine, C)
    coordinator = engine.scheduler.coordinator
    assert coordinator.flights[a].via_request_ids == [b, c]
    engine.abort(a)
    engine.check_invariants()
    release = engine.events.events[-1]
    assert (release["action"], release["flight"], release["followers"], release["waiters"]) == ("release", a, [], [b])
    assert engine.phase(b) == "waiting" and engine.phase(c) == "blocked"
    assert coordinator.flights[b].via_request_ids == [c] and coordinator.flights[c].via_flight_id == b
    assert coordinator.flights[b].via_flight_id is None and a not in coordinator.flights
    run_checked(engine)
    assert computed(engine, b) == len(B) and computed(engine, c) == len(C) - 32
    assert engine.counters["num_waiters_released"] == 2
    assert [engine.result(i).output_token_ids for i in (b, c)] == uncached_outputs(model, [B, C])
    assert_nothing_leaked(engine)


def test_under_release_all_a_lost_leaders_waiters_all_go_and_each_computes_the_document(model):
    engine = engine_for(model, leader_loss="release-all")
    a, b, c = add(engine, A), add(engine, B), add(engine, C)
    engine.abort(a)
    assert engine.events.events[-1]["waiters"] == [b, c]
    run_checked(engine)
    assert computed(engine, b) == len(B) and computed(engine, c) == len(C)  # the duplicate release-all excuses
    assert_nothing_leaked(engine)


def test_the_heir_of_a_lost_waiting_leader_inherits_its_wait(model):
    # B waits via A; E shares three pages with B and two with A, so it waits via B. B is cancelled with no
    # follower: E, its only waiter, inherits B's wait via A (the release frees nobody), and when A's flight
    # is released E pins the document and computes the rest.
    E = B[:48] + tokens(5, 10)
    engine = engine_for(model, leader_loss="promote")
    a, b, e = add(engine, A), add(engine, B), add(engine, E)
    coordinator = engine.scheduler.coordinator
    assert coordinator.flights[b].via_request_ids == [e] and coordinator.flights[a].via_request_ids == [b]
    engine.abort(b)
    engine.check_invariants()
    release = engine.events.events[-1]
    assert (release["action"], release["flight"], release["waiters"]) == ("release", b, [])
    assert engine.phase(e) == "blocked" and coordinator.flights[e].via_flight_id == a
    assert coordinator.flights[a].via_request_ids == [e] and b not in coordinator.flights
    run_checked(engine, lambda: released(engine, a))
    assert engine.events.of("release")[-1]["waiters"] == [e]
    run_checked(engine)
    assert computed(engine, e) == len(E) - 32
    assert [engine.result(i).output_token_ids for i in (a, e)] == uncached_outputs(model, [A, E])
    assert_nothing_leaked(engine)


# --- bad input ---------------------------------------------------------------------------------
def test_unknown_and_repeated_terminations_are_rejected_with_nothing_changed(model):
    engine = engine_for(model, leader_loss="promote")
    a, b, b2 = add(engine, A), add(engine, B), add(engine, B)
    engine.abort(b)       # b2 inherits the wait via a
    step(engine)
    before = engine.snapshot()
    for bad in (b, 999):
        with pytest.raises(UnknownRequestError, match=f"unknown request ID {bad}"):
            engine.notify_termination(bad)
        with pytest.raises(UnknownRequestError):
            engine.abort(bad)
        assert engine.snapshot() == before
    assert [e["accepted"] for e in engine.events.of("notify")] == [False] * 4
    run_checked(engine)
    assert_nothing_leaked(engine)


@pytest.mark.parametrize("overrides, message", [
    ({"coordination": "prefix", "prefix_caching": False}, "'prefix' needs prefix_caching=True"),
    ({"min_shared_pages": 0}, "min_shared_pages must be an integer >= 1, got 0"),
    ({"min_shared_pages": True}, "min_shared_pages must be an integer >= 1, got True"),
    ({"min_shared_pages": "2"}, "min_shared_pages must be an integer >= 1, got '2'"),
    ({"coordination": "radix"}, "coordination must be one of none, single-flight, prefix"),
])
def test_bad_prefix_configuration_is_rejected_by_name(overrides, message):
    with pytest.raises(InvalidConfigError, match=message):
        EngineConfig(**overrides)


# --- the coordinator alone ---------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, -1, True, "2"])
def test_a_coordinator_built_by_hand_refuses_a_bad_min_shared_pages(value):
    with pytest.raises(ValueError, match=f"min_shared_pages must be an integer >= 1, got {value!r}"):
        Coordinator("prefix", min_shared_pages=value)
    with pytest.raises(ValueError, match="coordination must be one of"):
        Coordinator("radix")


def test_the_page_key_index_follows_the_open_flights():
    c = Coordinator("prefix", min_shared_pages=1)
    assert c.arrive(0, (1,), ("k0", "k1")).via_flight_id is None
    d = c.arrive(1, (2,), ("k0", "x1", "x2"))
    assert (d.role, d.flight_id, d.via_flight_id, d.shared_pages) == ("leader", 1, 0, 1)
    assert c.by_page_key == {"k0": {0, 1}, "k1": {0}, "x1": {1}, "x2": {1}}
    assert c.release(0) == [] and c.flights[1].via_flight_id is None
    assert c.by_page_key == {"k0": {1}, "x1": {1}, "x2": {1}}
    assert c.arrive(2, (3,), ("k0", "k1")).via_flight_id == 1   # flight 0 is gone; 1 still shares k0
    assert c.arrive(3, (4,), ("z0",)).via_flight_id is None     # nothing shares its first page
    assert Coordinator("single-flight").arrive(0, (1,), ("k0",)).via_flight_id is None
    with pytest.raises(ValueError, match="min_shared_pages must be an integer >= 1"):
        Coordinator("prefix", min_shared_pages=0)
