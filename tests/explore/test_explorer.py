"""The explorer: pinned state counts, verdicts, mutants' shortest counterexamples, symmetry, toy models."""

import pytest

from flightcheck.checks.explore.explorer import StateLimitExceeded, explore
from flightcheck.checks.explore.checkable import CheckableModel, GenericModel
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.properties import Property, always, deadlock_free, eventually, sometimes
from flightcheck.spec.scenario import SCENARIOS, Policy, burst, policy_grid
from flightcheck.spec.variants import VARIANTS

from switches import SLOW  # noqa: E402

# (scenario, release, publication, leader loss) -> (states with symmetry, states without)
PINNED = {
    ('burst2', 'after-prefill', 'incremental', 'release-all'): (52, 102),
    ('burst2', 'on-completion', 'on-completion', 'release-all'): (26, 50),
    ('burst3', 'after-prefill', 'incremental', 'release-all'): (160, 833),
    ('burst2-abort', 'after-prefill', 'incremental', 'promote'): (105, 205),
    ('burst3-abort', 'after-prefill', 'incremental', 'release-all'): (767, 4172),
    ('burst3-abort', 'on-completion', 'on-completion', 'promote'): (137, 672),
    ('burst3-fail', 'after-prefill', 'incremental', 'promote'): (375, 1955),
    ('burst3-expire', 'on-completion', 'on-completion', 'release-all'): (474, 2633),
    ('mixed3', 'after-prefill', 'incremental', 'release-all'): (533, 1040),
    ('burst2-cap1', 'after-prefill', 'incremental', 'release-all'): (58, 112),
    ('burst2-evict', 'on-completion', 'incremental', 'promote'): (94, 181),
    ('burst3-evict', 'after-prefill', 'on-completion', 'release-all'): (233, 1198),
    ('mixed3-pool', 'after-prefill', 'incremental', 'release-all'): (331, 628),
    ('mixed3-pool', 'on-completion', 'on-completion', 'release-all'): (146, 270),
    ('burst4-abort', 'after-prefill', 'incremental', 'release-all'): (3066, None),
    ('burst4-abort', 'after-prefill', 'incremental', 'promote'): (1211, None),
    ('notail', 'after-prefill', 'incremental', 'release-all'): (48, 94),
    ('short', 'after-prefill', 'incremental', 'release-all'): (344, 660),
    ('nocache', 'after-prefill', 'incremental', 'release-all'): (21, 39),
}


@pytest.mark.parametrize("key", sorted(PINNED), ids=lambda k: "-".join(k))
def test_correct_design_passes_every_property_with_pinned_state_counts(key):
    name, release, publication, leader_loss = key
    spec = FlightSpec(SCENARIOS[name].with_policy(release=release, publication=publication, leader_loss=leader_loss))
    reduced, full = PINNED[key]
    r = explore(spec)
    assert r.ok, [p.name for p in r.violations]
    assert r.stats.states == reduced
    if full is not None:
        f = explore(spec, symmetry=False)
        assert f.stats.states == full
        assert {p.name: p.verdict for p in f.properties} == {p.name: p.verdict for p in r.properties}


# burst4-abort's full graph (51,139 states) is the benchmark's job, not the test suite's; the two largest
# prompt trees (their full graphs are 3-4x the reduced ones) run with FLIGHTCHECK_SLOW=1, the smaller
# trees always.
LARGE_TREES = () if SLOW else ("doc3-abort", "doc3-expire")
# The four costliest of the rest (60 s of the 105 s this test takes on every scenario) also run with
# FLIGHTCHECK_SLOW=1 only; burst3, burst3-evict and mixed3 keep three requests in the default run.
LARGE_FULL = () if SLOW else ("burst3-expire", "burst3-abort", "burst3-fail", "doc3-evict")


@pytest.mark.parametrize("name", sorted(n for n in SCENARIOS
                                        if n != "burst4-abort" and n not in LARGE_TREES + LARGE_FULL))
