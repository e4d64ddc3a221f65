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


def test_pressure_programs_keep_the_cache_full_and_evict_the_least_recently_used_page(monkeypatch):
    import random

    from flightcheck.checks.conform.generate import pressure_program
    from flightcheck.impl.pages import PagePool

    programs = [pressure_program(random.Random(k)) for k in range(20)]
    result = run_programs(programs)
    assert result.ok, result.failure.format()
    assert result.features["evictions"] >= 20 and result.features["capacity_full"] > 0, result.features
    # An engine whose eviction takes the most recently used leaf is caught by the recency check alone
    # (the spec lets any unreferenced leaf go).
    def most_recent(self):
        leaves = [p for p in self.cached.values() if self.pages[p].ref_count == 0
                  and self.pages[p].key not in self.num_cached_children]
        return max(leaves, key=lambda p: self.pages[p].last_used, default=None)

    monkeypatch.setattr(PagePool, "victim", most_recent)
    broken = run_programs(programs, shrink_seconds=10)
    assert not broken.ok and broken.failure.diagnosis.properties == ["evicts_least_recently_used"]
    assert "not the least recently used leaf" in broken.failure.format()


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


def test_a_run_with_an_eos_template_finishes_its_requests_on_eos_at_their_first_token():
    from flightcheck.checks.conform.program import Setup, Template
    from flightcheck.checks.conform.prompts import class_tokens
    from flightcheck.checks.conform.runner import ProgramRun
    a, b = Template(tuple(class_tokens(0, 20, 256)), 4, "A"), Template(tuple(class_tokens(1, 20, 256)), 4, "B")
    program = Program(Setup({"num_pages": 12, "max_running": 2}, (a, b), eos_template=0),
                      (("arrive", 0, 0.0, 0), ("arrive", 1, 0.8, 1), ("arrive", 0, 0.8, 2), ("step", 2)))
    assert Program.from_json(program.to_json()) == program and "EOS: t0's first token" in program.lines()[0]
    run = ProgramRun(program.setup)
    for op in program.ops:
        run.execute(op)
    run.drain()
    reasons = {r.request_id: (r.finish_reason, len(r.output_token_ids)) for r in run.engine.scheduler.requests.values()}
    assert reasons == {0: ("eos", 1), 1: ("length", 4), 2: ("eos", 1)} and run.outcome().ok


def test_a_run_with_a_stop_template_finishes_its_requests_on_the_stop_string():
    from flightcheck.checks.conform.program import Setup, Template
    from flightcheck.checks.conform.prompts import class_tokens
    from flightcheck.checks.conform.runner import ProgramRun
    a, b = Template(tuple(class_tokens(0, 20, 256)), 4, "A"), Template(tuple(class_tokens(1, 20, 256)), 1, "B")
    program = Program(Setup({"num_pages": 12, "max_running": 2}, (a, b), stop_template=0),
                      (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 1), ("step", 2)))
    assert Program.from_json(program.to_json()) == program
    assert "stop string: t0's first token twice" in program.lines()[0]
    run = ProgramRun(program.setup)
    for op in program.ops:
        run.execute(op)
    run.drain()
    reasons = {r.request_id: (r.finish_reason, len(r.output_token_ids)) for r in run.engine.scheduler.requests.values()}
    # The tiny model repeats its first token, so the stop string is complete at the second output.
    assert reasons == {0: ("stop", 2), 1: ("length", 1)} and run.outcome().ok
    assert run.engine.result(0).text == ""  # the text is cut before the stop string


@pytest.mark.parametrize("key", ["eos_template", "stop_template"])
def test_a_special_template_that_names_no_template_is_refused(key):
    program = next(seeded_programs(0, 1)).to_json()
    program["setup"][key] = len(program["setup"]["templates"])
    with pytest.raises(ValueError, match=f"{key} .* names no template"):
        Program.from_json(program)


def test_a_quarter_of_the_seeded_programs_end_requests_on_eos_and_the_rest_are_unchanged():
    programs = list(seeded_programs(0, 200))
    with_eos = sum(p.setup.eos_template is not None for p in programs)
    assert 30 <= with_eos <= 70
    # The draw does not advance the program's generator, so the operations are what they were before.
    import random
    from flightcheck.checks.conform.generate import _eos_template
    rng = random.Random(5)
    before = rng.getstate()
    assert {_eos_template(rng, 3) for _ in range(3)} == {_eos_template(random.Random(5), 3)}
    assert rng.getstate() == before


def test_a_wait_via_a_flight_must_name_the_pages_it_shares(monkeypatch):
    from dataclasses import replace

    from flightcheck.impl.coordinator import Coordinator

    original = Coordinator.arrive

    def arrive(self, *args, **kwargs):
        decision = original(self, *args, **kwargs)
        if decision.via_flight_id is None:
            return decision
        return replace(decision, shared_pages=decision.shared_pages + 1)  # the wrong count in the event

    monkeypatch.setattr(Coordinator, "arrive", arrive)
    result = run_programs(seeded_programs(0, 200), shrink_seconds=10)
    assert not result.ok and "waits_for_shared_pages" in result.failure.diagnosis.properties
    assert "shared_pages: engine" in result.failure.format()


def test_a_finished_request_must_have_its_time_to_first_token(monkeypatch):
    original = Scheduler.prefill

    def prefill(self, work, logits):
        original(self, work, logits)
        work.request.first_token_time = None  # the mistake: the first token's time is not kept

    monkeypatch.setattr(Scheduler, "prefill", prefill)
    result = run_programs(seeded_programs(0, 20), shrink_seconds=5)
    assert not result.ok
    assert any("time to first token is None" in r for r in result.failure.diagnosis.reasons)
