"""``flightcheck prove`` and ``flightcheck equiv``: exit codes, JSON shape, printed paths."""

import json
import re

from typer.testing import CliRunner

from flightcheck.checks.cli.app import app

runner = CliRunner()


def test_prove_correct_design_json_both_release_points():
    r = runner.invoke(app, ["prove", "--scenario", "burst2-abort", "--depth", "2", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["ok"] is True and [run["release"] for run in out["runs"]] == ["after-prefill", "on-completion"]
    for run in out["runs"]:
        assert {p["status"] for p in run["properties"] + run["lemmas"]} == {"proved"}
        # single_prefill needs k=2 (and the lemmas that carry it); everything else is inductive.
        assert [p["name"] for p in run["properties"] if p["k"] == 2] == ["single_prefill"]
        assert sorted(p["name"] for p in run["lemmas"] if p["k"] == 2) == [
            "next_page_uncached", "one_busy_per_input", "released_hold_all"]
        assert all(isinstance(p["seconds"], float) for p in run["properties"])
        tv = next(p for p in run["properties"] if p["name"] == "termination_validated")
        assert "live_is_known" in tv["support"]


def test_prove_reports_bounded_with_the_counterexample_to_induction():
    # single_prefill needs k=2; allowed only k=1 it stays bounded (BMC to depth 3) with a 1-step CTI.
    args = ["prove", "--scenario", "burst2-evict", "--release", "after-prefill", "--depth", "3", "--max-k", "1"]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output  # bounded is not a violation
    run = json.loads(r.output)["runs"][0]
    assert [p["name"] for p in run["properties"] if p["status"] != "proved"] == ["single_prefill"]
    single = next(p for p in run["properties"] if p["name"] == "single_prefill")
    assert (single["status"], single["k"]) == ("bounded", 3)
    assert single["counterexample_to_induction"]["k"] == 1
    assert len(single["counterexample_to_induction"]["states"]) == 2
    r = runner.invoke(app, args)
    assert "counterexample to induction for single_prefill (k=1)" in r.output


def test_prove_mutant_json_carries_the_counterexample_actions():
    r = runner.invoke(app, ["prove", "--variant", "no-unknown-check", "--scenario", "burst2-abort",
                            "--release", "on-completion", "--depth", "1", "--max-k", "1", "--json"])
    assert r.exit_code == 1
    out = json.loads(r.output)
    tv = next(p for p in out["runs"][0]["properties"] if p["name"] == "termination_validated")
    assert tv["status"] == "violated" and tv["k"] == 1 and len(tv["counterexample"]["actions"]) == 1
    assert tv["counterexample"]["actions"][0].startswith("notify(")


def test_prove_bad_arguments_exit_2():
    for args, needle in ((["--variant", "nope"], "unknown variant 'nope'"),
                         (["--scenario", "nope"], "unknown scenario 'nope'"),
                         (["--release", "never"], "--release must be one of"),
                         (["--depth", "-1"], "--depth must be >= 0")):
        r = runner.invoke(app, ["prove", *args])
        assert r.exit_code == 2, args
        assert needle in r.output.replace("\n", " "), (args, r.output)


def test_equiv_correct_and_draining_exit_0():
    r = runner.invoke(app, ["equiv", "correct", "draining", "--scenario", "burst2", "--depth", "4", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["verdict"], out["equivalent"], out["sequence"]) == ("proved", True, [])


def test_equiv_buggy_variant_exit_1_with_the_shortest_sequence():
    r = runner.invoke(app, ["equiv", "correct", "stranded-followers", "--no-proof"])
    assert r.exit_code == 1
    assert "differ after 3 step(s)" in r.output.replace("\n", " ")
    assert " 3. release(" in r.output
    r = runner.invoke(app, ["equiv", "correct", "early-release", "--scenario", "burst2",
                            "--publication", "on-completion", "--json"])
    out = json.loads(r.output)
    assert r.exit_code == 1 and out["verdict"] == "different" and len(out["sequence"]) == 6
    assert out["sequence"][-1].startswith("release(")


def test_equiv_bad_arguments_exit_2():
    assert runner.invoke(app, ["equiv", "correct", "nope"]).exit_code == 2
    assert runner.invoke(app, ["equiv", "correct", "draining", "--depth", "-3"]).exit_code == 2
    assert runner.invoke(app, ["equiv", "correct"]).exit_code == 2


def test_a_z3_path_replays_against_the_engine(tmp_path):
    out = tmp_path / "cx.json"
    r = runner.invoke(app, ["prove", "--variant", "forget-at-release", "--release", "after-prefill",
                            "--depth", "9", "--max-k", "1", "--path-out", str(out)])
    assert r.exit_code == 1
    assert "termination_validated violated; path:" in r.output
    assert re.search(r" 9\. finish\(\d\)", r.output) and "TERMINATION MISJUDGED" in r.output
    saved = json.loads(out.read_text())
    assert saved["property"] == "termination_validated" and len(saved["counterexample"]) == 9
    assert saved["policy"]["release"] == "after-prefill" and saved["variant"] == "forget-at-release"
    # The engine with the same bug follows the z3 path to the violation...
    r = runner.invoke(app, ["replay", str(out), "--mutant", "forget-released"])
    assert r.exit_code == 0, r.output
    assert "reproduced: the engine follows the path and shows termination_validated" in " ".join(r.output.split())
    # ...the real engine keeps the released ID, so it departs at the release.
    r = runner.invoke(app, ["replay", str(out)])
    assert r.exit_code == 1
    assert re.search(r"departs from the path at step 8 \(release\(\d\)\)", " ".join(r.output.split()))