@pytest.mark.parametrize("variant", ["correct", "forget-at-release", "stranded-followers", "early-release"])
def test_symmetry_gives_the_same_verdicts_and_path_lengths_as_the_full_graph(name, variant):
    spec = VARIANTS[variant].build(SCENARIOS[name].with_policy(publication="on-completion"))
    a, b = explore(spec), explore(spec, symmetry=False)
    assert a.stats.states <= b.stats.states
    for pa, pb in zip(a.properties, b.properties):
        assert (pa.name, pa.verdict) == (pb.name, pb.verdict)
        la = len(pa.counterexample) if pa.counterexample else None
        lb = len(pb.counterexample) if pb.counterexample else None
        assert la == lb, pa.name


# The same pinned (property, shortest length) per mutant as every other checker: tests/pinned.py.
from pinned import MUTANTS  # noqa: E402


def test_every_mutant_variant_has_its_recorded_figures():
    assert set(MUTANTS) == {n for n, v in VARIANTS.items() if v.expected_violation is not None}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_mutant_fails_on_its_property_with_a_shortest_counterexample(name):
    prop, length = MUTANTS[name]
    v = VARIANTS[name]
    assert v.expected_violation == prop
    spec = v.demo_spec()
    r = explore(spec)
    res = r.result(prop)
    assert not res.holds
    assert len(res.counterexample) == length
    # The counterexample is concrete: replaying its actions reaches a state that violates the property.
    from flightcheck.checks.explore.counterexample import Counterexample
    replay = Counterexample.from_actions(spec, res.counterexample.actions)
    assert replay.actions == res.counterexample.actions
    if res.kind == "always":
        from flightcheck.spec.properties import get_property
        assert not get_property(prop).holds(spec, replay.final_state(spec))


def test_correct_variants_pass_on_their_demo_and_on_the_abort_scenarios():
    for name in ("correct", "draining"):
        for scn in ("burst2", "burst3-abort", "burst2-evict"):
            r = explore(VARIANTS[name].build(SCENARIOS[scn]))
            assert r.ok, (name, scn, [p.name for p in r.violations])


def test_stranded_followers_liveness_counterexample_stutters_with_a_blocked_follower():
    spec = VARIANTS["stranded-followers"].demo_spec()
    r = explore(spec)
    cx = r.result("eventually_terminates").counterexample
    assert cx.actions == ["arrive(0)", "arrive(1)", "abort(0)"] and cx.stutters
    assert "no engine step is enabled" in cx.format(spec)


def test_the_checker_finds_the_eviction_gap_of_released_followers_and_pinned_release_closes_it():
    # The finding, kept as a test: in the unpinned design, released followers hold no pages until
    # admitted, so eviction between release and admission makes two of them prefill the same page.
    unpinned = VARIANTS["unpinned-release"].build(burst(3, eviction=True, policy=Policy(capacity=2)))
    r = explore(unpinned)
    res = r.result("single_prefill")
    assert not res.holds and len(res.counterexample) == 16
    assert res.counterexample.actions[11] == "evict(1)"
    assert [p.name for p in r.violations] == ["single_prefill"]
    # The design: released followers pin their leader's pages; the same scenario passes.
    assert explore(FlightSpec(burst(3, eviction=True, policy=Policy(capacity=2)))).ok


def test_coordination_none_has_no_flights_and_single_prefill_does_not_apply():
    spec = FlightSpec(SCENARIOS["burst3-abort"].with_policy(coordination="none"))
    r = explore(spec)
    assert r.ok and r.stats.states == 468
    assert "single_prefill" not in [p.name for p in r.properties]


def test_json_shape_and_statistics():
    r = explore(VARIANTS["insert-on-miss"].demo_spec())
    out = r.to_json()
    assert out["verdict"] == "violated"
    assert out["counterexample"] == ["arrive(0)", "admit(0)"]
    assert set(out["stats"]) >= {"states", "edges", "depth", "states_per_second"}
    assert out["stats"]["states"] == 48


