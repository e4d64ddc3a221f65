"""Counterexample replay: a design variant's shortest counterexample reproduces on the engine broken the
same way, and the correct engine departs from it at the step where the variant goes wrong."""

import json

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.explore.explorer import explore
from flightcheck.checks.conform.mutants import MUTANTS
from flightcheck.checks.conform.replay import load_path, replay
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS

PAIRS = [("forget-at-release", "forget-released"), ("no-unknown-check", "accept-unknown-termination"),
         ("stranded-followers", "strand-followers")]


def counterexample(variant):
    v = VARIANTS[variant]
    spec = v.demo_spec()
    return spec, explore(spec).result(v.expected_violation).counterexample.actions


@pytest.mark.parametrize("variant,mutant", PAIRS)
def test_variant_counterexample_reproduces_on_the_broken_engine(variant, mutant, monkeypatch):
    spec, actions = counterexample(variant)
    correct = replay(actions, spec.scenario, spec.policy, spec_class=VARIANTS[variant].spec_class)
    assert not correct.followed and not correct.reproduced
    MUTANTS[mutant].apply(monkeypatch.setattr)
    broken = replay(actions, spec.scenario, spec.policy, spec_class=VARIANTS[variant].spec_class)
    assert broken.followed and broken.reproduced, broken.format()
    assert VARIANTS[variant].expected_violation in broken.spec_violation
    assert all(s.same for s in broken.steps)


def test_forget_at_release_departs_at_the_release():
    spec, actions = counterexample("forget-at-release")
    r = replay(actions, spec.scenario, spec.policy, spec_class=VARIANTS["forget-at-release"].spec_class)
    assert r.steps[-1].action == "release(0)" and not r.steps[-1].same
    assert "rel[0]: spec 0, engine 1" in r.steps[-1].note
    assert [s.same for s in r.steps[:-1]] == [True] * (len(r.steps) - 1)


def test_correct_path_is_followed_with_the_engine_releasing_at_once():
    actions = ["arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)",
               "prefill(0)", "release(0)", "admit(1)", "prefill(1)", "finish(0)", "decode(1)", "finish(1)"]
    # The engine releases in the same call as the publication that reached the release point.
    r = replay(actions, SCENARIOS["burst2"])
    assert r.followed and not r.spec_violation and not r.reproduced
    assert len(r.steps) == len(actions)


def test_engine_admits_the_first_waiting_request_that_fits():
    scn = SCENARIOS["burst2"].with_policy(coordination="none")
    r = replay(["arrive(0)", "arrive(1)", "admit(1)"], scn)
    assert not r.followed
    assert r.steps[-1].note == "the engine admits the first waiting request that fits, which is another request"


def test_load_path_formats_and_errors():
    assert load_path("arrive(0)\n  2. admit(0)   r0: prefill\n")[0] == ["arrive(0)", "admit(0)"]
    assert load_path('["arrive(1)"]')[0] == ["arrive(1)"]
    actions, meta = load_path(json.dumps({"counterexample": ["arrive(0)"], "scenario": "burst2", "variant": "x"}))
    assert actions == ["arrive(0)"] and meta == {"scenario": "burst2", "variant": "x"}
    with pytest.raises(ValueError, match="line 2: not an action: 'jump\\(0\\)'"):
        load_path("arrive(0)\njump(0)\n")
    with pytest.raises(ValueError, match="field 'counterexample': no actions"):
        load_path('{"verdict": "ok", "counterexample": null}')


def test_cli_replay(tmp_path):
    runner = CliRunner()
    out = runner.invoke(app, ["explore", "--variant", "forget-at-release", "--json"])
    assert out.exit_code == 1
    cx = tmp_path / "cx.json"
    cx.write_text(out.output)
    r = runner.invoke(app, ["replay", str(cx), "--json"])
    assert r.exit_code == 1 and json.loads(r.output)["followed"] is False
    r = runner.invoke(app, ["replay", str(cx), "--mutant", "forget-released", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["reproduced"] is True
    assert runner.invoke(app, ["replay", str(cx), "--mutant", "nope"]).exit_code == 2
    assert runner.invoke(app, ["replay", str(cx), "--scenario", "nope"]).exit_code == 2
