"""The scale scenarios: pinned state and edge counts and verdicts, with and without symmetry.

The reference explorer would take minutes to hours here; the batched explorer's agreement with it on
every default scenario (tests/explore/test_batched.py) is what these counts rest on, and SPIN's
counts on the exported models agree with them (scripts/bench_explore.py, BENCHMARKS.md).
"""

import os

import pytest

from flightcheck.checks.explore.batched import explore_batched
from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.properties import get_property, properties_for
from flightcheck.spec.scenario import SCALE_SCENARIOS

SLOW = bool(os.environ.get("FLIGHTCHECK_SLOW"))

# (scenario, release) -> ((states, edges) with symmetry, (states, edges) without, or None: not pinned)
SCALE = {
    ("burst4", "after-prefill"): ((409, 1341), (7004, 23820)),
    ("burst4", "on-completion"): ((205, 541), (3068, 8508)),
    ("burst5", "after-prefill"): ((835, 3079), (51242, 194450)),
    ("burst5", "on-completion"): ((425, 1324), (22872, 75025)),
    ("burst6", "after-prefill"): ((1498, 6081), (343563, 1419798)),
    ("burst6", "on-completion"): ((776, 2746), (157107, 581778)),
    ("burst7", "after-prefill"): ((2452, 10820), (2147203, 9538158)),
    ("burst7", "on-completion"): ((1290, 5073), (1000561, 4080209)),
    ("burst8", "after-prefill"): ((3751, 17838), (12692886, 60109496)),
    ("burst8", "on-completion"): ((1999, 8614), (5990422, 26498232)),
    ("mixed4-evict", "after-prefill"): ((6348, 21764), (24000, 83008)),
    ("mixed4-evict", "on-completion"): ((4624, 13464), (17424, 51216)),
    ("mixed6-evict", "after-prefill"): ((114781, 471928), (2637592, 11054588)),
    ("mixed6-evict", "on-completion"): ((100189, 376940), (2278120, 8745980)),
    ("burst8-abort", "after-prefill"): ((74438, 615266), None),
    ("burst8-abort", "on-completion"): ((70214, 556224), None),
}
# The full graphs run by default (the rest with FLIGHTCHECK_SLOW=1; the benchmark runs them all).
DEFAULT_FULL = {"burst4", "burst5", "burst6", "mixed4-evict"}


def test_every_scale_scenario_is_pinned():
    assert {name for name, _r in SCALE} == set(SCALE_SCENARIOS)


@pytest.mark.parametrize("key", sorted(SCALE), ids=lambda k: "-".join(k))
def test_scale_scenario_counts_and_verdicts(key):
    name, release = key
    spec = FlightSpec(SCALE_SCENARIOS[name].with_policy(release=release))
    reduced, full = SCALE[key]
    r = explore_batched(spec)
    expected = ["single_prefill"] if name == "mixed6-evict" else []
    assert (r.stats.states, r.stats.edges) == reduced
    assert [p.name for p in r.violations] == expected
    if full is not None and (SLOW or name in DEFAULT_FULL):
        safety = [p for p in properties_for(spec) if p.kind != "eventually"]
        f = explore_batched(spec, symmetry=False, properties=safety, max_states=20_000_000)
        assert (f.stats.states, f.stats.edges) == full
        assert [p.name for p in f.violations] == expected


def test_the_eviction_gap_at_scale_is_a_replayed_shortest_counterexample():
    # Three requests per prompt with eviction: released followers can both prefill an evicted page
    # (the finding of tests/explore/test_explorer.py, here with two prompts).
    spec = FlightSpec(SCALE_SCENARIOS["mixed6-evict"])
    res = explore_batched(spec).result("single_prefill")
    assert not res.holds and len(res.counterexample) == 16
    replay = Counterexample.from_actions(spec, res.counterexample.actions)
    assert not get_property("single_prefill").holds(spec, replay.final_state(spec))
