"""Non-vacuity of the proofs for all sizes: a planted contradictory axiom, an action that can never fire and
a property whose antecedent no state meets each make `prove --unbounded` fail, naming the cause."""

import json

import pytest
import z3
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.suite import stage_prove as stages
from flightcheck.checks.suite.context import Context
from flightcheck.checks.suite.expect import Expectations
from flightcheck.checks.unbounded import checker, config, invariants, signature
from flightcheck.checks.unbounded.config import Config
from flightcheck.checks.unbounded.render import format_report, nonvacuity_line
from flightcheck.checks.unbounded.result import ConfigReport, NonVacuity, Verdict, Witness
from flightcheck.checks.unbounded.run import prove_unbounded
from flightcheck.checks.unbounded.variants import RelModel
from flightcheck.spec.expr import And, Implies
from flightcheck.spec.state import ABSENT

runner = CliRunner()
NONE = Config(coordination="none")  # the cheapest configuration: under a second


def _plant_axiom(monkeypatch, make):
    real = signature.Symbolic.named_axioms
    monkeypatch.setattr(signature.Symbolic, "named_axioms", lambda self: real(self) + [("planted", make(self))])


def _reflexive(sig):
    """Contradicts lt_irreflexive: some page (every sort has one) precedes itself."""
    p = z3.Const("p", sig.sorts["P"])
    return z3.ForAll([p], sig.lt(p, p))


class NeverEvicts(RelModel):
    """An action that can never fire: eviction's guard is False."""

    def g_evict(self, s, k):
        return False


def _plant_never_evicts(monkeypatch):
    monkeypatch.setattr(checker, "build_model", lambda variant, sig, cfg: NeverEvicts(sig, cfg))


def _plant_unmet_antecedent(monkeypatch):
    """A property that holds only because its antecedent never does: an absent request holds no page
    (absent_is_blank rules the antecedent out in every state of the invariant)."""
    absent_holds = lambda m, s, i, k: And(s.ph(i) == ABSENT, s.hold(i, k))  # noqa: E731
    planted = invariants.Invariant(
        "absent_holds_nothing", "property", "planted", lambda m, s: m.sig.forall("R", lambda i: m.sig.forall(
            "P", lambda k: Implies(absent_holds(m, s, i, k), s.pg(k) == 99))),
        antecedent=invariants.Antecedent("an absent request holding a page", lambda m, s: m.sig.exists(
            "R", lambda i: m.sig.exists("P", lambda k: absent_holds(m, s, i, k)))))
    real = checker.properties_for
    monkeypatch.setattr(checker, "properties_for", lambda c: real(c) + [planted])


def test_a_contradictory_axiom_is_named_and_nothing_is_proved(monkeypatch):
    _plant_axiom(monkeypatch, _reflexive)
    r = prove_unbounded("correct", [NONE])
    c = r.configs[0]
    assert not r.ok and c.nonvacuity.axioms == "unsatisfiable"
    assert sorted(c.nonvacuity.core) == ["lt_irreflexive", "planted"]  # the unsat core: exactly the two that clash
    assert {v.status for v in c.verdicts} == {"vacuous"} and r.status("known_once") == "vacuous"
    assert "the axioms are unsatisfiable together: lt_irreflexive, planted" in c.vacuity_failures[0]
    assert "not a proof: vacuous under 1 of 1 configurations" in format_report(r)


def test_an_action_that_never_fires_is_named(monkeypatch):
    _plant_never_evicts(monkeypatch)
    r = prove_unbounded("correct", [NONE])
    c = r.configs[0]
    # every property still reads proved: without the check this run would pass
    assert {v.status for v in c.verdicts} == {"proved"}
    assert not r.ok and c.vacuous == ["evict"]
    assert c.vacuity_failures == ["action evict is enabled in no state of the invariant (it can never fire)"]
    assert nonvacuity_line(c).startswith("VACUOUS: action evict is enabled in no state")


