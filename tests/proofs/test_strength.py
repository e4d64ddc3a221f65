"""A bounded result is never a proof: every verdict says how strong it is, `check` counts the rows apart,
and `--require-proof` (on `prove`, `prove --unbounded` and `check`) fails on anything that is not a proof."""

import json

from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.report.build import build_report
from flightcheck.checks.report.html_page import report_html
from flightcheck.checks.strength import Claim, Strength, induction_claim, weakest
from flightcheck.checks.suite import job as suite
from flightcheck.checks.suite.claims import annotate, claim_of, counts, require_proof, summary_line
from flightcheck.checks.suite.job import Row

runner = CliRunner()
# single_prefill needs k=2 here; allowed k=1 only, it is left to BMC depth 3 (about 3 s).
BOUNDED = ["prove", "--scenario", "burst2-evict", "--release", "after-prefill", "--depth", "3", "--max-k", "1"]


def test_only_the_three_proof_kinds_are_proofs_and_each_says_what_it_is():
    assert [s for s in Strength if s.is_proof] == [Strength.ALL_SIZES, Strength.INDUCTIVE, Strength.EXHAUSTIVE]
    assert Claim(Strength.ALL_SIZES).words() == "proved for all sizes"
    assert induction_claim("proved", 2).words() == "proved for this scenario (k-induction)"
    assert induction_claim("bounded", 4).words() == "no counterexample up to depth 4 (not a proof)"
    assert weakest([Strength.EXHAUSTIVE, Strength.BOUNDED, Strength.ALL_SIZES]) is Strength.BOUNDED
    assert weakest([Strength.BOUNDED, Strength.VIOLATED]) is Strength.VIOLATED


def test_prove_require_proof_fails_on_a_bounded_property_and_names_it():
    r = runner.invoke(app, [*BOUNDED, "--json"])
    assert r.exit_code == 0, r.output  # bounded is not a violation: without the flag it passes
    out = json.loads(r.output)
    single = next(p for p in out["runs"][0]["properties"] if p["name"] == "single_prefill")
    assert single["claim"]["says"] == "no counterexample up to depth 3 (not a proof)" and not single["claim"]["proof"]
    assert out["ok"] and not out["proved"] and [w.split(":")[0] for w in out["not_proofs"]] == ["single_prefill"]
    r = runner.invoke(app, [*BOUNDED, "--require-proof"])
    assert r.exit_code == 1
    assert "--require-proof: not a proof: single_prefill: no counterexample up to depth 3" in " ".join(r.output.split())


