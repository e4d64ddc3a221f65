"""The semantics of the workload opportunity model, pinned on small hand-made traces and the real ones."""

from __future__ import annotations

import json

import pytest

from flightcheck.checks.workload.opportunity import PHASES, ModelConfig, PreparedTrace, RunResult, prepare_trace, simulate
from flightcheck.checks.workload.trace import Trace, TraceRequest, load_trace, parse_trace_lines, shared_trace_path


def make_trace(*requests: tuple[float, list[int]], name: str = "t") -> Trace:
    lines = [json.dumps({"timestamp": t, "input_length": 512 * len(ids), "output_length": 1, "hash_ids": ids})
             for t, ids in requests]
    return parse_trace_lines(lines, name=name)


def run(trace: Trace, w: float, capacity: int = 100, **kwargs) -> RunResult:
    return simulate(prepare_trace(trace), ModelConfig(w_eff_ms=w, capacity_blocks=capacity, **kwargs), record_cohorts=True)


def cohorts_of(result: RunResult) -> list[tuple[int, float, int]]:
    return [(c.instance_id, c.anchor_ms, c.fan_in) for i in result.instances for c in i.cohorts]


@pytest.fixture(scope="module")
def conversation() -> PreparedTrace:
    return prepare_trace(load_trace(shared_trace_path("conversation")))


@pytest.fixture(scope="module")
def synthetic() -> PreparedTrace:
    return prepare_trace(load_trace(shared_trace_path("synthetic")))


# --- anchored cohorts, not a sliding window -------------------------------------------------------

def test_anchored_cohort_ends_at_completion_and_the_next_arrival_hits():
    result = run(make_trace((0, [7]), (9, [7]), (18, [7])), w=10)
    all_ = result.summary["all"]
    assert cohorts_of(result) == [(0, 0.0, 2)]   # 0 and 9 share the load anchored at 0
    assert (all_.num_hits, all_.num_cold_attempts, all_.num_removable_attempts) == (1, 2, 1)


def test_arrivals_0_9_18_with_eviction_are_two_cohorts_not_one_chained_window():
    # Block 5 loads at 1..11 and, with room for one block, evicts block 7 (cached at 10); 18 finds 7 cold.
    result = run(make_trace((0, [7]), (1, [5]), (9, [7]), (18, [7])), w=10, capacity=1)
    assert cohorts_of(result) == [(0, 0.0, 2), (0, 1.0, 1), (0, 18.0, 1)]
    assert result.summary["all"].num_removable_attempts == 1   # a sliding window would chain 0, 9, 18 (2)


def test_joins_are_measured_from_the_anchor_not_from_the_last_joiner():
    result = run(make_trace((0, [7]), (5, [7]), (9.5, [7]), (12, [7])), w=10, capacity=100)
    assert cohorts_of(result) == [(0, 0.0, 3)]
    assert result.summary["all"].num_hits == 1


# --- the completion boundary ------------------------------------------------------------------------

def test_arrival_exactly_at_completion_is_a_hit():
    at = run(make_trace((0, [7]), (10, [7])), w=10).summary["all"]
    assert (at.num_cohorts, at.num_hits, at.fan_in_max) == (1, 1, 1)


def test_arrival_just_before_completion_joins():
    before = run(make_trace((0, [7]), (9.999, [7])), w=10).summary["all"]
    assert (before.num_cohorts, before.num_hits, before.fan_in_max) == (1, 0, 2)


def test_zero_latency_loads_complete_before_a_simultaneous_arrival():
    result = run(make_trace((3, [7]), (3, [7])), w=0).summary["all"]
    assert (result.num_cohorts, result.num_hits, result.num_removable_attempts) == (1, 1, 0)


# --- ties: simultaneous, in stable (file) order ---------------------------------------------------

def test_simultaneous_arrivals_all_see_the_block_cold():
    result = run(make_trace((4, [7]), (4, [7]), (4, [7])), w=1)
    assert cohorts_of(result) == [(0, 4.0, 3)]


