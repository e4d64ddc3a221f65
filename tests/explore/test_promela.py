"""The Promela export: printed from the spec's own code, checked by SPIN against the explorer.

SPIN (Debian's ``spin``, installed by scripts/setup.sh) runs on small exported scenarios here; the
scale scenarios are the benchmark's (scripts/bench_explore.py). Verifiers are compiled with -O0,
which builds in a second instead of several.
"""

import pytest

from flightcheck.checks.explore.batched import explore_batched
from flightcheck.checks.promela.export import export_promela, variable_name
from flightcheck.checks.promela.spin import SPIN_START_STATES, available, spin_liveness, spin_safety
from flightcheck.checks.promela.terms import Term
from flightcheck.spec.expr import If
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.properties import properties_for
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS

from switches import SLOW  # noqa: E402

needs_spin = pytest.mark.skipif(not available(), reason="spin and gcc are installed by scripts/setup.sh")


def safety_violations(result):
    return sorted(p.name for p in result.violations if p.kind in ("always", "deadlock_free"))


def test_the_model_has_a_step_per_enabled_action_instance_and_an_assertion_per_property():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    model = export_promela(spec)
    assert model.num_steps == len(spec.actions) == model.text.count(":: d_step")
    expected = [p.name for p in properties_for(spec) if p.kind in ("always", "deadlock_free")]
    assert list(model.assertions) == expected
    for name in spec.layout.slot_names():
        assert f"{variable_name(name)} = 0" in model.text
    # Without coordination release is never enabled (its guard folds to False): no step for it.
    solo = export_promela(FlightSpec(SCENARIOS["burst2-abort"].with_policy(coordination="none")))
    assert "release(0)" not in solo.text and solo.num_steps == len(spec.actions) - 2


def test_the_liveness_model_gives_each_engine_action_its_own_process():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    model = export_promela(spec, liveness=True)
    engine = [a for a in spec.actions if a.is_engine]
    assert model.num_processes == len(engine) + 1 == model.text.count("active proctype")
    assert model.ltl == ["eventually_terminates_0", "eventually_terminates_1"]
    assert "ltl eventually_terminates_1 { [] <> (!live_1) }" in model.text


def test_a_python_if_on_a_state_value_is_an_error_not_a_silent_branch():
    x = Term("ph_0")
    with pytest.raises(TypeError, match="no truth value"):
        if x == 1:
            pass
    assert str(If(x == 1, 2, 3)) == "((ph_0 == 1) -> 2 : 3)"


# burst2-abort, a prompt tree under prefix coordination (the exported model carries the via slot and
# the tree's shared page slots like any other), and one where a tie needs the arrival ranks (seq).
@needs_spin
@pytest.mark.parametrize("name, states", [("burst2-abort", 222), ("doc2", 109), ("tri-abort", 6638)])
def test_spin_counts_the_explorers_states_plus_its_start_and_agrees_on_the_correct_design(name, states):
    spec = FlightSpec(SCENARIOS[name])
    r = explore_batched(spec, symmetry=False)
    run = spin_safety(spec, optimize="-O0")
    assert run.states == r.stats.states + SPIN_START_STATES == states
    assert run.violated == [] and r.ok


@needs_spin
def test_spin_under_weak_fairness_agrees_that_the_correct_design_terminates():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    assert explore_batched(spec, symmetry=False).result("eventually_terminates").holds
    assert spin_liveness(spec, optimize="-O0").violated == []


@needs_spin
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["forget-at-release", "via-unshared", "waiters-all-freed"]
                         + (["early-release"] if SLOW else []))
def test_spin_finds_the_same_safety_violations_as_the_explorer(variant):
    spec = VARIANTS[variant].demo_spec()
    r = explore_batched(spec, symmetry=False)
    run = spin_safety(spec, optimize="-O0")
    assert sorted(run.violated) == safety_violations(r) != []
    assert run.states == r.stats.states + SPIN_START_STATES


@needs_spin
def test_spin_under_weak_fairness_finds_the_stranded_followers():
    spec = VARIANTS["stranded-followers"].demo_spec()
    assert not explore_batched(spec, symmetry=False).result("eventually_terminates").holds
    assert spin_liveness(spec, optimize="-O0").violated == ["eventually_terminates"]


@needs_spin
def test_spin_under_weak_fairness_finds_the_followers_promotion_loses():
    # 21 engine processes, the environment and the never claim: one more than NFAIR=6 holds. pan
    # refused to search there, and its refusal (no acceptance cycle printed) once read as "holds".
    spec = VARIANTS["promote-loses-followers"].demo_spec()
    assert export_promela(spec, liveness=True).num_processes == 22
    assert not explore_batched(spec, symmetry=False).result("eventually_terminates").holds
    run = spin_liveness(spec, optimize="-O0")
    assert run.violated == ["eventually_terminates"] and run.states > 0


def test_a_pan_that_did_not_search_is_an_error_not_a_verdict():
    from flightcheck.checks.promela.spin import SpinError, _refuse_errors
    refusal = ("pan: ltl formula eventually_terminates_2\n"
               "pan: error: too many processes -- current max is 22 procs (-DNFAIR=6)\n"
               "\trecompile with -DNFAIR=7\n\npan: elapsed time 1.72e+07 seconds\n")
    with pytest.raises(SpinError, match="too many processes"):
        _refuse_errors(refusal)
    _refuse_errors("State-vector 228 byte, depth reached 306, errors: 1\n     2921 states, stored\n")


def test_an_assertion_pan_prints_cut_at_1000_characters_still_names_its_property():
    from flightcheck.checks.promela.spin import _assertion_name, _normal
    spec = VARIANTS["evict-referenced"].build(SCENARIOS["burst3-evict"])
    assertions = export_promela(spec).assertions
    texts = {_normal(t): name for name, t in assertions.items()}
    long = assertions["quiescent_clean"]
    assert len(long) > 1000
    assert _assertion_name(long[:1000], texts, []) == "quiescent_clean"
    assert _assertion_name(long, texts, ["quiescent_clean"]) is None  # reported twice: an error
    assert _assertion_name("(x_0 == 7)", texts, []) is None