def test_prove_require_proof_passes_when_every_property_is_proved():
    r = runner.invoke(app, ["prove", "--scenario", "burst2", "--release", "after-prefill", "--depth", "1",
                            "--require-proof", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["proved"] and {p["claim"]["strength"] for p in out["runs"][0]["properties"]} == {"inductive"}


def test_prove_unbounded_require_proof_names_what_is_not_proved_for_all_sizes(monkeypatch):
    from flightcheck.checks.unbounded import config

    monkeypatch.setattr(config, "grid", lambda: [config.Config(coordination="none")])  # one configuration
    r = runner.invoke(app, ["prove", "--unbounded", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["claims"]["known_once"]["says"] == "proved for all sizes"
    assert out["claims"]["refcounts_exact"]["strength"] == "unproved"  # not modelled: not proved for all sizes
    r = runner.invoke(app, ["prove", "--unbounded", "--require-proof"])
    assert r.exit_code == 1
    assert "--require-proof: not proved for all sizes: refcounts_exact: not proved (not modelled" in r.output


def test_require_proof_goes_with_what_proves():
    assert runner.invoke(app, ["prove", "--engine", "--require-proof"]).exit_code == 2
    assert runner.invoke(app, ["check", "--baseline", "HEAD", "--require-proof"]).exit_code == 2


def _rows():
    """An explore row (exhaustive), a k-induction row with a bounded property the explorer proved on the
    same scenario, one with a bounded property nothing else proved, an all-sizes row and a test row."""
    explored = Row("explore", "burst2 a", True, "", evidence={
        "scenario": "burst2", "policy": {}, "properties": {"single_prefill": "holds", "sometimes_all_finished": "found"}})
    details = {"single_prefill": {"status": "bounded", "k": 2}, "known_once": {"status": "proved", "k": 1},
               "in_bounds": {"status": "bounded", "k": 2, "lemma": True}}
    covered = Row("prove", "burst2 a", True, "", evidence={"scenario": "burst2", "policy": {}, "details": details})
    alone = Row("prove", "doc2 b", True, "26/27 proved", evidence={"scenario": "doc2", "policy": {}, "details": details})
    sizes = Row("prove", "for all sizes: x", True, "", evidence={"config": "x", "details": {
        "known_once": {"status": "proved", "k": 1, "kind": "property"}}, "nonvacuity": {"failures": []}})
    test = Row("conform", "shapes", True, "", evidence={"shapes": []})
    return [explored, covered, alone, sizes, test]


def test_check_counts_rows_by_strength_and_require_proof_fails_only_the_unproved():
    rows = _rows()
    annotate(rows)
    assert [r.claim and r.claim["strength"] for r in rows] == ["exhaustive", "bounded", "bounded", "all-sizes", None]
    assert claim_of(rows[1]).weak == {"single_prefill": "no counterexample up to depth 2 (not a proof)"}  # no lemma
    assert counts(rows) == {"all-sizes": 1, "exhaustive": 1, "bounded": 2, "none": 1}
    assert summary_line(rows) == ("rows by strength: 1 proved for all sizes, 1 proved for its scenario (every "
                                  "reachable state explored), 2 no counterexample up to a depth (not a proof), "
                                  "1 claim no property (tests, comparisons)")
    assert require_proof(rows) == ["prove doc2 b: single_prefill"]  # burst2's was explored exhaustively
    assert [r.ok for r in rows] == [True, True, False, True, True]
    assert rows[2].detail.startswith("--require-proof: single_prefill: no counterexample up to depth 2")


def test_a_vacuous_proof_for_all_sizes_is_not_a_proof():
    [*_, sizes, _test] = _rows()
    sizes.evidence["nonvacuity"] = {"failures": ["action evict is enabled in no state of the invariant"]}
    assert claim_of(sizes).strength is Strength.UNPROVED


def test_check_require_proof_turns_a_bounded_row_into_a_failed_run(monkeypatch, capsys):
    monkeypatch.setattr(suite, "STAGES", [("prove", "fake:stage", False)])
    monkeypatch.setattr(suite, "_load", lambda path: lambda ctx: _rows()[1:])  # no explore row: nothing covers
    assert suite.run_suite(as_json=True, workers=1) == "ok"
    out = json.loads(capsys.readouterr().out)
    assert out["strength"] == {"all-sizes": 1, "bounded": 2, "none": 1} and out["not_proofs"] == []
    assert suite.run_suite(as_json=True, workers=1, require_proof=True) == "failed"
    out = json.loads(capsys.readouterr().out)
    assert out["not_proofs"] == ["prove burst2 a: single_prefill", "prove doc2 b: single_prefill"]
    assert [r["claim"]["says"] if r["claim"] else None for r in out["rows"]][2:] == ["proved for all sizes", None]


def test_the_report_shows_each_rows_strength_and_the_count():
    rows = _rows()
    annotate(rows)
    report = build_report(rows, coverage=False, tradeoff=False)
    assert [s.strength for s in report.summary] == ["scenario, explored", "bounded to 2, not a proof",
                                                    "bounded to 2, not a proof", "all sizes", ""]
    page = report_html(report)
    assert "rows by strength: 1 proved for all sizes" in page
    assert "no counterexample up to depth 2 (not a proof)" in page  # the proof table's line for single_prefill
