"""`check --baseline REF` and `check --since REF` on scratch clones of the project (never /work's history).

Each clone is `git clone` of the checkout's committed state into tmp_path, then edited and committed
there; the comparisons run on burst2 (and burst3) only, so the file takes well under a minute and a half.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.review.baseline import inside
from flightcheck.checks.review.command import make_review
from flightcheck.checks.review.present import to_text
from flightcheck.checks.review.since import select
from scratch import clone_into, commit, edit, git, release_early

STAGES = ["explore", "variants", "prove", "equiv", "engine", "conform", "server", "smollm2", "workload"]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return clone_into(tmp_path_factory.mktemp("review") / "flightcheck")


def _invoke(root: Path, monkeypatch, *args: str):
    monkeypatch.chdir(root)
    return CliRunner().invoke(app, ["check", *args])


def test_a_guard_change_names_the_graphs_it_moved_and_its_first_edge(clone, tmp_path):
    release_early(clone)  # followers may compute pages the leader has not published
    commit(clone, "release a page early")
    (clone / "notes.txt").write_text("uncommitted\n")  # the candidate is the working tree, as it is
    try:
        review = make_review(clone, "HEAD~1", scenarios=["burst2", "burst3"], draw_dir=tmp_path)
    finally:
        (clone / "notes.txt").unlink()
    # each changed graph drawn as one picture of both sides, and named in the text
    key = "burst2 after-prefill incremental release-all"
    picture = Path(review["drawn"][key])
    assert picture == tmp_path / "graph-burst2-after-prefill-incremental-release-all.svg"
    svg = picture.read_text()
    assert svg.startswith("<?xml") and "#2f855a" in svg and "added by the working tree: 133 states" in svg
    assert f"    drawn (added green, removed red): {picture}" in to_text(review)
    assert set(review["drawn"]) == {i["key"] for i in review["diff"]["items"] if i["changed"]}
    assert review["verdict"] == "regressed" and review["exit"] == 1
    # each side imported its own tree: nothing of the candidate leaked into the baseline
    for part, where in review["baseline"]["origin"].items():
        assert not inside(where, clone), (part, where)
        assert "flightcheck-baseline-" in where
    assert all(inside(where, clone) for where in review["candidate"]["origin"].values())
    diff = review["diff"]
    changed = {i["key"]: i for i in diff["items"] if i["changed"]}
    key = "burst2 after-prefill incremental release-all"
    assert key in changed and "burst3 after-prefill incremental release-all" in changed
    assert "burst2 on-completion incremental release-all" not in changed  # the other release point is untouched
    first = changed[key]["first"]
    assert first["kind"] == "added" and first["path"][-1].startswith("release(") and first["to_is_new"]
    assert changed[key]["states_added"] > 0 and changed[key]["states_removed"] == 0
    assert any(m["property"] == "single_prefill" and m["regressed"] for m in changed[key]["verdicts"])
    text = "\n".join(to_text(review))
    assert "scenarios whose graphs changed: burst2" in text and "first change: an added edge" in text
    assert "uncommitted changes" in text and "notes.txt" in text and "REGRESSED" in text
    # the temporary worktree is gone
    assert len(git(clone, "worktree", "list").splitlines()) == 1


def test_a_pure_refactor_reports_no_behaviour_change(clone, monkeypatch, tmp_path):
    model = clone / "spec" / "model.py"
    edit(model, "_copy_holders", "_holders_of_copy", count=-1)  # a private helper renamed, every use
    commit(clone, "rename a helper")
    report = tmp_path / "report"
    r = _invoke(clone, monkeypatch, "--baseline", "HEAD~1", "--scenario", "burst2", "--json", "--report", str(report))
    assert r.exit_code == 0, r.output
    review = json.loads(r.stdout)
    assert review["verdict"] == "same" and not review["diff"]["changed"] and not review["diff"]["regressions"]
    assert len(review["diff"]["items"]) == 4 and review["diff"]["variants"]
    assert (report / "review.json").is_file() and "no behaviour change" in (report / "review.txt").read_text()


def test_a_ref_that_names_no_commit_is_one_line_and_exit_2(clone, monkeypatch):
    r = _invoke(clone, monkeypatch, "--baseline", "no-such-branch", "--no-report")
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == ["error: no commit no-such-branch in this repository"]


def test_a_baseline_of_another_layout_is_exit_2_not_a_pass(tmp_path, monkeypatch):
    root = tmp_path / "fc"
    clone_into(root)
    init = (root / "flightcheck" / "__init__.py").read_text()
    git(root, "rm", "-q", "flightcheck/__init__.py")
    commit(root, "another layout")
    (root / "flightcheck").mkdir(exist_ok=True)
    (root / "flightcheck" / "__init__.py").write_text(init)
    git(root, "add", "flightcheck/__init__.py")
    commit(root, "this layout")
    r = _invoke(root, monkeypatch, "--baseline", "HEAD~1", "--scenario", "burst2", "--no-report")
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "the baseline cannot be imported" in lines[0], lines


def test_since_selects_the_conform_stages_for_an_impl_change():
    # the server stage runs the whole engine behind the server, so an engine change reruns it too
    assert select(["impl/engine.py", "impl/pages.py"], STAGES).stages == ["engine", "conform", "server", "smollm2"]
    assert select(["checks/symbolic/harness.py"], STAGES).stages == ["engine"]
    assert select(["impl/server/app.py"], STAGES).stages == ["server"]
    # every stage that reads the spec; the workload stage reads only the traces and its model
    assert select(["spec/model.py", "README.md"], STAGES).stages == [s for s in STAGES if s != "workload"]
    assert select(["data/traces/synthetic_trace.jsonl"], STAGES).stages == ["workload"]
    assert select(["checks/suite/stage_equiv.py"], STAGES).stages == ["equiv"]  # a stage's own module
    assert select(["checks/suite/job.py"], STAGES).stages == STAGES  # the suite's shared code
    assert select(["checks/report/build.py"], STAGES).stages == ["explore", "variants", "prove", "equiv", "conform",
                                                               "smollm2", "workload"]  # the stages it draws
    assert select(["checks/cli/app.py", "checks/mutate/runner.py"], STAGES).stages == []
    assert select(["spec/model.py"], STAGES, same=["spec/model.py"]).stages == []  # comments only
    assert select(["checks/proofs/induction.py"], STAGES).stages == ["prove", "equiv"]
    assert select(["README.md", "docs/report.png", "tests/review/test_review.py"], STAGES).stages == []
    assert select(["somewhere/new.py"], STAGES).everything  # unknown: everything runs


def test_since_through_the_cli_says_its_choice(clone, monkeypatch):
    (clone / "README.md").write_text((clone / "README.md").read_text() + "\na line\n")
    try:
        r = _invoke(clone, monkeypatch, "--since", "HEAD", "--json", "--no-report")
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)
        assert out["rows"] == [] and out["since"]["selected"] == [] and out["since"]["paths"] == {"README.md": []}
        edit(clone / "impl" / "engine.py", '"""', '"""A comment. ', count=1)
        r = _invoke(clone, monkeypatch, "--since", "HEAD", "--stage", "workload", "--json", "--no-report")
        assert r.exit_code == 0, r.output
        since = json.loads(r.stdout)["since"]
        assert since["selected"] == ["engine", "conform", "server", "smollm2"] and since["running"] == []
        r = _invoke(clone, monkeypatch, "--since", "HEAD", "--stage", "workload", "--no-report")
        assert "impl/engine.py: engine, conform, server, smollm2" in r.stdout
    finally:
        git(clone, "checkout", "-q", "--", "README.md", "impl/engine.py")


def test_since_reruns_nothing_for_a_comment_only_spec_change_and_every_spec_stage_for_a_code_change(clone, monkeypatch):
    model = clone / "spec" / "model.py"
    original = model.read_text()
    try:
        model.write_text("# a comment at the top, and the code below it the same\n" + original.replace("\n\n\n", "\n\n\n\n", 1))
        r = _invoke(clone, monkeypatch, "--since", "HEAD", "--json", "--no-report")
        assert r.exit_code == 0, r.output
        since = json.loads(r.stdout)["since"]
        assert since["same_code"] == ["spec/model.py"] and since["paths"] == {"spec/model.py": []}
        assert since["selected"] == [] and since["running"] == [] and json.loads(r.stdout)["rows"] == []
        r = _invoke(clone, monkeypatch, "--since", "HEAD", "--no-report")
        assert "spec/model.py: no stage (the same code: comments or layout only)" in r.stdout
        derived = clone / "spec" / "derived.py"
        derived.write_text(derived.read_text() + "\nUNUSED = 1  # code: every stage that reads the spec reruns\n")
        r = _invoke(clone, monkeypatch, "--since", "HEAD", "--stage", "workload", "--json", "--no-report")
        since = json.loads(r.stdout)["since"]
        assert since["same_code"] == ["spec/model.py"]
        assert since["paths"]["spec/derived.py"] == since["selected"] == [s for s in STAGES if s != "workload"]
    finally:
        git(clone, "checkout", "-q", "--", "spec/model.py", "spec/derived.py")


def test_an_engine_change_runs_the_corpus_on_both_engines_and_names_the_programs_that_moved(tmp_path):
    clone = clone_into(tmp_path / "flightcheck")  # a clone of its own: the module's clone carries a changed spec by now
    # admission last-in first-out: the spec allows any order, so every program still conforms, but those
    # where two requests wait at once now take their admissions the other way round
    edit(clone / "impl" / "scheduler.py", "        for request in self.admission_order():\n            admission = self._fit(request)",
          "        for request in reversed(self.admission_order()):\n            admission = self._fit(request)")
    commit(clone, "admit the newest waiting request first")
    review = make_review(clone, "HEAD~1", scenarios=["burst3"], quick=True)
    assert review["corpus"] == "own"  # impl/ changed: each scenario's own policy, as --quick replays it
    assert inside(review["candidate"]["origin"]["impl"], clone)
    assert not inside(review["baseline"]["origin"]["impl"], clone)  # the baseline ran its own engine
    corpus = review["diff"]["corpus"]
    assert corpus["compared"] and corpus["programs"] == 15 and corpus["only_baseline"] == corpus["only_candidate"] == 0
    assert len(corpus["changed"]) == 7 and all(c["was"] != c["now"] and c["ok"] == [True, True] for c in corpus["changed"])
    # the same spec edges, taken in another order: coverage of burst3's graph is unchanged
    assert corpus["coverage"] == []
    assert review["verdict"] == "changed" and review["exit"] == 0 and not review["diff"]["regressions"]
    text = to_text(review)
    assert "conformance corpus: 7 of 15 programs take other engine steps" in text
    # a spec-only change leaves the engine alone: the corpus is not run
    (clone / "spec" / "notes.py").write_text('"""A module nobody imports."""\n')
    try:
        assert make_review(clone, "HEAD", scenarios=["burst2"], quick=True)["corpus"] is None
    finally:
        (clone / "spec" / "notes.py").unlink()


def test_corpus_comparison_matches_programs_by_content_and_names_coverage_and_regressions():
    from flightcheck.checks.review.graphdiff import compare_corpus

    base = [{"entry": "burst2 x", "index": 1, "program": "p1", "ok": True, "actions": ["arrive(0)", "admit(0)"]},
            {"entry": "burst2 x", "index": 2, "program": "p2", "ok": True, "actions": ["arrive(0)"]},
            {"entry": "burst2 x", "index": 3, "program": "gone", "ok": True, "actions": []},
            {"entry": "burst2 x", "coverage": 10}]
    cand = [{"entry": "burst2 x", "index": 1, "program": "p2", "ok": False, "actions": ["arrive(0)", "abort(0)"]},
            {"entry": "burst2 x", "index": 2, "program": "p1", "ok": True, "actions": ["arrive(0)", "admit(0)"]},
            {"entry": "burst2 x", "index": 3, "program": "new", "ok": True, "actions": []},
            {"entry": "burst2 x", "coverage": 8}]
    out, regressions = compare_corpus(base, cand)
    assert out["programs"] == 2 and out["only_baseline"] == out["only_candidate"] == 1  # matched by content
    assert out["changed"] == [{"entry": "burst2 x", "index": 1, "event": 2, "was": "the end", "now": "abort(0)",
                               "ok": [True, False]}]
    assert out["coverage"] == [{"entry": "burst2 x", "was": 10, "now": 8}]
    assert regressions == ["corpus burst2 x: program 1 conformed on the baseline and does not now"]
    assert compare_corpus(None, None) == ({"compared": False, "why": "not run"}, [])
    assert compare_corpus(base, None)[0]["why"] == "the candidate has no corpus of this layout"
