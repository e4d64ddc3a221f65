"""The workload model against a brute-force, event-by-event oracle written separately and simply.

The oracle shares no code with the model: it keeps one global event queue (completions before arrivals
at equal times), explicit cohort objects with member lists, a cache as a plain list in LRU order, and
finds an open cohort by scanning all cohorts. Hypothesis compares every per-instance, per-phase counter,
fan-in histogram and cohort record on random small traces, including how many of each cohort's members have
the first member's exact hash_ids (the exact-input followers).
"""

from __future__ import annotations

import heapq
import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from flightcheck.checks.workload.opportunity import ModelConfig, prepare_trace, simulate
from flightcheck.checks.workload.trace import parse_trace_lines
from switches import SLOW  # noqa: E402

EXAMPLES = 5000 if SLOW else 1000


def oracle(requests, w, num_instances, capacity, routing, lookup, insert_on_miss, warmup_fraction):
    """requests: list of (time, hash_ids) in file order. Returns {instance: {phase: counters}}, cohorts."""
    order = sorted(range(len(requests)), key=lambda k: requests[k][0])   # Python's sort is stable
    times = [requests[k][0] for k in order]
    cut = times[0] + warmup_fraction * (times[-1] - times[0])
    instance_of = {}
    for rank, k in enumerate(order):
        ids = requests[k][1]
        if routing == "rr":
            instance_of[k] = rank % num_instances
        else:
            instance_of[k] = ids[0] % num_instances if ids else 0
    caches = {i: [] for i in range(num_instances)}   # least recently used first
    cohorts = []    # dicts: instance, block, anchor, members, done
    stats = {i: {p: {"requests": 0, "hits": 0} for p in ("warmup", "steady")} for i in range(num_instances)}
    events = [(times[rank], 1, rank, k) for rank, k in enumerate(order)]
    heapq.heapify(events)
    sequence = len(order)

    def use(cache, block):
        if block in cache:
            cache.remove(block)
        cache.append(block)
        while len(cache) > capacity:
            cache.pop(0)

    while events:
        t, kind, _, payload = heapq.heappop(events)
        if kind == 0:   # a load completes
            cohort = cohorts[payload]
            assert t == cohort["anchor"] + w
            cohort["done"] = True
            use(caches[cohort["instance"]], cohort["block"])
            continue
        k = payload
        i = instance_of[k]
        phase = "warmup" if t < cut else "steady"
        stats[i][phase]["requests"] += 1
        blocks = list(enumerate(requests[k][1]))
        cache = caches[i]
        needed = []
        for block in blocks:
            if lookup == "contiguous" and needed:
                needed.append(block)
            elif block in cache:
                stats[i][phase]["hits"] += 1
                use(cache, block)
            else:
                needed.append(block)
        for block in needed:
            open_ones = [c for c in cohorts if c["instance"] == i and c["block"] == block and not c["done"]]
            assert len(open_ones) <= 1
            if open_ones:
                assert open_ones[0]["anchor"] <= t < open_ones[0]["anchor"] + w
                open_ones[0]["members"].append(k)
                continue
            cohorts.append({"instance": i, "block": block, "anchor": t, "members": [k], "done": insert_on_miss})
            if insert_on_miss:
                use(cache, block)
            else:
                heapq.heappush(events, (t + w, 0, sequence, len(cohorts) - 1))
                sequence += 1
    for c in cohorts:
        phase = "warmup" if c["anchor"] < cut else "steady"
        c["phase"] = phase
        opener, *followers = c["members"]
        c["exact"] = sum(1 for k in followers if requests[k][1] == requests[opener][1])
    return stats, cohorts


requests_strategy = st.lists(
    st.tuples(st.sampled_from([0, 0, 1, 2, 3, 5, 8, 10, 12, 20, 30]),
              st.lists(st.integers(0, 3), min_size=0, max_size=4)),
    min_size=1, max_size=25)


@settings(max_examples=EXAMPLES, deadline=None)
@given(requests=requests_strategy, w=st.sampled_from([0, 1, 2, 5, 10, 40]), n=st.integers(1, 3),
       capacity=st.integers(1, 6), routing=st.sampled_from(["rr", "affinity"]),
       lookup=st.sampled_from(["contiguous", "independent"]), insert_on_miss=st.booleans(),
       warmup_fraction=st.sampled_from([0.0, 0.1, 0.5]))
def test_model_equals_the_brute_force_oracle(requests, w, n, capacity, routing, lookup, insert_on_miss, warmup_fraction):
    lines = [json.dumps({"timestamp": t, "input_length": 1, "output_length": 1, "hash_ids": ids}) for t, ids in requests]
    prepared = prepare_trace(parse_trace_lines(lines), warmup_fraction)
    config = ModelConfig(w_eff_ms=w, capacity_blocks=capacity, num_instances=n, routing=routing, lookup=lookup,
                         insert_on_miss=insert_on_miss)
    result = simulate(prepared, config, record_cohorts=True)
    stats, cohorts = oracle(requests, w, n, capacity, routing, lookup, insert_on_miss, warmup_fraction)
    for instance in result.instances:
        i = instance.instance_id
        for phase in ("warmup", "steady"):
            mine = [c for c in cohorts if c["instance"] == i and c["phase"] == phase]
            got = instance.phases[phase]
            assert got.num_requests == stats[i][phase]["requests"]
            assert got.num_hits == stats[i][phase]["hits"]
            assert got.num_cohorts == len(mine)
            assert got.num_cold_attempts == sum(len(c["members"]) for c in mine)
            assert dict(got.fan_in_histogram) == dict(Counter(len(c["members"]) for c in mine))
            assert got.num_exact_input_removable == sum(c["exact"] for c in mine)
            assert got.num_partial_prefix_removable == sum(len(c["members"]) - 1 - c["exact"] for c in mine)
        records = sorted((c.anchor_ms, c.fan_in, c.phase, c.exact_followers) for c in instance.cohorts)
        expected = sorted((float(c["anchor"]), len(c["members"]), c["phase"], c["exact"])
                          for c in cohorts if c["instance"] == i)
        assert records == expected
    if insert_on_miss:
        assert result.summary["all"].num_removable_attempts == 0


@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(requests=requests_strategy, w=st.sampled_from([0, 1, 5, 10]), n=st.integers(1, 3), capacity=st.integers(1, 6),
       scale=st.sampled_from([2, 4, 8]))
def test_stretching_time_and_latency_together_changes_no_count(requests, w, n, capacity, scale):
    def prepared(factor):
        lines = [json.dumps({"timestamp": t * factor, "input_length": 1, "output_length": 1, "hash_ids": ids})
                 for t, ids in requests]
        return prepare_trace(parse_trace_lines(lines))

    base = dict(capacity_blocks=capacity, num_instances=n)
    slow = simulate(prepared(scale), ModelConfig(w_eff_ms=w * scale, **base))
    fast = simulate(prepared(1), ModelConfig(w_eff_ms=w, **base))
    assert slow.summary == fast.summary
