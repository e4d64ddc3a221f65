"""One default scenario and policy per variant: every command prints the same path for a variant."""

import json

from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.suite.defaults import pair_scenario, variant_scenario
from flightcheck.checks.explore.explorer import explore
from flightcheck.checks.explore.picture import build_picture
from flightcheck.checks.explore.violating import violating_states
from flightcheck.spec.variants import VARIANTS

runner = CliRunner()


def test_equiv_prints_the_path_check_and_explore_print():
    """The README's case: `equiv correct forget-at-release` gave 5 steps ending in abort(0) on another
    scenario; on the variant's demo it is the explorer's 9-step path, ending in the rejected finish."""
    r = runner.invoke(app, ["equiv", "correct", "forget-at-release", "--no-proof", "--json"])
    assert r.exit_code == 1, r.output
    out = json.loads(r.output)
    assert out["scenario"] == variant_scenario("forget-at-release").name == "burst2"
    assert len(out["sequence"]) == 9 and out["sequence"][-1].startswith("finish(")
    last = out["steps"][-1]  # what the last step changed in each design, with the coordinator's verdict
    assert "accepted" in last["correct"] and "rejected as unknown" in last["forget-at-release"]
    cx = explore(VARIANTS["forget-at-release"].demo_spec()).result("termination_validated").counterexample
    assert len(cx) == len(out["sequence"])


def test_prove_variant_runs_on_the_variants_own_policy():
    """`prove --variant early-release` used incremental publication, where early release is harmless."""
    r = runner.invoke(app, ["prove", "--variant", "early-release", "--max-k", "1", "--json"])
    assert r.exit_code == 1, r.output
    out = json.loads(r.output)
    (run,) = out["runs"]
    assert run["policy"] == variant_scenario("early-release").policy.label()  # publication on completion
    assert run["policy"].startswith("single-flight/after-prefill/on-completion")
    prop = next(p for p in run["properties"] if p["name"] == "release_after_publication")
    assert prop["status"] == "violated" and len(prop["counterexample"]["actions"]) == 6
    assert run["depth"] == 6


def test_the_pair_scenario_is_the_mutants_demo_whichever_side_it_is_on():
    for name, v in VARIANTS.items():
        if v.expected_violation is not None:
            assert pair_scenario("correct", name) == pair_scenario(name, "correct") == variant_scenario(name)
            assert variant_scenario(name).name == v.demo and v.demo_spec().policy == variant_scenario(name).policy


def test_stranded_followers_page_draws_its_deadlock_and_marks_every_deadlocked_state():
    result = explore(VARIANTS["stranded-followers"].demo_spec())
    cx = result.result("no_deadlock").counterexample
    bad = violating_states(result, "no_deadlock")
    assert cx is not None and len(bad) >= 1
    pic = build_picture(result, highlight=cx, violating=("no_deadlock", bad))
    legend = " ".join(text for _c, text in pic.legend)
    assert f"no_deadlock is violated here ({len(bad)} states)" in legend
    assert "counterexample to no_deadlock" in legend
    assert sum("violation" in n.tags for n in pic.nodes) >= len(bad)


def test_explore_variant_render_highlights_the_property_it_must_violate(tmp_path):
    out = tmp_path / "stranded.dot"
    r = runner.invoke(app, ["explore", "--variant", "stranded-followers", "--render", str(out)])
    assert r.exit_code == 1, r.output
    dot = out.read_text()
    assert "counterexample to no_deadlock" in dot and "no_deadlock is violated here" in dot


def test_variants_names_each_variants_default_scenario_and_policy():
    rows = json.loads(runner.invoke(app, ["variants", "--json"]).output)
    assert {(r["name"], r["scenario"], r["policy"]) for r in rows} == {
        (n, variant_scenario(n).name, variant_scenario(n).policy.label()) for n in VARIANTS}
    by = {r["name"]: r for r in rows}
    assert (by["early-release"]["scenario"], by["stranded-followers"]["scenario"]) == ("burst2", "burst2-abort")
    assert "/on-completion cap" in by["early-release"]["policy"]
