"""A guard's conjuncts, named from its source: they agree with the guard on every state, for every variant."""

from __future__ import annotations

import dataclasses

import pytest

from flightcheck.checks.conform.explain import explain_guard
from flightcheck.checks.explore.explorer import explore
from flightcheck.spec.conjuncts import conjuncts, false_conjuncts
from flightcheck.spec.actions import parse_action
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_false_conjuncts_are_exactly_why_a_guard_is_false(name):
    # On the first 150 states of each variant's demo graph: an enabled action has no false conjunct, a
    # disabled one at least one, and a guard's own conjuncts all hold exactly when the guard does.
    spec = VARIANTS[name].demo_spec()
    for state in list(explore(spec).graph)[:150]:
        for action in spec.actions:
            enabled = bool(spec.guard(state, action))
            assert bool(false_conjuncts(spec, state, action)) is not enabled, (name, str(action), state)
            own = conjuncts(spec, state, action)
            if own and own[0].method == "g_" + action.name:
                assert all(c.holds for c in own) is enabled, (name, str(action), state)
            if not enabled:
                assert "guard false" not in " ".join(explain_guard(spec, state, action))


def test_a_variant_s_own_guard_is_named_where_the_words_for_the_correct_design_fall_short():
    spec = VARIANTS["stranded-followers"].demo_spec()
    state = spec.initial()
    for text in ("arrive(0)", "arrive(1)", "abort(0)"):
        state = spec.apply(state, parse_action(text))
    (reached,) = false_conjuncts(spec, state, Action("release", 0))
    assert (reached.method, reached.label, reached.args) == ("release_guard", "reached", {"f": 0})
    assert reached.definition.startswith("Or(s.ph[f] == FINISHED")  # the variant waits for a finish only
    assert explain_guard(spec, state, Action("release", 0))[0].startswith("reached is false")


def test_an_early_return_names_the_policy_that_has_no_such_action():
    scenario = SCENARIOS["burst2"]
    spec = FlightSpec(scenario, dataclasses.replace(scenario.policy, coordination="none"))
    (off,) = false_conjuncts(spec, spec.initial(), Action("release", 0))
    assert (off.method, off.label) == ("g_release", "self.policy.single_flight")