def test_ties_keep_file_order_which_decides_lru_victims():
    # Room for one block, instant loads. At t=0 the first-listed request's block is cached first and the
    # second one's evicts it, so the request at t=1 for the first-listed block misses.
    a_then_b = run(make_trace((0, [1]), (0, [2]), (1, [1])), w=0, capacity=1).summary["all"]
    b_then_a = run(make_trace((0, [2]), (0, [1]), (1, [1])), w=0, capacity=1).summary["all"]
    assert (a_then_b.num_hits, a_then_b.num_cohorts) == (0, 3)
    assert (b_then_a.num_hits, b_then_a.num_cohorts) == (1, 2)


def test_out_of_order_lines_are_sorted_stably_by_time():
    shuffled = make_trace((1, [1]), (0, [1]), (0, [2]))
    prepared = prepare_trace(shuffled)
    assert prepared.times == (0.0, 0.0, 1.0)
    assert [len(b) for b in prepared.blocks] == [1, 1, 1]
    assert prepared.first_hash == (1, 2, 1)  # the two t=0 lines keep their file order


# --- instances are isolated -----------------------------------------------------------------------

def test_round_robin_instances_do_not_share_cohorts_or_caches():
    trace = make_trace((0, [7]), (1, [7]), (20, [7]), (21, [7]))
    one = run(trace, w=10, num_instances=1)
    two = run(trace, w=10, num_instances=2, routing="rr")
    assert cohorts_of(one) == [(0, 0.0, 2)] and one.summary["all"].num_hits == 2
    # rr: t=0 and t=20 go to instance 0, t=1 and t=21 to instance 1; each instance loads the block once.
    assert cohorts_of(two) == [(0, 0.0, 1), (1, 1.0, 1)]
    assert [i.phases["all"].num_hits for i in two.instances] == [1, 1]


def test_affinity_routes_by_first_hash_and_reports_the_imbalance():
    trace = make_trace((0, [4, 1]), (0, [4, 2]), (0, [5, 3]), (0, [6]))
    result = run(trace, w=10, num_instances=2, routing="affinity")
    assert [i.phases["all"].num_requests for i in result.instances] == [3, 1]   # 4 and 6 -> 0, 5 -> 1
    assert [result.request_share(i) for i in (0, 1)] == [0.75, 0.25]
    assert cohorts_of(result)[0] == (0, 0.0, 2)   # both first blocks 4 share one cohort on instance 0


def test_same_id_at_another_position_is_another_block():
    result = run(make_trace((0, [1, 2]), (0, [2, 1])), w=10, lookup="independent").summary["all"]
    assert (result.num_cohorts, result.num_removable_attempts) == (4, 0)


# --- LRU eviction order ---------------------------------------------------------------------------

def test_lru_evicts_the_least_recently_used_block():
    # capacity 2, instant loads: load 1, load 2, hit 1 (now 2 is least recent), load 3 evicts 2.
    trace = make_trace((0, [1]), (1, [2]), (2, [1]), (3, [3]), (4, [1]), (5, [2]))
    stats = run(trace, w=0, capacity=2, lookup="independent").summary["all"]
    assert (stats.num_hits, stats.num_cohorts) == (2, 4)   # hits: t=2 and t=4; 2 reloads at t=5


def test_completion_refreshes_a_block_that_is_still_cached():
    # Blocks A=(0,1), B=(1,2), N=(0,9), C=(0,3); capacity 3, instant loads. t=1 hits A (LRU order B, A).
    # t=2: N is missing, so the contiguous walk reloads B although it is cached; B's completion makes it
    # most recent (A, N, B), so C's insertion evicts A, and t=4 misses A and (behind it) B.
    # Without the refresh C would evict B and t=4 would hit A.
    trace = make_trace((0, [1, 2]), (1, [1]), (2, [9, 2]), (3, [3]), (4, [1, 2]))
    contiguous = run(trace, w=0, capacity=3, lookup="contiguous").summary["all"]
    assert (contiguous.num_hits, contiguous.num_cold_attempts) == (1, 7)


# --- lookup modes ---------------------------------------------------------------------------------

