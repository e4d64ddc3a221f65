"""The command-line contract of explore, variants and check: exit codes, JSON, clear errors."""

import json
import subprocess
import sys

from typer.testing import CliRunner

from flightcheck.checks.cli.app import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_explore_correct_exits_0_with_a_property_table():
    r = invoke("explore", "--scenario", "burst2")
    assert r.exit_code == 0, r.output
    assert "one_flight_per_input" in r.output and "states 52" in r.output


def test_explore_json_has_verdict_properties_counterexample_and_stats():
    r = invoke("explore", "--scenario", "burst2-abort", "--release", "on-completion", "--json")
    out = json.loads(r.output)
    assert r.exit_code == 0 and out["verdict"] == "ok" and out["counterexample"] is None
    assert out["stats"]["states"] == 87 and out["stats"]["states_per_second"] > 0
    assert {p["name"] for p in out["properties"]} >= {"termination_validated", "eventually_terminates"}
    assert out["policy"]["release"] == "on-completion"


def test_explore_variant_exits_1_naming_the_property_and_printing_the_path():
    r = invoke("explore", "--variant", "forget-at-release")
    assert r.exit_code == 1
    assert "termination_validated violated" in r.output
    assert " 9. finish(0)" in r.output and "TERMINATION MISJUDGED" in r.output
    j = json.loads(invoke("explore", "--variant", "insert-on-miss", "--json").output)
    assert j["verdict"] == "violated" and j["counterexample"] == ["arrive(0)", "admit(0)"]
    assert j["violated"][0] == "visible_after_compute"


def test_explore_custom_burst():
    out = json.loads(invoke("explore", "--requests", "3", "--prompts", "2", "--json").output)
    assert out["verdict"] == "ok" and out["stats"]["states"] == 533


def test_bad_arguments_exit_2_with_a_clear_message():
    cases = [
        (("explore", "--release", "later"), "--release must be one of after-prefill, on-completion"),
        (("explore", "--scenario", "nope"), "unknown scenario 'nope'"),
        (("explore", "--variant", "nope"), "unknown variant 'nope'"),
        (("explore", "--scenario", "burst2", "--requests", "2"), "either --scenario or --requests"),
        (("explore", "--requests", "11"), "--requests must be between 1 and 10"),
        (("explore", "--engine", "fast"), "--engine must be one of auto, reference, batched, compiled"),
        (("explore", "--render", "x.svg", "--safety-only"), "--render needs the edges"),
        (("export", "--scenario", "burst2"), "choose the format: --promela"),
        (("export", "--promela", "--scenario", "nope"), "unknown scenario 'nope'"),
        (("explore", "--render", "x.jpg"), "--render must end in .dot, .svg, .png or .html"),
    ]
    for args, msg in cases:
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.output)
        assert msg in r.output, (args, r.output)
    assert invoke("explore", "--capacity", "0").exit_code == 2


def test_variants_json_lists_every_variant_with_expected_violation_and_story():
    rows = json.loads(invoke("variants", "--json").output)
    by = {r["name"]: r for r in rows}
    assert by["correct"]["expected_violation"] is None and by["draining"]["expected_violation"] is None
    assert by["stranded-followers"]["expected_violation"] == "no_deadlock"
    assert all(r["story"] for r in rows) and len(rows) == 17


def test_the_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "flightcheck.checks.cli.app", "explore", "--scenario", "notail", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["stats"]["states"] == 48


def test_explore_scale_scenarios_run_on_the_batched_explorer():
    out = json.loads(invoke("explore", "--scenario", "burst6", "--json").output)
    assert out["verdict"] == "ok" and out["engine"] == "batched" and out["stats"]["states"] == 1318
    out = json.loads(invoke("explore", "--scenario", "burst5", "--no-symmetry", "--safety-only", "--json").output)
    assert out["stats"]["states"] == 43592 and "eventually_terminates" not in {p["name"] for p in out["properties"]}
    out = json.loads(invoke("explore", "--scenario", "burst2", "--engine", "batched", "--json").output)
    assert out["engine"] == "batched" and out["stats"]["states"] == 52
    out = json.loads(invoke("explore", "--scenario", "burst2", "--engine", "compiled", "--json").output)
    assert out["engine"] == "compiled" and out["stats"]["states"] == 52


def test_explore_beyond_the_memory_bound_exits_2_naming_the_scope_and_what_to_do():
    r = invoke("explore", "--scenario", "burst6", "--no-symmetry", "--memory-limit", "0.01")
    assert r.exit_code == 2
    assert "burst6" in r.output and "memory bound of 10 MiB" in r.output and "symmetry reduction" in r.output


def test_export_promela_writes_the_model(tmp_path):
    path = tmp_path / "b2.pml"
    r = invoke("export", "--promela", "--scenario", "burst2-abort", "--out", str(path))
    assert r.exit_code == 0, r.output
    text = path.read_text()
    assert "active proctype flight()" in text and text.count(":: d_step") == 19
    r = invoke("export", "--promela", "--variant", "stranded-followers", "--liveness")
    assert r.exit_code == 0 and "ltl eventually_terminates_0" in r.output
    assert invoke("export", "--promela", "--out", str(tmp_path / "no" / "such" / "dir.pml")).exit_code == 2
