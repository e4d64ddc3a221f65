"""Prompt trees and prefix coordination in the spec: shared page slots, leaf-first eviction under a shared
parent, refcounts over shared parents, and the ``via`` wait (its choice, its release, expiry, promotion)."""

import pytest

from flightcheck.checks.explore.explorer import explore
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.scenario import SCENARIOS, Policy, Request, Scenario, tree
from flightcheck.spec.state import BLOCKED, NOT_CACHED, OPEN, PREFILL, READY, WAITING


def run(spec, *actions):
    s = spec.initial()
    for text in actions:
        name, arg = text.rstrip(")").split("(")
        a = Action(name, int(arg))
        assert spec.guard(s, a), f"{a} is not enabled after {actions}"
        s = spec.apply(s, a)
    return spec.view(s)


def test_a_shared_page_is_one_slot_and_the_tree_has_its_edges():
    lay = FlightSpec(SCENARIOS["doc2"]).layout
    assert lay.page_slots == [(0, 0), (0, 1), (1, 1)]
    assert lay.class_pages == [[0, 1], [0, 2]]
    assert lay.page_children == [(1, 2), (), ()]
    assert lay.shared == [[2, 1], [1, 2]]
    # A conversation: the second turn's first page is the first turn's only shareable page.
    assert FlightSpec(SCENARIOS["chat2"]).layout.class_pages == [[0], [0, 1]]


def test_identical_prompt_scenarios_are_trees_of_one_path_per_class():
    lay = FlightSpec(SCENARIOS["mixed3"]).layout
    assert lay.class_pages == [[0, 1], [2, 3]] and lay.shared == [[2, 0], [0, 2]]


@pytest.mark.parametrize("prefixes, message", [
    (((2, 0, 1),), "names a class no request has"),
    (((0, 1, 1),), "parent class must appear before"),
    (((1, 0, 3),), "can share 1..2 shareable pages"),
    (((1, 0, 0),), "can share 1..2 shareable pages"),
    (((1, 0, 1), (1, 0, 2)), "two prefix entries"),
])
def test_a_bad_prompt_tree_is_refused_with_what_is_wrong(prefixes, message):
    with pytest.raises(ValueError, match=message):
        Scenario("t", (Request(0, 2), Request(1, 2)), prefixes=prefixes)


def test_refcount_of_a_shared_parent_counts_every_child_that_holds_it():
    spec = FlightSpec(SCENARIOS["doc2"].with_policy(coordination="single-flight"))
    s = run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "admit(1)")
    assert (s.pg[0], s.ref[0], s.hit[1]) == (READY, 2, 1)  # the second prompt hit the shared page


def test_eviction_takes_leaves_first_and_never_a_parent_a_child_still_needs():
    spec = FlightSpec(SCENARIOS["doc3-evict"].with_policy(coordination="none"))
    s = run(spec, "arrive(0)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)", "prefill(0)",
            "finish(0)", "arrive(1)", "admit(1)", "prefill(1)", "publish(1)", "prefill(1)", "finish(1)")
    assert [s.pg[k] for k in range(3)] == [READY, READY, READY] and [s.ref[k] for k in range(3)] == [0, 0, 0]
    state = s.vals
    assert not spec.guard(state, Action("evict", 0))  # both children are cached
    state = spec.apply(state, Action("evict", 1))
    assert not spec.guard(state, Action("evict", 0))  # one child is left
    state = spec.apply(state, Action("evict", 2))
    assert spec.guard(state, Action("evict", 0))


def test_prefix_coordination_waits_via_the_flight_and_pins_only_the_shared_pages():
    spec = FlightSpec(SCENARIOS["doc2"])
    s = run(spec, "arrive(0)", "arrive(1)")
    assert (s.ph[1], s.mem[1], s.fl[1], s.via[1], s.pubd[1]) == (BLOCKED, 2, OPEN, 1, 0)
    s = run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)",
            "prefill(0)", "release(0)")
    assert (s.ph[1], s.via[1], s.pubd[1], s.ref[0], s.ref[1]) == (WAITING, 0, 1, 2, 1)
    s = run(spec, "arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)",
            "prefill(0)", "release(0)", "admit(1)")
    assert (s.ph[1], s.hit[1], s.done[1]) == (PREFILL, 1, 1)  # it computes its own page and tail only


