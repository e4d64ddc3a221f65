"""Exact-input vs partial-prefix removable attempts, counted by hand on tiny traces and pinned on the real ones.

A follower is exact-input when its request's full hash_ids equal the cohort opener's, partial-prefix otherwise
(see the model's docstring). Cohort records are written (block, anchor, fan-in, exact followers), with blocks
as the dense ids prepare_trace gives them in order of first appearance.
"""

from __future__ import annotations

import json

import pytest

from flightcheck.checks.workload.opportunity import PHASES, ModelConfig, prepare_trace, simulate
from flightcheck.checks.workload.trace import load_trace, parse_trace_lines, shared_trace_path

from test_workload_opportunity import conversation, make_trace, run, synthetic  # noqa: F401 (fixtures)


def records(result):
    return [(c.block, c.anchor_ms, c.fan_in, c.exact_followers) for i in result.instances for c in i.cohorts]


def split(counts):
    return counts.num_removable_attempts, counts.num_exact_input_removable, counts.num_partial_prefix_removable


def test_two_identical_prompts_are_exact_input_on_every_block():
    result = run(make_trace((0, [1, 2]), (5, [1, 2])), w=10)
    assert records(result) == [(0, 0.0, 2, 1), (1, 0.0, 2, 1)]
    s = result.summary["all"]
    assert split(s) == (2, 2, 0)
    assert (s.exact_input_ratio, s.partial_prefix_ratio, s.redundancy_ratio) == (0.5, 0.0, 0.5)


def test_two_prompts_sharing_only_the_first_block_are_partial_prefix_on_block_0():
    result = run(make_trace((0, [1, 2]), (5, [1, 3])), w=10)
    # Block 0 = (0, 1) is shared and in flight at 5; (1, 2) and (1, 3) are each loaded once.
    assert records(result) == [(0, 0.0, 2, 0), (1, 0.0, 1, 0), (2, 5.0, 1, 0)]
    s = result.summary["all"]
    assert split(s) == (1, 0, 1)
    assert (s.exact_input_ratio, s.partial_prefix_ratio) == (0.0, 0.25)


def test_followers_are_compared_with_the_opener_not_with_each_other():
    # A = [1, 2] opens block 0; B and D = [1, 3] differ from A (partial), C = [1, 2] equals it (exact).
    # B opens (1, 3), which D then joins with B's exact input.
    result = run(make_trace((0, [1, 2]), (1, [1, 3]), (2, [1, 2]), (3, [1, 3])), w=10)
    assert records(result) == [(0, 0.0, 4, 1), (1, 0.0, 2, 1), (2, 1.0, 2, 1)]
    s = result.summary["all"]
    assert (s.num_cold_attempts, s.num_cohorts) == (8, 3)
    assert split(s) == (5, 3, 2)
    assert (s.exact_input_ratio, s.partial_prefix_ratio) == (3 / 8, 2 / 8)


@pytest.mark.parametrize("first, second", [([1], [1, 2]), ([1, 2], [1])])
def test_a_prompt_that_is_a_prefix_of_another_is_a_different_input(first, second):
    s = run(make_trace((0, first), (5, second)), w=10).summary["all"]
    assert split(s) == (1, 0, 1)


def test_equal_ids_with_different_lengths_within_the_last_block_count_as_the_same_input():
    lines = [json.dumps({"timestamp": t, "input_length": n, "output_length": 1, "hash_ids": [1, 2]})
             for t, n in ((0, 1000), (5, 1024))]
    result = simulate(prepare_trace(parse_trace_lines(lines)), ModelConfig(w_eff_ms=10, capacity_blocks=8))
    assert split(result.summary["all"]) == (2, 2, 0)


def test_a_follower_arriving_after_its_load_completed_is_a_hit_not_partial():
    s = run(make_trace((0, [1, 2]), (10, [1, 3])), w=10).summary["all"]
    assert (s.num_hits, split(s)) == (1, (0, 0, 0))


def test_the_split_counts_in_the_phase_of_the_cohort_anchor():
    # Span 0..100, cut at 10: the cohort of (0, 2) anchored at 9 gets an exact follower at 12 and a
    # partial one at 13 (both steady requests); the steady phase has no removable attempt of its own.
    trace = make_trace((0, [1]), (9, [2]), (12, [2]), (13, [2, 5]), (100, [3]))
    result = run(trace, w=10)
    assert split(result.summary["warmup"]) == (2, 1, 1)
    assert split(result.summary["steady"]) == (0, 0, 0)
    assert result.summary["all"] == result.summary["warmup"] + result.summary["steady"]


