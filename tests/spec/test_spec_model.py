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
    with pytest.raises(ValueError, match="num_pages=0 needs a tail"):
        Request(0, 0, has_tail=False)
    with pytest.raises(ValueError, match="tail_tokens must be 1..15"):
        Request(0, 1, tail_tokens=16)
    with pytest.raises(ValueError, match="single-flight needs prefix caching"):
        Policy(prefix_caching=False)
    with pytest.raises(ValueError, match="unknown leader_loss 'retry'"):
        Policy(leader_loss="retry")
    with pytest.raises(ValueError, match="cannot hold a request that needs 3 pages"):
        burst(2, num_pages=2)
    with pytest.raises(ValueError, match="either the engine's own pool"):
        burst(2, num_pages=6, eviction=True)
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
    state = run(spec, "arrive(0)", "abort(0)", "release(0)")
    for i in (0, 1, 2):  # terminated, never submitted, never-existing
        assert spec.guard(state, Action("notify", i))
        assert spec.apply(state, Action("notify", i)) == state
    assert not spec.guard(run(spec, "arrive(1)"), Action("notify", 1))  # live: not a bogus notification


def test_eviction_is_leaf_first_and_never_of_a_referenced_page():
    spec = FlightSpec(SCENARIOS["burst2-evict"])
    state = run(spec, "arrive(0)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)")
    assert not spec.guard(state, Action("evict", 1))  # referenced by r0
    state = run(spec, "arrive(0)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)",
                "prefill(0)", "finish(0)", "release(0)")
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


def test_the_spec_pages_hold_as_many_tokens_as_the_engines():
    from flightcheck.impl.pages import PAGE_SIZE
    from flightcheck.spec.scenario import PAGE_TOKENS
    assert PAGE_TOKENS == PAGE_SIZE


def test_a_terminated_leader_settles_its_flight_before_anything_else():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    state = run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "abort(0)")
    assert [str(a) for a in spec.enabled(state)] == ["release(0)"]
    s = spec.view(state)
    assert (s.pubd[0], s.ref[0]) == (1, 1)  # the aborted leader still holds its published page
    s = spec.view(spec.apply(state, Action("release", 0)))
    assert (s.ph[1], s.pubd[1], s.ref[0], s.pubd[0]) == (WAITING, 1, 1, 0)  # the follower pinned it


def test_released_followers_pin_the_leaders_pages_and_their_pins_become_hits():
    spec = FlightSpec(SCENARIOS["burst3"])
    state = run(spec, "arrive(0)", "arrive(1)", "arrive(2)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)",
                "publish(0)", "prefill(0)", "release(0)")
    s = spec.view(state)
    assert (s.pubd[1], s.pubd[2], s.ref[0], s.ref[1]) == (2, 2, 3, 3)
    s = spec.view(spec.apply(state, Action("admit", 1)))
    assert (s.hit[1], s.pubd[1], s.ref[0]) == (2, 2, 3)  # the pins are its hits: no new reference


def test_promotion_hands_the_flight_and_the_pins_to_one_follower():
    spec = FlightSpec(SCENARIOS["burst3-abort"].with_policy(leader_loss="promote"))
    state = run(spec, "arrive(0)", "arrive(1)", "arrive(2)", "admit(0)", "prefill(0)", "publish(0)", "abort(0)")
    assert [str(a) for a in spec.enabled(state)] == ["promote(1)", "promote(2)"]
    s = spec.view(spec.apply(state, Action("promote", 1)))
    assert (s.ph[1], s.mem[1], s.fl[1], s.fl[0], s.pubd[1], s.ref[0]) == (WAITING, 2, OPEN, 0, 1, 1)
    assert (s.ph[2], s.mem[2], s.idx[0]) == (BLOCKED, 2, 2)  # the other follower now waits for r1


def test_an_expired_follower_computes_for_itself_and_stays_known():
    spec = FlightSpec(SCENARIOS["burst3-expire"])
    state = run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "expire(1)")
    s = spec.view(state)
    assert (s.ph[1], s.mem[1], s.rel[1], s.exp[1], s.pubd[1], s.ref[0]) == (WAITING, 0, 1, 1, 1, 2)


def test_a_failed_forward_pass_ends_the_request_as_failed():
    from flightcheck.spec.state import FAILED
    spec = FlightSpec(SCENARIOS["burst3-fail"])
    state = run(spec, "arrive(0)", "admit(0)", "prefill(0)", "fail(0)", "release(0)")
    assert spec.view(state).ph[0] == FAILED


def test_with_a_pool_admission_reserves_and_allocation_waits_for_eviction():
    from flightcheck.spec import pool
    spec = FlightSpec(SCENARIOS["mixed3-pool"])  # 4 pages; each request needs 3 (2 prompt pages + tail, 2 decodes)
    state = run(spec, "arrive(1)", "admit(1)")
    s = spec.view(state)
    assert (pool.free_pages(spec, s), pool.reserved(spec, s, 1)) == (4, 3)
    state = run(spec, "arrive(1)", "arrive(0)", "admit(1)")
    assert not spec.guard(state, Action("admit", 0))  # 4 free, 3 reserved: r0's 3 do not fit


def test_short_prompts_and_no_caching_share_nothing():
    short = FlightSpec(SCENARIOS["short"])
    assert short.layout.num_shareable[0] == 0 and short.scenario.requests[0].num_units == 1
    nocache = FlightSpec(SCENARIOS["nocache"])
    state = run(nocache, "arrive(0)", "admit(0)", "prefill(0)", "prefill(0)", "prefill(0)")
    assert not nocache.guard(state, Action("publish", 0))


def test_describe_names_an_out_of_range_slot_value_instead_of_failing():
    # A counterexample to induction starts from an arbitrary state: one whose lemma in_bounds is not yet
    # proved may hold a phase or page state no run reaches, and it must still be readable.
    from flightcheck.spec.describe import describe
    spec = FlightSpec(SCENARIOS["burst2"])
    s = list(spec.initial())
    s[spec.layout.fields["ph"][0]] = 9
    s[spec.layout.fields["pg"][0]] = 5
    d = describe(spec, tuple(s))
    assert d["requests"]["r0"]["phase"] == "?9" and d["pages"]["A0"]["state"] == "?5"
