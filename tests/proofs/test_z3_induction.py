"""k-induction: every safety property of the correct designs proved on the default scenarios; the rest pinned."""

from collections import deque

import pytest

from flightcheck.checks.proofs.induction import prove
from flightcheck.checks.proofs.symbolic import checked_properties
from flightcheck.spec.lemmas import lemmas_for
from flightcheck.spec.scenario import RELEASES, SCENARIOS
from flightcheck.spec.variants import VARIANTS

from switches import SLOW  # noqa: E402

# Every property and every lemma is proved on every default scenario, at both release points and both
# publication policies, the eviction scenarios included (pinned release closed the gap that left
# single_prefill only bounded under on-completion publication). Pinned: which proofs need k=2.
K2 = {"single_prefill", "one_busy_per_input", "next_page_uncached", "released_hold_all"}
K2_BY_SCENARIO = {"short": set(), "nocache": set(),  # nothing shareable / no coordination: all k=1
                  "mixed3-pool": {"no_deadlock", "one_busy_per_input", "released_hold_all"}}

# The default run proves a representative third of the default scenarios (each feature once);
# FLIGHTCHECK_SLOW=1 all of them (`flightcheck check` proves all of them every time).
FAST_SCENARIOS = list(SCENARIOS) if SLOW else ["burst2", "burst3-fail", "burst3-expire", "burst2-evict",
                                               "mixed3-pool", "short", "nocache"]


def _check(variant, scenario, release, publication=None, max_k=2):
    scn = SCENARIOS[scenario].with_policy(release=release)
    if publication:
        scn = scn.with_policy(publication=publication)
    spec = VARIANTS[variant].build(scn)
    report = prove(spec, max_k=max_k, depth=2)
    names = [p.name for p in checked_properties(spec)]
    assert [r.property for r in report.results] == names
    assert [r.property for r in report.results + report.lemmas if r.status != "proved"] == []
    k2 = K2_BY_SCENARIO.get(scenario, K2)
    assert {r.property for r in report.results + report.lemmas if r.k == 2} == k2
    # A lemma is only ever assumed once proved.
    assert {x.property for x in report.lemmas} == {"in_bounds"} | {x.name for x in lemmas_for(spec)}
    assert report.ok
    return spec, report


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("scenario", FAST_SCENARIOS)
def test_correct_design_properties_proved_by_k_induction(scenario, release):
    _check("correct", scenario, release)


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_largest_default_scenario_with_a_deeper_base_case(release):
    # FLIGHTCHECK_SLOW=1: BMC to depth 6 before induction; by default depth 3.
    spec = VARIANTS["correct"].build(SCENARIOS["burst4-abort"].with_policy(release=release))
    depth = 6 if SLOW else 3
    report = prove(spec, max_k=2, depth=depth)
    assert {(r.status, r.k) for r in report.results + report.lemmas} == {("proved", 1), ("proved", 2)}
    assert {r.property for r in report.results + report.lemmas if r.k == 2} == K2


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("scenario", ["burst2-abort", "mixed3", "burst3-abort"])
def test_draining_design_properties_proved_too(scenario, release):
    _check("draining", scenario, release)


@pytest.mark.parametrize("publication", ["incremental", "on-completion"])
@pytest.mark.parametrize("scenario", ["burst2", "burst3-abort", "burst3-evict", "burst2-cap1"])
def test_other_publication_policy(scenario, publication):
    _check("correct", scenario, "after-prefill", publication)


@pytest.mark.parametrize("scenario", ["burst2", "mixed3", "burst2-abort"])
def test_without_coordination_everything_applicable_is_proved(scenario):
    spec = VARIANTS["correct"].build(SCENARIOS[scenario].with_policy(coordination="none"))
    report = prove(spec, max_k=1, depth=1)
    assert "single_prefill" not in [r.property for r in report.results]
    assert {r.status for r in report.results + report.lemmas} == {"proved"}


def test_counterexample_to_induction_is_a_real_transition_from_an_unreachable_state():
    # With k=1 alone, single_prefill is not inductive: its counterexample to induction is one step
    # from an unreachable state (k=2 proves it, see above).
    spec = VARIANTS["correct"].build(SCENARIOS["burst3-evict"].with_policy(publication="on-completion"))
    report = prove(spec, max_k=1, depth=2)
    assert report.result("single_prefill").status == "bounded"
    cti = report.result("single_prefill").cti
    assert cti is not None and cti.k == 1 and len(cti.states) == 2
    for action, before, after in zip(cti.actions, cti.states, cti.states[1:]):
        act = next(a for a in spec.actions if str(a) == action)
        assert spec.guard(before, act) and spec.apply(before, act) == after
    prop = next(p for p in checked_properties(spec) if p.name == "single_prefill")
    assert prop.holds(spec, cti.states[0]) and not prop.holds(spec, cti.states[-1])
    seen, queue = {spec.initial()}, deque([spec.initial()])
    while queue:
        for _a, t in spec.successors(queue.popleft()):
            if t not in seen:
                seen.add(t)
                queue.append(t)
    assert cti.states[0] not in seen
    text = cti.format(spec)
    assert text.startswith("counterexample to induction for single_prefill (k=1), from the unreachable state:")
    assert "PAGE PREFILLED TWICE" in text


def test_lemmas_hold_on_every_reachable_state_of_the_explorer_graph():
    for variant, scenario, publication in (("correct", "burst3-abort", "incremental"),
                                           ("draining", "burst3-abort", "on-completion"),
                                           ("correct", "burst3-evict", "on-completion"),
                                           ("correct", "burst3-fail", "incremental"),
                                           ("correct", "burst3-expire", "on-completion"),
                                           ("correct", "mixed3-pool", "incremental")):
        spec = VARIANTS[variant].build(SCENARIOS[scenario].with_policy(publication=publication))
        seen, queue = {spec.initial()}, deque([spec.initial()])
        while queue:
            s = queue.popleft()
            for lemma in lemmas_for(spec):
                assert lemma.holds(spec, s), (variant, lemma.name, s)
            for _a, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    queue.append(t)


def test_a_mutant_is_reported_violated_never_proved():
    spec = VARIANTS["no-unknown-check"].demo_spec()
    report = prove(spec, max_k=2, depth=1)
    r = report.result("termination_validated")
    assert (r.status, r.k) == ("violated", 1) and len(r.counterexample) == 1
    assert r.counterexample.actions[0].startswith("notify(")
    assert not report.ok
    # Everything the bug does not touch is still proved.
    assert [x.property for x in report.results if x.status != "proved"] == ["termination_validated"]


def test_termination_validated_needs_the_known_lemma_and_says_so():
    _spec, report = _check("correct", "burst2", "after-prefill")
    assert "live_is_known" in report.result("termination_validated").support
    assert report.result("single_prefill").summary().startswith("single_prefill: proved (k=2, with ")
    assert {"next_page_uncached", "released_hold_all"} <= set(report.result("single_prefill").support)
