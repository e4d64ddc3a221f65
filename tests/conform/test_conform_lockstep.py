"""The real engine conforms to the spec in lockstep: both release points, both publication policies,
the tiny model by default and the real SmolLM2 in a short run (FLIGHTCHECK_SLOW=1: larger budgets)."""


import pytest

from flightcheck.checks.conform.campaign import run_conformance
from flightcheck.checks.conform.results import ConformOptions
from flightcheck.impl import model_file
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES

from switches import SLOW  # noqa: E402


@pytest.mark.parametrize("publication", PUBLICATIONS)
@pytest.mark.parametrize("release", RELEASES)
def test_tiny_engine_conforms(release, publication):
    result = run_conformance(ConformOptions(release=release, publication=publication,
                                            examples=100 if SLOW else 25, max_rules=25, seed=7))
    assert result.ok, result.failure.format()
    assert result.runs >= 10
    # Runs took engine steps, and their events went through the spec.
    assert result.steps > result.runs and result.events > 2 * result.runs
    assert len(result.transitions) > 20


def test_conform_reaches_deep_states():
    # 100+ examples switch Hypothesis's targeting on (followers released, leader aborted in prefill,
    # capacity full, evictions).
    result = run_conformance(ConformOptions(examples=300 if SLOW else 100, max_rules=25, seed=2 if SLOW else 4))
    assert result.ok, result.failure.format()
    deep = ["followers_released", "leader_aborted_in_prefill", "capacity_full", "aborts"] + (["evictions"] if SLOW else [])
    for feature in deep:
        assert result.features[feature] > 0, result.features


@pytest.mark.slow
@pytest.mark.skipif(not model_file.default_path().exists(), reason="SmolLM2 model file not fetched (scripts/setup.sh)")
def test_real_model_conforms():
    result = run_conformance(ConformOptions(model="smollm2", examples=12 if SLOW else 3, max_rules=15, seed=0))
    assert result.ok, result.failure.format()
    assert result.runs >= 3 and result.steps > 0
