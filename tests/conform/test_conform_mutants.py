"""Deliberately broken engines are caught: each mutant makes conformance fail with a shrunk run and a
diagnosis naming the property the mistake breaks."""


import pytest

from flightcheck.checks.conform.campaign import run_conformance
from flightcheck.checks.conform.results import ConformOptions
from flightcheck.checks.conform.mutants import MUTANTS

from switches import SLOW  # noqa: E402

EXPECTED = {
    "follower-admitted-early": "follower_waits_for_release",
    "publish-before-compute": "visible_after_compute",
    "forget-released": "termination_validated",
    "leak-ref-on-abort": "refcounts_exact",
    "strand-followers": "no_deadlock",
    "accept-unknown-termination": "termination_validated",
}


def test_every_mutant_is_listed():
    assert {m: MUTANTS[m].property for m in MUTANTS} == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mutant_is_caught_with_the_right_property(name, monkeypatch):
    mutant = MUTANTS[name]
    mutant.apply(monkeypatch.setattr)
    pol = dict(mutant.policy)
    result = run_conformance(ConformOptions(examples=200 if SLOW else 80, max_rules=15, seed=1, shrink_seconds=10,
                                            release=pol.get("release"), publication=pol.get("publication"),
                                            coordination=pol.get("coordination")))
    assert not result.ok
    failure = result.failure
    assert EXPECTED[name] in failure.diagnosis.properties, failure.format()
    # Shrunk (Hypothesis within 10 s, then rule deletion): the engine set-up plus a few rules.
    assert failure.rules[0].startswith("engine(")
    assert 2 <= len(failure.rules) <= 6, failure.format()
    assert EXPECTED[name] in failure.format()


def test_patched_context_restores_the_engine():
    from flightcheck.impl.coordinator import Coordinator
    original = Coordinator.release
    with MUTANTS["forget-released"].patched():
        assert Coordinator.release is not original
    assert Coordinator.release is original
    result = run_conformance(ConformOptions(examples=5, max_rules=10, seed=1, coordination="single-flight"))
    assert result.ok, result.failure.format()


def test_cli_conform_exit_codes():
    import json

    from typer.testing import CliRunner

    from flightcheck.checks.cli.app import app

    runner = CliRunner()
    ok = runner.invoke(app, ["conform", "--examples", "5", "--max-rules", "10", "--seed", "3", "--json"])
    assert ok.exit_code == 0, ok.output
    out = json.loads(ok.output)
    assert out["verdict"] == "conformed" and out["runs"] >= 5 and out["failure"] is None
    bad = runner.invoke(app, ["conform", "--examples", "40", "--seed", "1", "--mutant", "follower-admitted-early",
                              "--coordination", "single-flight", "--json"])
    assert bad.exit_code == 1
    failure = json.loads(bad.output)["failure"]
    assert failure["diagnosis"]["properties"] == ["follower_waits_for_release"]
    assert failure["rules"][0].startswith("engine(") and any(r.startswith("arrive(") for r in failure["rules"])
    assert runner.invoke(app, ["conform", "--model", "huge"]).exit_code == 2
    assert runner.invoke(app, ["conform", "--mutant", "nope"]).exit_code == 2
    assert runner.invoke(app, ["conform", "--release", "later"]).exit_code == 2


def test_conform_stage_rows():
    from flightcheck.checks.cli.stages import conform_stage
    rows = conform_stage(quick=True)
    assert [r.item for r in rows] == ["tiny after-prefill incremental", "tiny after-prefill on-completion",
                                      "tiny on-completion incremental", "tiny on-completion on-completion",
                                      "probe 8 cold identical requests"]
    assert all(r.ok for r in rows), [r.detail for r in rows if not r.ok]