def test_a_property_whose_antecedent_no_state_meets_is_vacuous(monkeypatch):
    _plant_unmet_antecedent(monkeypatch)
    r = prove_unbounded("correct", [NONE])
    v = r.configs[0].verdict("absent_holds_nothing")
    assert not r.ok and v.status == "vacuous" and r.status("absent_holds_nothing") == "vacuous"
    assert "an absent request holding a page" in v.reason
    assert r.configs[0].vacuity_failures == [
        "absent_holds_nothing: its antecedent, an absent request holding a page, holds in no state of the invariant"]
    assert r.status("quiescent_clean") == "proved"  # the others' antecedents are met


@pytest.mark.parametrize("plant,named", [
    (lambda mp: _plant_axiom(mp, lambda sig: z3.BoolVal(False)), "the axioms are unsatisfiable together: planted"),
    (_plant_never_evicts, "action evict is enabled in no state"),
    (_plant_unmet_antecedent, "its antecedent, an absent request holding a page, holds in no state"),
], ids=["axiom", "action", "antecedent"])
def test_the_cli_exits_1_and_names_the_cause(monkeypatch, plant, named):
    monkeypatch.setattr(config, "grid", lambda: [NONE])
    plant(monkeypatch)
    r = runner.invoke(app, ["prove", "--unbounded"])
    assert r.exit_code == 1, r.output
    assert "VACUOUS: " in r.output and named in r.output
    r = runner.invoke(app, ["prove", "--unbounded", "--json"])
    assert r.exit_code == 1
    out = json.loads(r.output)
    assert out["ok"] is False and named in out["vacuous"][0]["failure"]
    assert out["configs"][0]["nonvacuity"]["ok"] is False


def test_the_json_carries_each_actions_witness(monkeypatch):
    monkeypatch.setattr(config, "grid", lambda: [NONE])
    r = runner.invoke(app, ["prove", "--unbounded", "--json"])
    assert r.exit_code == 0, r.output
    nv = json.loads(r.output)["configs"][0]["nonvacuity"]
    assert nv["ok"] and nv["axioms"] == "satisfiable" and nv["initial"]["status"] == "satisfiable"
    assert [w["subject"] for w in nv["actions"]] == [
        "arrive", "admit", "prefill", "publish", "finish", "evict", "abort", "notify", "notify_unknown", "fail"]
    for w in nv["actions"]:
        assert w["status"] == "witnessed" and w["confirmed"], w
        assert w["instance"].startswith(w["subject"]) and 1 <= w["sizes"]["request"] <= 3 and w["state"]
    assert {w["subject"] for w in nv["antecedents"]} == {"in_use_never_evicted", "quiescent_clean"}


def test_the_prove_stage_fails_a_vacuous_configuration(monkeypatch):
    monkeypatch.setattr(config, "grid", lambda: [NONE])
    monkeypatch.setattr(stages, "drift_items", lambda quick: [])
    ctx = Context(quick=True, expect=Expectations.load())
    [row] = stages.unbounded_rows(ctx)
    assert row.ok and "non-vacuous: 10/10 actions, 2/2 antecedents witnessed" in row.detail
    _plant_never_evicts(monkeypatch)
    [row] = stages.unbounded_rows(ctx)
    # the verdicts are the recorded ones; only the witness is missing
    assert not row.ok and row.detail.startswith("vacuous: action evict is enabled in no state of the invariant")


def test_an_unknown_witness_is_shown_but_is_no_failure():
    nv = NonVacuity(actions=[Witness("action", "arrive", "witnessed", "arrive(r0)", {"request": 1}),
                             Witness("action", "promote", "unknown", reason="timeout")])
    c = ConfigReport(NONE, "correct", [Verdict("known_once", "property", "proved", 0.0)], nonvacuity=nv)
    assert c.vacuity_failures == [] and nv.unknown() == ["promote"]
    line = nonvacuity_line(c)
    assert line.startswith("non-vacuous: ") and "1/2 actions witnessed" in line
    assert line.endswith("unknown (timeout, not a failure): promote")
