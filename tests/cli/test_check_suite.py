"""`flightcheck check`, the main job: every stage runs and reports, and a broken stage fails the job."""

import json

from typer.testing import CliRunner

from flightcheck.checks.suite import job as suite
from flightcheck.checks.cli.app import app


def test_check_quick_runs_every_stage_but_the_real_model_and_passes(tmp_path):
    r = CliRunner().invoke(app, ["check", "--quick", "--json", "--report", str(tmp_path / "report")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["verdict"] == "ok"
    assert out["report"] == str(tmp_path / "report" / "index.html") and "z3: k-induction" in (
        tmp_path / "report" / "index.html").read_text()  # the report of this run (tests/report/ checks it renders)
    stages = {row["stage"] for row in out["rows"]}
    assert stages == {"explore", "variants", "prove", "equiv", "engine", "conform", "server", "workload"}
    by_item = {(row["stage"], row["item"]): row for row in out["rows"]}
    assert by_item[("variants", "forget-at-release")]["detail"] == "caught: termination_validated in 9 steps"
    assert by_item[("prove", "burst2 after-prefill incremental release-all")]["detail"].startswith("27/27 proved (k<=2)")
    assert "differ after 9 step(s)" in by_item[("equiv", "correct vs forget-at-release")]["detail"]
    gate = by_item[("conform", "coverage gate: every edge class the engine can take is driven")]
    assert gate["detail"].startswith("every one of the 211 edge classes within the engine's reach was driven (41 more")
    assert all(row["ok"] for row in out["rows"])


def test_a_stage_that_breaks_is_an_error_row_and_the_job_is_no_verdict(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FLIGHTCHECK_CRASH_DIR", str(tmp_path))
    monkeypatch.setattr(suite, "STAGES", [
        ("variants", "flightcheck.checks.suite.stage_variants:variants_stage", False),
        ("broken", "flightcheck.checks.suite.stage_variants:no_such_stage", False),
        ("smollm2", "flightcheck.checks.suite.stage_smollm2:real_model_stage", True),
    ])
    assert suite.run_suite(as_json=True, quick=True) == "error"
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "error"
    broken = [r for r in out["rows"] if r["stage"] == "broken"]
    assert len(broken) == 1 and not broken[0]["ok"] and broken[0]["error"] and "no_such_stage" in broken[0]["detail"]
    assert not any(r["stage"] == "smollm2" for r in out["rows"])  # --quick skips the real model
    assert sum(r["ok"] for r in out["rows"]) == 17  # every variant


def test_every_figure_check_pins_is_recorded():
    """check compares each stage's figures with checks/suite/expectations.json; a figure missing there is
    compared with nothing, so a changed state count, proof verdict or path would pass unseen."""
    from flightcheck.checks.suite.expect import Expectations
    from flightcheck.checks.suite.context import scenario_key as _key
    from flightcheck.checks.suite.stage_prove import prove_items
    from flightcheck.spec.scenario import SCENARIOS, policy_grid
    from flightcheck.spec.variants import VARIANTS

    mutants = {v.name for v in VARIANTS.values() if v.expected_violation is not None}
    want = {"explore": {_key(s) for scn in SCENARIOS.values() for s in policy_grid(scn)},
            "variants": mutants, "violated": mutants, "prove": {_key(s) for s in prove_items(False)},
            "equiv": set(VARIANTS) - {"correct"}, "workload": {"conversation", "synthetic"}}
    want["fingerprint"] = want["explore"]  # every default scenario is explored by the reference explorer
    from flightcheck.checks.unbounded.config import grid
    want["unbounded"] = {c.label() for c in grid()}
    recorded = Expectations.load().recorded
    for stage, keys in want.items():
        assert keys <= set(recorded.get(stage, {})), (stage, sorted(keys - set(recorded.get(stage, {}))))


def test_a_figure_other_than_the_recorded_one_fails_its_row():
    from flightcheck.checks.suite.expect import Expectations
    from flightcheck.checks.suite.context import Context
    from flightcheck.checks.suite.stage_variants import variants_stage

    book = Expectations({"variants": {"insert-on-miss": ["visible_after_compute", 3]},
                         "violated": {"early-release": ["no_deadlock", "release_after_publication"]}})
    rows = {r.item: r for r in variants_stage(Context(quick=True, expect=book))}
    assert not rows["insert-on-miss"].ok
    assert rows["insert-on-miss"].detail.startswith("path changed (was [\"visible_after_compute\", 3], now "
                                                    "[\"visible_after_compute\", 2])")
    assert not rows["early-release"].ok
    assert rows["early-release"].detail.startswith("the properties it violates changed (was [\"no_deadlock\", "
                                                   "\"release_after_publication\"], now [\"release_after_publication\", \"single_prefill\"])")
    assert rows["forget-at-release"].ok


def test_the_proofs_for_all_sizes_are_prove_rows_compared_with_their_recording(monkeypatch):
    """A row per configuration of the relational model (one here, to keep the test short) and its drift
    rows; a verdict other than the recorded one fails its row and says which moved."""
    from flightcheck.checks.suite import stage_prove as stages
    from flightcheck.checks.suite.context import Context
    from flightcheck.checks.suite.expect import Expectations
    from flightcheck.checks.unbounded import config
    from flightcheck.spec.scenario import SCENARIOS

    none = config.Config(coordination="none")
    monkeypatch.setattr(config, "grid", lambda: [none])
    monkeypatch.setattr(stages, "drift_items", lambda quick: [SCENARIOS["burst2-abort"]])
    rows = stages.unbounded_rows(Context(quick=True, expect=Expectations.load()))
    assert [r.item for r in rows] == ["for all sizes: none/after-prefill/incremental release-all",
                                      "relational model = spec: burst2-abort after-prefill incremental release-all"]
    assert all(r.ok for r in rows), [r.detail for r in rows]
    assert rows[0].detail.startswith("7/7 proved for all sizes; bounded only: refcounts_exact")
    assert rows[1].detail == "the relational model is the spec's design on 113 states, 1921 transitions"
    recorded = Expectations.load().recorded["unbounded"][none.label()]
    book = Expectations({"unbounded": {none.label(): dict(recorded, known_once="cti")}})
    [row, _] = stages.unbounded_rows(Context(quick=True, expect=book))
    assert not row.ok and row.detail.startswith("proofs changed (known_once: cti -> proved); 7/7 proved")
