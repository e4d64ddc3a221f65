"""The spec itself: scenarios, guards, the coordinator's decisions and termination validation."""

import pytest

from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.spec.model import parse_action
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.scenario import SCENARIOS, Policy, Request, Scenario, burst
from flightcheck.spec.state import ABSENT, BLOCKED, DECODE, OPEN, PREFILL, READY, WAITING


def run(spec, *actions):
    return Counterexample.from_actions(spec, actions).final_state(spec)


def test_bad_policy_and_scenario_values_are_named():
    with pytest.raises(ValueError, match="unknown release 'later'"):
        Policy(release="later")
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        Policy(capacity=0)
    with pytest.raises(ValueError, match="at least one full page"):
        Request(0, 0)
    with pytest.raises(ValueError, match="identical prompts"):
        Scenario("x", (Request(0, 2), Request(0, 3)))


def test_first_arrival_leads_and_the_next_identical_one_follows():
    spec = FlightSpec(SCENARIOS["burst2"])
    s = spec.view(run(spec, "arrive(1)", "arrive(0)"))
    assert (s.ph[1], s.mem[1], s.fl[1], s.idx[0]) == (WAITING, 2, OPEN, 2)
    assert (s.ph[0], s.mem[0], s.fl[0]) == (BLOCKED, 2, 0)


def test_without_coordination_every_request_is_solo_and_tracked():
    spec = FlightSpec(SCENARIOS["burst2"].with_policy(coordination="none"))
    s = spec.view(run(spec, "arrive(0)", "arrive(1)"))
    assert (s.ph[0], s.ph[1], s.rel[0], s.rel[1], s.idx[0]) == (WAITING, WAITING, 1, 1, 0)


def test_follower_recovers_every_shareable_page_after_release():
    spec = FlightSpec(SCENARIOS["burst2"])
    s = spec.view(run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)",
                      "prefill(0)", "publish(0)", "prefill(0)", "release(0)", "admit(1)"))
    assert (s.ph[1], s.hit[1], s.done[1]) == (PREFILL, 2, 2)
    assert [s.ref[k] for k in range(2)] == [2, 2]


def test_incremental_publication_comes_before_the_next_prefill():
    spec = FlightSpec(SCENARIOS["burst2"])
    state = run(spec, "arrive(0)", "admit(0)", "prefill(0)")
    assert not spec.guard(state, Action("prefill", 0))
    assert spec.guard(state, Action("publish", 0))


def test_after_prefill_release_waits_for_publication_of_the_leaders_pages():
    spec = FlightSpec(SCENARIOS["burst2"].with_policy(publication="on-completion"))
    state = run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "prefill(0)", "prefill(0)")
    assert spec.view(state).ph[0] == DECODE
    assert not spec.guard(state, Action("release", 0))
    state = spec.apply(state, Action("publish", 0))
    assert spec.guard(state, Action("release", 0))


def test_on_completion_release_waits_for_the_leader_to_terminate():
    spec = FlightSpec(SCENARIOS["burst2"].with_policy(release="on-completion"))
    state = run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)",
                "publish(0)", "prefill(0)")
    assert not spec.guard(state, Action("release", 0))
    state = spec.apply(state, Action("finish", 0))
    assert spec.guard(state, Action("release", 0))


def test_capacity_bounds_admission():
    spec = FlightSpec(burst(2, classes=2, policy=Policy(capacity=1)))
    state = run(spec, "arrive(0)", "arrive(1)", "admit(0)")
    assert not spec.guard(state, Action("admit", 1))


def test_unknown_and_terminated_ids_are_rejected_with_the_state_unchanged():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    state = run(spec, "arrive(0)", "abort(0)")
    for i in (0, 1, 2):  # terminated, never submitted, never-existing
        assert spec.guard(state, Action("notify", i))
        assert spec.apply(state, Action("notify", i)) == state
    assert not spec.guard(run(spec, "arrive(1)"), Action("notify", 1))  # live: not a bogus notification


def test_eviction_is_leaf_first_and_never_of_a_referenced_page():
    spec = FlightSpec(SCENARIOS["burst2-evict"])
    state = run(spec, "arrive(0)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)")
    assert not spec.guard(state, Action("evict", 1))  # referenced by r0
    state = run(spec, "arrive(0)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)",
                "prefill(0)", "finish(0)")
    s = spec.view(state)
    assert [s.pg[0], s.ref[0], s.pg[1], s.ref[1]] == [READY, 0, READY, 0]
    assert not spec.guard(state, Action("evict", 0))  # its successor A1 is still cached
    assert spec.guard(state, Action("evict", 1))


def test_action_order_is_fixed_and_deterministic():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    names = [str(a) for a in spec.actions]
    assert names[:2] == ["arrive(0)", "arrive(1)"] and names[-1] == "notify(2)"
    s = spec.initial()
    assert spec.successors(s) == spec.successors(s)
    assert [str(a) for a, _ in spec.successors(s)] == ["arrive(0)", "arrive(1)", "notify(0)", "notify(1)", "notify(2)"]


def test_parse_action_errors_name_the_problem():
    assert parse_action("admit(3)") == Action("admit", 3)
    with pytest.raises(ValueError, match="not an action: 'admit 3'"):
        parse_action("admit 3")
    with pytest.raises(ValueError, match="step 1: admit\\(0\\) is not enabled"):
        Counterexample.from_actions(FlightSpec(SCENARIOS["burst2"]), ["admit(0)"])


def test_terminated_requests_forget_their_history():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    a = run(spec, "arrive(0)", "admit(0)", "prefill(0)", "abort(0)")
    b = run(spec, "arrive(0)", "abort(0)")
    assert spec.view(a).ph[0] == spec.view(b).ph[0] != ABSENT
    assert a == b
