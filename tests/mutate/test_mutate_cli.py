"""`flightcheck mutate` end to end with stand-in stages (fast), the equivalence file, and bad input."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.mutate.equivalent import DEFAULT_PATH, load_equivalents, parse_equivalents
from flightcheck.checks.mutate.plan import plan, resolve_target

HERE = Path(__file__).parent
ADD = "impl/coordinator.py::Coordinator.arrive::delete::self.released_request_ids.add(request_id) => pass"
INDEX = "impl/coordinator.py::Coordinator.arrive::delete::self.index[token_ids] = request_id => pass"
PASS, FAIL = "mutate_stages:passing_stage", "mutate_stages:failing_stage"


@pytest.fixture(autouse=True)
def test_stages(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(HERE))


def _invoke(*args):
    return CliRunner().invoke(app, ["mutate", "--file", "impl/coordinator.py", *args])


def test_list_names_every_mutant_and_what_happens_to_it():
    r = _invoke("--list", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    by_id = {row["id"]: row for row in rows}
    assert by_id[ADD]["status"] == "run" and by_id[ADD]["function"] == "Coordinator.arrive"
    asserts = [row for row in rows if row["original"].startswith("assert ")]
    assert asserts and {row["status"] for row in asserts} == {"skip:assert"}
    assert len(rows) == len(plan([resolve_target("impl/coordinator.py")]).mutants)


def test_a_run_writes_the_report_and_the_results(tmp_path):
    r = _invoke("--stage", PASS, "--id", ADD, "--id", INDEX, "--json", "--out", str(tmp_path))
    assert r.exit_code == 0, r.output
    record = json.loads(r.output.strip().splitlines()[-1])
    assert record["score"]["survived"] == 2 and record["score"]["score"] == 0.0
    assert [m["status"] for m in record["mutants"] if m["id"] in (ADD, INDEX)] == ["survived", "survived"]
    assert record["meta"]["stages"] == [PASS] and record["meta"]["run"] == 2
    assert json.loads((tmp_path / "results.json").read_text())["score"] == record["score"]
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 2
    md = (tmp_path / "report.md").read_text()
    assert "**Mutation score: 0.0%**" in md and f"### `{ADD}`" in md
    assert "-        if self.coordination == \"none\":" not in md  # only the two diffs asked for
    assert "+            pass" in md


def test_min_score_sets_the_exit_status():
    assert _invoke("--stage", FAIL, "--id", ADD, "--min-score", "1.0", "--no-baseline").exit_code == 0  # all killed
    assert _invoke("--stage", PASS, "--id", ADD, "--min-score", "0.5").exit_code == 1   # 0% < 50%
    assert _invoke("--stage", PASS, "--id", ADD).exit_code == 0                         # report only


def test_killed_rows_carry_property_and_run_length():
    r = _invoke("--stage", FAIL, "--id", ADD, "--json", "--no-baseline")
    m = next(m for m in json.loads(r.output.strip().splitlines()[-1])["mutants"] if m["id"] == ADD)
    assert m["status"] == "failed"
    assert m["kills"][0]["properties"] == ["refcounts_exact"] and m["kills"][0]["run_length"] == 3


def test_a_red_baseline_is_exit_2_with_the_failing_rows():
    r = _invoke("--stage", FAIL, "--id", ADD, "--baseline")
    assert r.exit_code == 2
    assert "does not pass the stages" in r.output and "fake fails: broken on purpose" in r.output


def test_sample_and_seed_pick_the_same_subset_every_time():
    target = [resolve_target("impl/coordinator.py")]
    a, b, c = (plan(target, sample=5, seed=s) for s in (7, 7, 8))
    assert [m.id for m in a.to_run] == [m.id for m in b.to_run] and len(a.to_run) == 5
    assert [m.id for m in a.to_run] != [m.id for m in c.to_run]


def test_the_equivalence_file_takes_a_mutant_out_of_the_score(tmp_path):
    eq = tmp_path / "eq.toml"
    eq.write_text(f'[[equivalent]]\nid = "{INDEX}"\nreason = "for the test"\n\n'
                  '[[equivalent]]\nid = "impl/coordinator.py::Gone.f::delete::x => pass"\nreason = "stale one"\n')
    r = _invoke("--stage", PASS, "--id", ADD, "--equivalent", str(eq), "--json", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    record = json.loads(r.output.strip().splitlines()[-1])
    entry = next(m for m in record["mutants"] if m["id"] == INDEX)
    assert entry["status"] == "equivalent" and entry["reason"] == "for the test"
    assert record["score"]["equivalent"] == 1 and record["score"]["survived"] == 1
    assert list(record["stale_equivalents"]) == ["impl/coordinator.py::Gone.f::delete::x => pass"]
    md = (tmp_path / "o" / "report.md").read_text()
    assert f"- `{INDEX}`: for the test" in md and "Stale entries" in md
    listed = json.loads(_invoke("--list", "--json", "--equivalent", str(eq)).output)
    assert next(row for row in listed if row["id"] == INDEX)["status"] == "equivalent"


def test_the_projects_equivalence_file_parses_and_gives_every_entry_a_reason():
    # Entries the engine's edits have made stale are the report's to name, not a test failure.
    entries = load_equivalents(DEFAULT_PATH)
    assert all(ident.startswith("impl/") and reason for ident, reason in entries.items())


@pytest.mark.parametrize("text, message", [
    ("[[equivalent]]\nid = 'x'\n", "exactly the keys 'id' and 'reason'"),
    ("[[equivalent]]\nid = 'x'\nreason = ' '\n", "'reason' must say why"),
    ("[[equivalent]]\nid = 'x'\nreason = 'a'\n[[equivalent]]\nid = 'x'\nreason = 'b'\n", "listed twice"),
    ("[mutants]\n", "unexpected top-level key"),
    ("id = \n", "not valid TOML"),
])
def test_a_malformed_equivalence_file_is_named_and_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_equivalents(text, "eq.toml")


@pytest.mark.parametrize("args, message", [
    (["--file", "checks/cli/app.py"], "--file must name a module of flightcheck.impl"),
    (["--file", "impl/nope.py"], "no engine module flightcheck.impl.nope"),
    (["--operator", "bogus"], "--operator: unknown bogus"),
    (["--no-skip", "bogus"], "--no-skip: unknown rule"),
    (["--id", "impl/coordinator.py::nope"], "--id: no such mutant"),
    (["--stage", "nonsense"], "--stage must be MODULE:FUNCTION"),
    (["--stage", "flightcheck.checks.suite.stage_variants:no_such_stage"], "no_such_stage"),
    (["--equivalent", "/nonexistent/eq.toml"], "no such equivalence file"),
])
def test_bad_arguments_are_exit_2_with_a_message(args, message):
    files = [] if "--file" in args else ["--file", "impl/coordinator.py"]  # one small file: fast
    r = CliRunner().invoke(app, ["mutate", *files, *args, "--no-baseline"])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split())


def test_saved_results_are_rescored_against_todays_equivalence_file(tmp_path):
    r = _invoke("--stage", PASS, "--id", ADD, "--id", INDEX, "--out", str(tmp_path / "run"), "--no-baseline")
    assert r.exit_code == 0, r.output
    eq = tmp_path / "eq.toml"
    eq.write_text(f'[[equivalent]]\nid = "{INDEX}"\nreason = "shown equivalent after the run"\n')
    for saved in ("results.json", "results.jsonl"):
        r = _invoke("--from-results", str(tmp_path / "run" / saved), "--equivalent", str(eq), "--json")
        assert r.exit_code == 0, r.output
        record = json.loads(r.output.strip().splitlines()[-1])
        assert (record["score"]["survived"], record["score"]["equivalent"]) == (1, 1)
        assert record["meta"]["not_run"] == len(plan([resolve_target("impl/coordinator.py")]).to_run) - 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = _invoke("--from-results", str(bad))
    assert r.exit_code == 2 and "not a results.json or results.jsonl" in " ".join(r.output.split())


def test_a_passing_row_that_carries_a_failure_survives_with_a_note():
    r = _invoke("--stage", "mutate_stages:hidden_failure_stage", "--id", ADD, "--json")
    m = next(m for m in json.loads(r.output.strip().splitlines()[-1])["mutants"] if m["id"] == ADD)
    assert m["status"] == "survived"   # the verdict is check's: the row passed
    assert m["reason"] == ("1 passing row(s) carry a failure in their evidence (fake hides: the engine raised "
                           "NameError during step)")
