"""The seed's coordinator: flights, index by input, released set, unknown IDs rejected with state unchanged."""

import pytest

from flightcheck.impl.coordinator import Coordinator
from flightcheck.impl.errors import UnknownRequestError

A = (1, 2, 3)
B = (4, 5)


def test_first_request_leads_identical_ones_follow_others_lead_their_own():
    c = Coordinator("single-flight")
    assert (c.arrive(0, A).role, c.arrive(1, A).role, c.arrive(2, B).role) == ("leader", "follower", "leader")
    assert c.arrive(3, A).flight_id == 0
    assert list(c.flights[0].follower_request_ids) == [1, 3]
    assert c.index == {A: 0, B: 2}


def test_release_removes_flight_and_index_and_remembers_live_ids():
    c = Coordinator("single-flight")
    for i in range(3):
        c.arrive(i, A)
    assert c.release(0) == [1, 2]
    assert c.flights == {} and c.index == {}
    assert c.released_request_ids == {0, 1, 2}
    # A new identical request opens a new flight (flight id = its own request id).
    assert c.arrive(5, A).role == "leader" and 5 in c.flights
    for i in range(3):
        assert c.terminate(i).kind == "released"
    assert c.released_request_ids == set()


def test_terminated_leader_is_not_put_in_released_set():
    c = Coordinator("single-flight")
    c.arrive(0, A)
    c.arrive(1, A)
    assert c.terminate(0).kind == "leader"
    assert c.release(0) == [1]
    assert c.released_request_ids == {1}


def test_unknown_and_double_termination_raise_with_state_unchanged():
    c = Coordinator("single-flight")
    c.arrive(0, A)
    c.arrive(1, A)
    c.release(0)
    c.terminate(1)
    before = c.snapshot()
    for bad in (1, 7):
        with pytest.raises(UnknownRequestError, match=f"unknown request ID {bad}"):
            c.terminate(bad)
        assert c.snapshot() == before


def test_blocked_follower_termination_leaves_the_flight():
    c = Coordinator("single-flight")
    c.arrive(0, A)
    c.arrive(1, A)
    c.arrive(2, A)
    assert c.terminate(1).kind == "follower"
    assert c.release(0) == [2]


def test_coordination_none_puts_every_request_in_released_set():
    c = Coordinator("none")
    d = c.arrive(0, A)
    assert (d.role, d.flight_id) == ("solo", None)
    assert c.arrive(1, A).role == "solo" and c.flights == {}
    assert c.released_request_ids == {0, 1}
    c.terminate(0)
    with pytest.raises(UnknownRequestError):
        c.terminate(0)


def test_an_expired_follower_leaves_the_flight_for_the_released_set():
    c = Coordinator("single-flight")
    for i in range(3):
        c.arrive(i, A)
    c.expire(0, 1)
    assert list(c.flights[0].follower_request_ids) == [2] and 1 in c.released_request_ids


def test_promotion_hands_a_lost_leaders_flight_to_its_first_follower():
    c = Coordinator("single-flight")
    for i in range(3):
        c.arrive(i, A)
    assert c.can_promote(0) is None  # the leader is live
    assert c.terminate(0).kind == "leader"
    assert c.can_promote(0) == 1
    assert c.promote(0) == 1
    f = c.flights[0]
    assert (f.leader_request_id, f.is_leader_live, list(f.follower_request_ids)) == (1, True, [2])
    assert c.terminate(1).kind == "leader" and c.is_known(2)
