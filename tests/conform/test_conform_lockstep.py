"""The real engine conforms to the spec in lockstep: Hypothesis's campaign, the seeded campaign (the same
verdict every run), both release points and publications, the tiny model by default and the real
SmolLM2 in a short run (FLIGHTCHECK_SLOW=1: larger budgets); and the campaign's own misfires, each made
to happen on purpose."""

import pytest

from flightcheck.checks.conform.campaign import run_conformance, run_programs, seeded_programs
from flightcheck.checks.conform.diagnosis import ConformanceError
from flightcheck.checks.conform.program import Program
from flightcheck.checks.conform.results import ConformOptions
from flightcheck.checks.conform.runner import run_program
from flightcheck.impl import model_file
from flightcheck.impl.scheduler import Scheduler
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES

from switches import SLOW  # noqa: E402


@pytest.mark.parametrize("publication", PUBLICATIONS)
@pytest.mark.parametrize("release", RELEASES)
def test_tiny_engine_conforms_under_hypothesis(release, publication):
    result = run_conformance(ConformOptions(release=release, publication=publication,
                                            examples=100 if SLOW else 20, max_rules=25, seed=7))
    assert result.ok, result.failure.format()
    assert result.runs >= 10
    # Runs took engine steps, and their events went through the spec.
    assert result.steps > result.runs and result.events > 2 * result.runs
    assert len(result.transitions) > 20


def test_the_seeded_campaign_gives_the_same_programs_and_verdict_every_time():
    first = [p.dumps() for p in seeded_programs(3, 12)]
    assert first == [p.dumps() for p in seeded_programs(3, 12)]
    assert first[:5] == [p.dumps() for p in seeded_programs(3, 5)]  # a prefix does not depend on the count
    a, b = run_programs(seeded_programs(3, 12)), run_programs(seeded_programs(3, 12))
    assert a.ok and b.ok and (a.runs, a.steps, a.events) == (b.runs, b.steps, b.events) == (12, a.steps, a.events)


def test_the_seeded_campaign_reaches_deep_states():
    result = run_programs(seeded_programs(0, 300 if SLOW else 80))
    assert result.ok, result.failure.format()
    for feature in ("followers_released", "capacity_full", "aborts", "expiries", "failures", "pins", "evictions"):
        assert result.features[feature] > 0, result.features


def test_a_failure_found_while_draining_is_a_failure(monkeypatch, tmp_path):
    # A deadlock shows only when the drain steps: Hypothesis may discard such an example, the campaign may not.
    monkeypatch.setattr(Scheduler, "can_admit", lambda self: None)
    result = run_conformance(ConformOptions(examples=10, max_rules=4, seed=1))
    assert not result.ok and result.failure is not None
    assert "no_deadlock" in result.failure.diagnosis.properties
    assert any("[drain]" in r for r in result.failure.rules)
    seeded = run_programs(seeded_programs(0, 5), save_dir=tmp_path)
    assert not seeded.ok and "no_deadlock" in seeded.failure.diagnosis.properties
    saved = Program.from_json(__import__("json").loads(open(seeded.failure.saved_to).read()))
    assert not run_program(saved).ok  # the saved program replays the failure


def test_a_failing_arrival_is_in_the_shrunk_run(monkeypatch):
    def broken(self, request):
        raise RuntimeError("the coordinator lost its index")
    monkeypatch.setattr(Scheduler, "arrive", broken)
    result = run_programs(seeded_programs(0, 3))
    assert not result.ok
    assert result.failure.rules[-1].startswith("arrive(") or any(r.startswith("arrive(") for r in result.failure.rules)
    assert "RuntimeError during arrive" in result.failure.diagnosis.summary
    assert [op[0] for op in result.failure.program.ops] == ["arrive"]


def test_a_conformance_error_raised_inside_an_operation_is_kept_as_the_runs_diagnosis():
    from flightcheck.checks.conform.program import Setup, Template
    from flightcheck.checks.conform.runner import ProgramRun
    run = ProgramRun(Setup({"num_pages": 8}, (Template((3,) * 40, 2),)))
    run.execute(("arrive", 0, 0.0, 0))
    run.engine.scheduler.waiting.clear()  # the engine forgets a waiting request
    with pytest.raises(ConformanceError):
        run.execute(("step", 1))
    assert run.outcome().diagnosis is not None and run.outcome().diagnosis.kind in ("state", "stuck")


@pytest.mark.slow
@pytest.mark.skipif(not model_file.default_path().exists(), reason="SmolLM2 model file not fetched (scripts/setup.sh)")
def test_real_model_conforms():
    result = run_programs(seeded_programs(0, 8 if SLOW else 2), "smollm2")
    assert result.ok, result.failure.format()
    assert result.runs >= 2 and result.steps > 0