def test_state_limit_is_a_clear_error():
    with pytest.raises(StateLimitExceeded, match="more than 10 states"):
        explore(FlightSpec(SCENARIOS["burst2"]), max_states=10)


# ---------------------------------------------------------------- toy models: the checker checked
class Toy(GenericModel):
    """A minimal checkable model: states are tuples, one 'request'."""

    num_requests = 1

    def __init__(self, edges, live, initial=(0,)):
        self.edges, self.live, self._init = edges, live, initial

    def initial(self):
        return self._init

    def successors(self, s):
        return [(Action(name, 0), t) for name, t in self.edges(s)]

    def is_live(self, s, i):
        return self.live(s)


def test_toy_models_and_the_spec_satisfy_the_checkable_model_protocol():
    assert isinstance(Toy(lambda s: [], live=lambda s: False), CheckableModel)
    assert isinstance(FlightSpec(SCENARIOS["burst2"]), CheckableModel)
    assert not isinstance(object(), CheckableModel)


def test_toy_counter_has_k_plus_one_states_and_its_invariant_holds():
    k = 7
    toy = Toy(lambda s: [("prefill", (s[0] + 1,))] if s[0] < k else [], live=lambda s: s[0] < k)
    props = [always("bounded", "x stays below k+1")(lambda spec, s: s[0] <= k),
             sometimes("reaches_k", "x reaches k")(lambda spec, s: s[0] == k),
             deadlock_free("no_deadlock", ""), eventually("eventually_terminates", "")]
    r = explore(toy, properties=props)
    assert r.ok and r.stats.states == k + 1 and r.stats.depth == k
    bad = [always("small", "x stays below 3")(lambda spec, s: s[0] < 3)]
    r = explore(toy, properties=bad)
    assert r.result("small").counterexample.actions == ["prefill(0)"] * 3


def test_toy_deadlock_is_found_with_its_shortest_path():
    # Two lock takers in opposite order: state = (a_locks, b_locks, owner_x, owner_y).
    def edges(s):
        a, b, x, y = s
        out = []
        if a == 0 and x == 0:
            out.append(("admit", (1, b, 1, y)))
        if a == 1 and y == 0:
            out.append(("prefill", (2, b, 0, 0)))  # takes y, finishes, releases both
        if b == 0 and y == 0:
            out.append(("decode", (a, 1, x, 2)))
        if b == 1 and x == 0:
            out.append(("finish", (a, 2, 0, 0)))
        return out
    toy = Toy(edges, live=lambda s: s[0] < 2 or s[1] < 2, initial=(0, 0, 0, 0))
    r = explore(toy, properties=[deadlock_free("no_deadlock", ""), eventually("eventually_terminates", "")])
    res = r.result("no_deadlock")
    assert not res.holds and len(res.counterexample) == 2
    assert set(res.counterexample.actions) == {"admit(0)", "decode(0)"}
    assert not r.result("eventually_terminates").holds


def test_toy_fairness_a_cycle_with_an_always_enabled_exit_is_not_a_violation():
    # 0 <-> 1 by engine steps, and 'finish' is enabled in both: weak fairness forces it.
    def edges(s):
        x = s[0]
        if x == 2:
            return []
        return [("decode", (1 - x,)), ("finish", (2,))]
    toy = Toy(edges, live=lambda s: s[0] < 2)
    r = explore(toy, properties=[eventually("eventually_terminates", "")])
    assert r.ok