def test_instances_count_their_own_cohorts_only():
    # rr over 2: A and C land on 0, B and D on 1. Instance 0: C joins A's blocks (exact); instance 1: D joins
    # B's block 0 (different input, partial) and loads its own tail.
    trace = make_trace((0, [1, 2]), (1, [1, 3]), (2, [1, 2]), (3, [1, 4]))
    result = run(trace, w=10, num_instances=2)
    assert [split(i.phases["all"]) for i in result.instances] == [(2, 2, 0), (1, 0, 1)]
    assert split(result.summary["all"]) == (3, 2, 1)


def test_insert_on_miss_has_neither_exact_nor_partial_followers():
    trace = make_trace((0, [1, 2]), (1, [1, 3]), (2, [1, 2]))
    assert split(run(trace, w=10, insert_on_miss=True).summary["all"]) == (0, 0, 0)
    assert split(run(trace, w=10).summary["all"]) == (3, 2, 1)   # C on both blocks; B on block 0


# --- the real traces ------------------------------------------------------------------------------

def check_split_identities(result) -> None:
    """exact + partial = removable (with 0 <= each), per phase and per instance, and the cohort records agree."""
    for phase in PHASES:
        total = result.summary[phase]
        exact, partial = total.num_exact_input_removable, total.num_partial_prefix_removable
        assert 0 <= exact and 0 <= partial and exact + partial == total.num_removable_attempts
        assert total.exact_input_ratio + total.partial_prefix_ratio == pytest.approx(total.redundancy_ratio)
        assert exact == sum(i.phases[phase].num_exact_input_removable for i in result.instances)
        cohorts = [c for i in result.instances for c in i.cohorts if phase in ("all", c.phase)]
        assert exact == sum(c.exact_followers for c in cohorts)
        assert partial == sum(c.fan_in - 1 - c.exact_followers for c in cohorts)
        assert all(0 <= c.exact_followers < c.fan_in for c in cohorts)


@pytest.mark.parametrize("routing, lookup", [("rr", "contiguous"), ("affinity", "independent")])
def test_split_identities_on_the_real_traces(conversation, synthetic, routing, lookup):
    for prepared in (conversation, synthetic):
        for w, n in ((10_000, 1), (1_000, 4)):
            config = ModelConfig(w_eff_ms=w, capacity_blocks=10_000, num_instances=n, routing=routing, lookup=lookup)
            check_split_identities(simulate(prepared, config, record_cohorts=True))


def test_pinned_split_at_the_default_settings(conversation, synthetic):
    # The CLI's defaults: W_eff = 1 s, 1 instance, 10,000 blocks, rr, contiguous (BENCHMARKS.md's table).
    config = ModelConfig(w_eff_ms=1_000, capacity_blocks=10_000)
    pinned = {conversation: {"all": (10, 1, 9), "warmup": (9, 0, 9), "steady": (1, 1, 0)},
              synthetic: {"all": (255, 1, 254), "warmup": (28, 0, 28), "steady": (227, 1, 226)}}
    for prepared, phases in pinned.items():
        summary = simulate(prepared, config).summary
        assert {p: split(summary[p]) for p in phases} == phases, prepared.name


def test_pinned_split_on_the_conversation_trace_at_10_s(conversation):
    # The configuration of test_pinned_counts_on_the_conversation_trace (226,430 cold, 226,165 cohorts).
    summary = simulate(conversation, ModelConfig(w_eff_ms=10_000, capacity_blocks=10_000)).summary
    assert {p: split(summary[p]) for p in PHASES} == {"all": (265, 17, 248), "warmup": (84, 0, 84),
                                                      "steady": (181, 17, 164)}


@pytest.mark.parametrize("name, num_inputs", [("conversation", 11_913), ("synthetic", 3_780)])
def test_repeated_inputs_in_the_shipped_traces_repeat_their_length(name, num_inputs):
    # The docstring's claims: one id per started 512-token block, and equal hash_ids never come with
    # different input lengths in these traces, so treating them as one input loses nothing here.
    trace = load_trace(shared_trace_path(name))
    lengths: dict[tuple[int, ...], set[int]] = {}
    for r in trace.requests:
        assert len(r.hash_ids) == -(-r.input_length // 512)
        lengths.setdefault(r.hash_ids, set()).add(r.input_length)
    assert len(lengths) == num_inputs < trace.num_requests       # some inputs repeat ...
    assert all(len(v) == 1 for v in lengths.values())            # ... always with their length
    assert len(set(prepare_trace(trace).inputs)) == num_inputs