def test_contiguous_needs_everything_after_the_first_unavailable_block_independent_does_not():
    # Capacity 3: loading 8, 9 evicts positions 0 and 1 of the first request; position 2 stays cached.
    trace = make_trace((0, [1, 2, 3]), (5, [8, 9]), (10, [1, 2, 3]))
    cont = run(trace, w=0, capacity=3, lookup="contiguous").summary["all"]
    ind = run(trace, w=0, capacity=3, lookup="independent").summary["all"]
    assert (cont.num_hits, cont.num_cold_attempts) == (0, 8)
    assert (ind.num_hits, ind.num_cold_attempts) == (1, 7)


def test_in_flight_block_is_unavailable_for_the_contiguous_walk():
    walk = run(make_trace((0, [1, 2]), (5, [1, 2])), w=10, lookup="contiguous")
    assert cohorts_of(walk) == [(0, 0.0, 2), (0, 0.0, 2)]
    # (1,2) is cached from t=0; (0,1) is in flight from t=20 to 30. At t=25 the contiguous walk joins
    # (0,1) and must reload the cached (1,2) behind it; the independent lookup joins (0,1) and hits (1,2).
    trace = make_trace((0, [5, 2]), (20, [1]), (25, [1, 2]))
    cont = run(trace, w=10, lookup="contiguous")
    ind = run(trace, w=10, lookup="independent")
    assert cohorts_of(cont) == [(0, 0.0, 1), (0, 0.0, 1), (0, 20.0, 2), (0, 25.0, 1)]
    assert cont.summary["all"].num_hits == 0
    assert cohorts_of(ind) == [(0, 0.0, 1), (0, 0.0, 1), (0, 20.0, 2)]
    assert ind.summary["all"].num_hits == 1


# --- phases and accounting ------------------------------------------------------------------------

def test_cohort_counts_in_the_phase_of_its_anchor():
    # Span 0..100, warm-up before 10: the cohort anchored at 9 has a follower at 12 (steady request).
    trace = make_trace((0, [1]), (9, [2]), (12, [2]), (100, [3]))
    result = run(trace, w=10)
    warm, steady = result.summary["warmup"], result.summary["steady"]
    assert (warm.num_requests, warm.num_cold_attempts, warm.num_cohorts) == (2, 3, 2)
    assert (steady.num_requests, steady.num_cold_attempts, steady.num_cohorts) == (2, 1, 1)
    assert [c.phase for c in result.instances[0].cohorts] == ["warmup", "warmup", "steady"]


def test_an_arrival_exactly_at_the_cut_is_steady():
    result = run(make_trace((0, [1]), (10, [2]), (100, [3])), w=1)   # cut = 0 + 0.1 * 100 = 10
    assert result.phase_bounds_ms["warmup"] == (0.0, 10.0)
    assert [result.summary[p].num_requests for p in ("warmup", "steady")] == [1, 2]
    assert [result.summary[p].num_cohorts for p in ("warmup", "steady")] == [1, 2]


def check_identities(result: RunResult, num_requests: int, num_lookups: int) -> None:
    for phase in PHASES:
        total = result.summary[phase]
        hist = dict(total.fan_in_histogram)
        assert total.num_cold_attempts == sum(f * n for f, n in hist.items())
        assert total.num_cohorts == sum(hist.values())
        assert total.num_removable_attempts == sum((f - 1) * n for f, n in hist.items())
        assert total.num_duplicate_cohorts == sum(n for f, n in hist.items() if f >= 2)
        for field in ("num_requests", "num_hits", "num_cold_attempts", "num_cohorts", "fan_in_histogram"):
            assert getattr(total, field) == getattr(sum((i.phases[phase] for i in result.instances[1:]),
                                                        result.instances[0].phases[phase]), field)
    a, w, s = (result.summary[p] for p in PHASES)
    assert a == w + s
    assert a.num_requests == num_requests and a.num_block_lookups == num_lookups
    assert sum(result.request_share(i) for i in range(len(result.instances))) == pytest.approx(1.0)