def test_toy_fairness_an_exit_enabled_only_sometimes_leaves_a_fair_cycle():
    # 'finish' is enabled only in state 1, so a run can cycle 0 -> 1 -> 0 forever: a real violation.
    def edges(s):
        x = s[0]
        if x == 2:
            return []
        out = [("decode", (1 - x,))]
        if x == 1:
            out.append(("finish", (2,)))
        return out
    toy = Toy(edges, live=lambda s: s[0] < 2)
    r = explore(toy, properties=[eventually("eventually_terminates", "")])
    cx = r.result("eventually_terminates").counterexample
    assert not r.ok and cx.loop and [str(s.action) for s in cx.loop] == ["decode(0)", "decode(0)"]


# Every default scenario under every policy of its grid (spec.scenario.policy_grid), symmetry on: states.
ALL_REDUCED = {
    "burst2": (52, 52, 30, 26),
    "burst3": (160, 160, 84, 78),
    "burst2-abort": (113, 95, 87, 47, 105, 90, 71, 41),
    "burst3-abort": (767, 480, 665, 228, 411, 350, 209, 137),
    "burst3-fail": (732, 450, 644, 221, 375, 319, 195, 129),
    "burst3-expire": (1905, 898, 1348, 474),
    "mixed3": (533, 533, 327, 231),
    "burst2-cap1": (58, 59, 48, 41),
    "burst2-evict": (138, 134, 110, 67, 130, 129, 94, 61),
    "burst3-evict": (230, 233, 132, 117),
    "mixed3-pool": (331, 339, 177, 146),
    "burst4-abort": (3066, 1694, 2728, 814, 1211, 1021, 521, 389),
    "notail": (48, 50, 26, 24),
    "short": (344, 372, 195, 173),
    "nocache": (21, 21, 21, 21),
    # Prompt trees: prefix, then exact single-flight, then no coordination (each over the release x
    # publication grid, and both leader-loss policies where a leader can be lost).
    "doc2": (108, 114, 56, 46, 294, 264, 190, 88, 160, 72, 160, 72),
    "doc3": (431, 452, 165, 142, 892, 839, 512, 283, 658, 283, 658, 283),
    "doc3-abort": (2099, 2064, 1319, 669, 1829, 1895, 959, 571, 3257, 3178, 2283, 961, 3064, 3045, 1940, 875,
                   1809, 764, 1809, 764),
    "doc3-evict": (693, 729, 319, 271, 1357, 1337, 821, 507, 1013, 572, 1013, 572),
    "doc3-pool": (221, 214, 175, 142, 194, 187, 162, 129, 135, 102, 135, 102),
    "doc3-expire": (7362, 5574, 4592, 1822, 2857, 2071, 1843, 746, 658, 283, 658, 283),
    "chat2": (395, 404, 145, 132, 726, 728, 386, 246, 536, 253, 536, 253),
    "tri-abort": (9049, 8449, 5431, 1939, 6637, 6673, 3067, 1471, 6882, 6107, 4614, 1315, 6882, 6107, 4614, 1315,
                  2610, 781, 2610, 781),
}


def test_every_default_scenario_and_policy_has_its_pinned_count_and_passes():
    """The grids under 4,000 states in all by default; the six larger ones (burst4-abort and five prompt
    trees, 50 s) with FLIGHTCHECK_SLOW=1. `flightcheck check --quick` explores every grid and compares
    each count with checks/suite/expectations.json (tests/cli/test_check_suite.py)."""
    assert set(ALL_REDUCED) == set(SCENARIOS)
    for name, counts in ALL_REDUCED.items():
        grid = policy_grid(SCENARIOS[name])
        assert len(grid) == len(counts), name
        if not SLOW and sum(counts) > 4000:
            continue
        for scn, n in zip(grid, counts):
            if name in LARGE_TREES and scn.policy.coordination != "prefix":
                continue  # their exact and uncoordinated grids: FLIGHTCHECK_SLOW=1 (and flightcheck check)
            r = explore(FlightSpec(scn))
            p = scn.policy
            assert (name, p.coordination, p.release, p.publication, p.leader_loss, r.stats.states, r.ok) == \
                (name, p.coordination, p.release, p.publication, p.leader_loss, n, True)
