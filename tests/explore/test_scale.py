"""The scale scenarios: pinned state and edge counts and verdicts, with and without symmetry.

The reference explorer would take minutes to hours here; the batched explorer's agreement with it on
every default scenario (tests/explore/test_batched.py) is what these counts rest on, and SPIN's
counts on the exported models agree with them (scripts/bench_explore.py, BENCHMARKS.md).
"""

import pytest

from flightcheck.checks.explore.batched import explore_batched
from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.properties import get_property, properties_for
from flightcheck.spec.scenario import SCALE_SCENARIOS
from flightcheck.spec.variants import VARIANTS

from switches import SLOW  # noqa: E402

# (scenario, release) -> ((states, edges) with symmetry, (states, edges) without, or None: not pinned)
SCALE = {
    ("burst4", "after-prefill"): ((379, 1133), (6320, 19416)),
    ("burst4", "on-completion"): ((199, 481), (2960, 7416)),
    ("burst5", "after-prefill"): ((751, 2495), (43592, 147220)),
    ("burst5", "on-completion"): ((401, 1120), (20982, 60435)),
    ("burst6", "after-prefill"): ((1318, 4781), (277503, 1011618)),
    ("burst6", "on-completion"): ((716, 2241), (137127, 438558)),
    ("burst7", "after-prefill"): ((2122, 8316), (1659268, 6470163)),
    ("burst7", "on-completion"): ((1170, 4032), (835186, 2915318)),
    ("burst8", "after-prefill"): ((3205, 13470), (9447630, 39188904)),
    ("burst8", "on-completion"): ((1789, 6710), (4809550, 18135976)),
    ("mixed4-evict", "after-prefill"): ((3719, 11662), (13740, 43416)),
    ("mixed4-evict", "on-completion"): ((2295, 5940), (8428, 22016)),
    ("mixed6-evict", "after-prefill"): ((24691, 93544), (540493, 2064214)),
    ("mixed6-evict", "on-completion"): ((13883, 44936), (288517, 943474)),
    ("burst8-abort", "after-prefill"): ((145955, 922323), None),
    ("burst8-abort", "on-completion"): ((130247, 786093), None),
}
# The full graphs run by default (the rest with FLIGHTCHECK_SLOW=1; the benchmark runs them all).
DEFAULT_FULL = {"burst4", "burst5", "mixed4-evict"}
# The reduced graphs left to FLIGHTCHECK_SLOW=1 (the other release point of the largest runs by default).
SLOW_ONLY = {("burst8-abort", "on-completion")}


def test_every_scale_scenario_is_pinned():
    assert {name for name, _r in SCALE} == set(SCALE_SCENARIOS)


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(k for k in SCALE if SLOW or k not in SLOW_ONLY), ids=lambda k: "-".join(k))
def test_scale_scenario_counts_and_verdicts(key):
    name, release = key
    spec = FlightSpec(SCALE_SCENARIOS[name].with_policy(release=release))
    reduced, full = SCALE[key]
    r = explore_batched(spec)
    assert (r.stats.states, r.stats.edges) == reduced
    assert r.ok, [p.name for p in r.violations]
    if full is not None and (SLOW or name in DEFAULT_FULL):
        safety = [p for p in properties_for(spec) if p.kind != "eventually"]
        f = explore_batched(spec, symmetry=False, properties=safety, max_states=20_000_000)
        assert (f.stats.states, f.stats.edges) == full
        assert f.ok, [p.name for p in f.violations]


def test_the_eviction_gap_at_scale_is_a_replayed_shortest_counterexample():
    # Three requests per prompt with eviction: when released followers pin nothing, two of them can
    # prefill an evicted page (the finding of tests/explore/test_explorer.py, here with two prompts);
    # the design pins the leader's pages at release and passes (above).
    spec = VARIANTS["unpinned-release"].build(SCALE_SCENARIOS["mixed6-evict"])
    r = explore_batched(spec)
    res = r.result("single_prefill")
    assert [p.name for p in r.violations] == ["single_prefill"] and len(res.counterexample) == 16
    replay = Counterexample.from_actions(spec, res.counterexample.actions)
    assert not get_property("single_prefill").holds(spec, replay.final_state(spec))