@pytest.mark.parametrize("routing", ["rr", "affinity"])
@pytest.mark.parametrize("lookup", ["contiguous", "independent"])
def test_accounting_identities_on_the_real_traces(conversation, synthetic, routing, lookup):
    for prepared, num_requests, num_lookups in ((conversation, 12_031, 288_500), (synthetic, 3_993, 121_877)):
        for w, n, cap in ((10_000, 4, 1_000), (300, 16, 100_000)):
            config = ModelConfig(w_eff_ms=w, capacity_blocks=cap, num_instances=n, routing=routing, lookup=lookup)
            check_identities(simulate(prepared, config), num_requests, num_lookups)


def test_pinned_counts_on_the_conversation_trace(conversation):
    s = simulate(conversation, ModelConfig(w_eff_ms=10_000, capacity_blocks=10_000)).summary["all"]
    assert (s.num_hits, s.num_cold_attempts, s.num_cohorts, s.num_duplicate_cohorts) == (62_070, 226_430, 226_165, 229)
    assert (s.fan_in_median, s.fan_in_p99, s.fan_in_max) == (1, 1, 38)


# --- time scaling collapses into W_eff ------------------------------------------------------------

@pytest.mark.parametrize("s", [4, 8])
def test_compressing_time_by_s_at_load_w_equals_w_times_s(conversation, s):
    trace = load_trace(shared_trace_path("conversation"))
    compressed = prepare_trace(Trace("c", tuple(TraceRequest(r.timestamp_ms / s, r.input_length, r.output_length,
                                                             r.hash_ids, r.line_number) for r in trace.requests)))
    for w_eff in (100, 3_000):
        for routing in ("rr", "affinity"):
            base = dict(capacity_blocks=1_000, num_instances=4, routing=routing, lookup="contiguous")
            fast = simulate(compressed, ModelConfig(w_eff_ms=w_eff / s, **base))
            slow = simulate(conversation, ModelConfig(w_eff_ms=w_eff, **base))
            assert fast.summary == slow.summary
            assert [i.phases for i in fast.instances] == [i.phases for i in slow.instances]


# --- the reverse test: insert-on-miss hides all fan-in --------------------------------------------

@pytest.mark.parametrize("lookup", ["contiguous", "independent"])
def test_insert_on_miss_makes_redundancy_exactly_zero_on_the_real_traces(conversation, synthetic, lookup):
    for prepared in (conversation, synthetic):
        for n in (1, 4):
            config = dict(w_eff_ms=10_000, capacity_blocks=10_000, num_instances=n, lookup=lookup)
            wrong = simulate(prepared, ModelConfig(insert_on_miss=True, **config)).summary["all"]
            right = simulate(prepared, ModelConfig(**config)).summary["all"]
            assert wrong.num_removable_attempts == 0 and wrong.redundancy_ratio == 0.0 and wrong.fan_in_max == 1
            assert right.num_removable_attempts > 0   # the window is what the right model measures


# --- configuration errors -------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(w_eff_ms=-1, capacity_blocks=1), "w_eff_ms"),
    (dict(w_eff_ms=1, capacity_blocks=0), "capacity_blocks"),
    (dict(w_eff_ms=1, capacity_blocks=1, num_instances=17), "num_instances"),
    (dict(w_eff_ms=1, capacity_blocks=1, routing="random"), "routing"),
    (dict(w_eff_ms=1, capacity_blocks=1, lookup="suffix"), "lookup"),
])
def test_bad_configuration_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**kwargs)


def test_a_cached_block_being_reloaded_behind_a_miss_is_still_a_hit_for_others():
    # t=20 reloads cached (1,2) behind the missing (0,1); at t=21 a walk over (0,5),(1,2) hits both.
    result = run(make_trace((0, [5, 2]), (20, [1, 2]), (21, [5, 2])), w=10, lookup="contiguous")
    assert cohorts_of(result) == [(0, 0.0, 1), (0, 0.0, 1), (0, 20.0, 1), (0, 20.0, 1)]
    assert result.summary["all"].num_hits == 2


def test_the_docstring_examples_run():
    import doctest

    from flightcheck.checks.workload import (counts as workload_counts, opportunity as workload_model,
                                             sweep as workload_sweep, trace as workload_trace)

    for module in (workload_counts, workload_model, workload_sweep, workload_trace):
        failed, attempted = doctest.testmod(module)
        assert failed == 0 and attempted >= 1, module.__name__