def test_min_shared_pages_above_the_overlap_means_no_wait():
    spec = FlightSpec(SCENARIOS["doc2"].with_policy(min_shared_pages=2))
    s = run(spec, "arrive(0)", "arrive(1)")
    assert (s.ph[1], s.via[1]) == (WAITING, 0)


def _three_prompts():
    # A: three pages; B shares one with A; C shares two with A (so one with B); D shares one with A.
    reqs = (Request(0, 3), Request(1, 3), Request(2, 3), Request(3, 3))
    return Scenario("t", reqs, prefixes=((1, 0, 1), (2, 0, 2), (3, 0, 1)), policy=Policy(coordination="prefix"))


def test_a_request_waits_via_the_flight_sharing_the_most_pages_and_the_earliest_on_a_tie():
    spec = FlightSpec(_three_prompts())
    s = run(spec, "arrive(1)", "arrive(0)")  # B first: A waits via B (one shared page)
    assert s.via[0] == 2
    spec = FlightSpec(_three_prompts())
    s = run(spec, "arrive(0)")
    s = spec.view(spec.apply(spec.apply(s.vals, Action("arrive", 1)), Action("arrive", 2)))
    assert (s.via[1], s.via[2]) == (1, 1)  # C shares 2 with A, 1 with B: it waits via A
    s = spec.view(spec.apply(s.vals, Action("arrive", 3)))
    assert s.via[3] == 1  # D shares one page with A, B and C alike: the earliest leader's flight


def test_exact_followers_of_a_waiting_leader_stay_blocked_until_its_own_release_point():
    spec = FlightSpec(SCENARIOS["doc3"])
    s = run(spec, "arrive(0)", "arrive(1)", "arrive(2)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)",
            "publish(0)", "prefill(0)", "release(0)")
    assert (s.ph[1], s.ph[2], s.mem[2], s.fl[1]) == (WAITING, BLOCKED, 2, OPEN)


def test_a_waiting_leader_that_expires_still_leads_its_flight():
    spec = FlightSpec(SCENARIOS["doc3-expire"])
    s = run(spec, "arrive(0)", "arrive(1)", "arrive(2)", "expire(1)")
    assert (s.ph[1], s.via[1], s.mem[1], s.rel[1], s.exp[1], s.pubd[1]) == (WAITING, 0, 2, 0, 1, 0)
    assert (s.ph[2], s.mem[2]) == (BLOCKED, 2)


def test_promotion_hands_a_lost_waiting_leader_s_wait_to_the_follower_it_promotes():
    spec = FlightSpec(SCENARIOS["doc3-abort"].with_policy(leader_loss="promote"))
    s = run(spec, "arrive(0)", "arrive(1)", "arrive(2)", "abort(1)")
    assert s.via[1] == 1  # kept while its flight is pending
    s = run(spec, "arrive(0)", "arrive(1)", "arrive(2)", "abort(1)", "promote(2)")
    assert (s.ph[2], s.via[2], s.mem[2], s.fl[2], s.fl[1], s.via[1]) == (BLOCKED, 1, 3, OPEN, 0, 0)


def test_exact_single_flight_on_a_tree_lets_siblings_compute_the_shared_page_without_a_violation():
    # Not coordinated across prompts: the second copy of the shared page is no duplicate of the design's.
    r = explore(FlightSpec(SCENARIOS["doc2"].with_policy(coordination="single-flight")))
    assert r.ok and r.result("single_prefill").holds
    assert "waits_for_shared_pages" not in [p.name for p in r.properties]


def test_under_prefix_coordination_a_duplicate_of_a_shared_page_would_be_flagged():
    # The same graph's states, judged as prefix coordination judges them: a sibling computing the shared
    # page while the other holds it privately raises g_dup.
    spec = FlightSpec(SCENARIOS["doc2"])
    assert spec.coordinated(1, 0, 0) and not spec.coordinated(1, 0, 1)
    exact = FlightSpec(SCENARIOS["doc2"].with_policy(coordination="single-flight"))
    assert not exact.coordinated(1, 0, 0)


def test_every_tree_scenario_sometimes_waits_via_another_prompt_s_flight_under_prefix():
    for name, scn in SCENARIOS.items():
        if scn.prefixes and scn.policy.prefix_flights:
            r = explore(FlightSpec(scn))
            assert r.result("sometimes_waits_via").holds, name
