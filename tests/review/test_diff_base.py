"""`flightcheck diff --base REF`: one scenario's graph at REF against the working tree, on a scratch clone.

The clone is `git clone` of the checkout's committed state into tmp_path (never /work's history), edited
and committed there, as in test_review.py; every comparison is burst2 (52 states), so the file takes
about half a minute. The tests build on each other's commits, in file order (as test_review.py's do).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.review.base_diff import make_scenario_review
from flightcheck.checks.review.baseline import inside
from scratch import EARLY, GUARD, clone_into, commit, edit, git, release_early

BURST2 = {"scenario": "burst2", "policy": {}, "variant": "correct", "symmetry": True, "max_states": 200_000}


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return clone_into(tmp_path_factory.mktemp("diff-base") / "flightcheck")


def _diff(root: Path, monkeypatch, *args: str):
    monkeypatch.chdir(root)
    return CliRunner().invoke(app, ["diff", *args])


def test_a_guard_change_pins_the_added_states_and_edges_and_the_regression(clone, tmp_path, monkeypatch):
    release_early(clone)
    commit(clone, "release a page early")
    review, (base, cand) = make_scenario_review(clone, "HEAD~1", BURST2)
    item = review["diff"]
    assert item["states"] == [52, 185] and len(base["nodes"]) == 52 and len(cand["nodes"]) == 185
    assert (item["states_added"], item["states_removed"], item["edges_added"], item["edges_removed"]) == (133, 0, 320, 0)
    assert item["first"]["kind"] == "added" and item["first"]["path"][-1] == "release(0)" and item["first"]["to_is_new"]
    assert [m["property"] for m in item["verdicts"] if m["regressed"]] == ["release_after_publication", "single_prefill"]
    assert review["verdict"] == "regressed" and review["exit"] == 1
    for where in review["baseline"]["origin"].values():  # the baseline ran its own code, not the clone's tree
        assert not inside(where, clone) and "flightcheck-baseline-" in where
    # the same through the command, drawn as one graph: added in green, nothing removed
    picture = tmp_path / "change.dot"
    r = _diff(clone, monkeypatch, "--base", "HEAD~1", "--scenario", "burst2", "--render", str(picture))
    assert r.exit_code == 1, r.output
    assert "states 52 -> 185 (+133 -0), edges +320 -0" in r.stdout and "REGRESSED" in r.stdout
    dot = picture.read_text()
    assert "added by the working tree: 133 states, 320 edges" in dot and "removed since HEAD~1: 0 states, 0 edges" in dot
    assert dot.count('color="#2f855a"') > 133


def test_a_change_undone_in_the_working_tree_is_removed_and_named_as_uncommitted(clone, monkeypatch):
    derived = clone / "spec" / "derived.py"
    edit(derived, EARLY, GUARD)  # uncommitted: the candidate is the working tree as it is
    try:
        r = _diff(clone, monkeypatch, "--base", "HEAD", "--scenario", "burst2", "--json")
    finally:
        git(clone, "checkout", "-q", "--", "spec/derived.py")
    assert r.exit_code == 0, r.output  # a verdict got better: a change, not a regression
    review = json.loads(r.stdout)
    item = review["diff"]
    assert (item["states_added"], item["states_removed"], item["edges_added"], item["edges_removed"]) == (0, 133, 0, 320)
    assert item["first"]["kind"] == "removed" and review["verdict"] == "changed"
    assert review["candidate"]["uncommitted"] == ["spec/derived.py"]


def test_a_no_op_commit_reports_no_behaviour_change(clone, monkeypatch):
    model = clone / "spec" / "model.py"
    edit(model, '"""', '"""A comment that changes nothing. ')
    commit(clone, "a comment")
    r = _diff(clone, monkeypatch, "--base", "HEAD~1", "--scenario", "burst2", "--a", "release=on-completion")
    assert r.exit_code == 0, r.output
    assert "states 30 -> 30 (+0 -0), edges +0 -0" in r.stdout and "no behaviour change" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--base", "no-such-branch"], "error: no commit no-such-branch in this repository"),
    (["--base", "HEAD", "--b", "release=on-completion"], "--base compares one policy (--a) across two commits"),
    (["--base", "HEAD", "--a", "release=sometimes"], "--a: release must be one of"),
])
def test_bad_input_is_one_line_and_exit_2(clone, monkeypatch, args, message):
    r = _diff(clone, monkeypatch, *args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_a_baseline_that_cannot_be_imported_is_exit_2_not_a_pass(clone, monkeypatch):
    init = (clone / "flightcheck" / "__init__.py").read_text()
    git(clone, "rm", "-q", "flightcheck/__init__.py")
    git(clone, "commit", "-q", "-m", "another layout")
    (clone / "flightcheck").mkdir(exist_ok=True)
    (clone / "flightcheck" / "__init__.py").write_text(init)
    git(clone, "add", "flightcheck/__init__.py")
    git(clone, "commit", "-q", "-m", "this layout")
    r = _diff(clone, monkeypatch, "--base", "HEAD~1", "--scenario", "burst2")
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "the baseline cannot be imported" in lines[0], lines
