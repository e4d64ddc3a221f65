"""The deterministic probe: eight cold identical requests, the leader held at a barrier."""

from flightcheck.checks.probe import probe


def test_without_coordination_every_request_computes_every_shared_page():
    r = probe("none")
    assert r.computations_per_page == [8, 8, 8, 8]
    assert r.destinations_per_page == [8, 8, 8, 8]
    assert r.prefix_lookups == 8
    assert r.page_allocations == 8 * 5          # 69 prompt tokens + 3 more positions = 5 pages each
    assert r.recovered_tokens == 0
    assert r.prefill_tokens == 8 * 69
    assert r.conformed


def test_single_flight_computes_each_shared_page_exactly_once():
    r = probe("single-flight")
    assert r.computations_per_page == [1, 1, 1, 1]
    assert r.destinations_per_page == [1, 1, 1, 1]
    assert r.prefix_lookups == 8
    assert r.page_allocations == 5 + 7 * 1      # followers allocate only their tail page
    assert r.recovered_tokens == 7 * 64
    assert r.prefill_tokens == 69 + 7 * 5
    assert r.conformed


def test_probe_holds_for_the_other_policies():
    r = probe("single-flight", release="on-completion", publication="on-completion")
    assert r.computations_per_page == [1, 1, 1, 1] and r.conformed
    r = probe("none", release="on-completion", publication="on-completion")
    assert r.computations_per_page == [8, 8, 8, 8] and r.conformed
