"""The deterministic probe: eight cold identical requests, the leader held at a barrier."""

import pytest

from flightcheck.checks.conform.probe import probe
from flightcheck.impl import model_file


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


@pytest.mark.skipif(not model_file.default_path().exists(), reason="SmolLM2 model file not fetched (scripts/setup.sh)")
def test_probe_on_the_real_model():
    none, single = probe("none", model="smollm2"), probe("single-flight", model="smollm2")
    assert none.computations_per_page == [8, 8, 8, 8] and none.page_allocations == 40
    assert single.computations_per_page == [1, 1, 1, 1] and single.page_allocations == 12
    assert none.conformed and single.conformed


def test_an_engine_that_never_returns_fails_the_probe_instead_of_hanging_it(monkeypatch):
    from flightcheck.checks.conform import watchdog
    from flightcheck.impl.scheduler import Scheduler

    monkeypatch.setattr(Scheduler, "admit", lambda self, admission: None)  # admission loops for ever
    monkeypatch.setitem(watchdog.CALL_LIMIT_SECONDS, "tiny", 1.0)
    with pytest.raises(RuntimeError, match="the engine did not finish the probe within 1 s"):
        probe("single-flight")
