"""A verdict you can trust: the recorded figures never silently lost, a fault of flightcheck never read as a
verdict (exit 3, an error row, the traceback in a file), and check's own arguments checked before it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flightcheck.checks.suite import job as suite
from flightcheck.checks.cli.app import app
from flightcheck.checks.suite.expect import EXPECTATIONS_PATH, Expectations, ExpectationsError, load
from flightcheck.checks.faults import EXIT_FAULT, culprit

from bad_input import flat

RUNNER = CliRunner()
STAGES = "trust_stages:"


@pytest.fixture
def book(tmp_path):
    """A copy of the recorded figures to record into."""
    path = tmp_path / "expectations.json"
    path.write_bytes(EXPECTATIONS_PATH.read_bytes())
    return path


@pytest.fixture
def crash_dir(tmp_path, monkeypatch):
    folder = tmp_path / "crashes"
    monkeypatch.setenv("FLIGHTCHECK_CRASH_DIR", str(folder))
    return folder


def use_stages(monkeypatch, *names):
    monkeypatch.setattr(suite, "STAGES", [(n, STAGES + n, False) for n in names])


# --- --record merges -------------------------------------------------------------------------------------
def test_a_partial_record_keeps_every_other_figure_byte_for_byte(book):
    original = book.read_bytes()
    data = json.loads(original)
    data["workload"]["synthetic"] = [1, 2]  # a stale figure of the stage that runs
    book.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    r = RUNNER.invoke(app, ["check", "--stage", "workload", "--record", "--no-report", "--expectations", str(book)])
    assert r.exit_code == 0, r.output
    assert "recorded: " in r.output and "2 figures of workload" in flat(r.output)
    assert book.read_bytes() == original  # the workload figures back, explore/prove/equiv/variants untouched


def test_without_record_a_changed_figure_fails_its_row_and_a_missing_one_is_not_a_silent_pass(book):
    data = json.loads(book.read_text())
    data["workload"]["synthetic"] = [1, 2]
    del data["workload"]["conversation"]
    book.write_text(json.dumps(data))
    r = RUNNER.invoke(app, ["check", "--stage", "workload", "--no-report", "--json", "--expectations", str(book)])
    assert r.exit_code == 1, r.output
    rows = {row["item"].split()[0]: row for row in json.loads(r.stdout)["rows"]}
    assert not rows["synthetic"]["ok"] and "was [1, 2], now [70390, 255]" in rows["synthetic"]["detail"]
    assert not rows["conversation"]["ok"] and "not recorded (now [227353, 10])" in rows["conversation"]["detail"]


def test_a_record_from_a_failed_run_is_refused_and_writes_nothing(book, monkeypatch, capsys):
    use_stages(monkeypatch, "passing_stage", "failing_stage")
    before = book.read_bytes()
    with pytest.raises(suite.RecordRefused, match=r"nothing recorded: 1 row\(s\) did not pass \(fake fails\)"):
        suite.run_suite(as_json=True, quick=True, record=True, expectations=book)
    assert book.read_bytes() == before
    assert json.loads(capsys.readouterr().out)["verdict"] == "failed"  # the summary is still printed


def test_record_refused_is_exit_2_after_the_summary(book, monkeypatch):
    use_stages(monkeypatch, "failing_stage")
    r = RUNNER.invoke(app, ["check", "--record", "--no-report", "--expectations", str(book)])
    assert r.exit_code == 2, r.output
    assert "0 passed, 1 failed" in r.output and "error: nothing recorded" in flat(r.output)


def test_a_quick_record_merges_items_and_a_full_one_replaces_its_sections(book):
    seen = Expectations.for_recording(book)
    seen.compare("explore", "burst2 after-prefill incremental release-all", 52)
    merged = seen.merged()
    assert merged["explore"] == load(book)["explore"] and merged["prove"] == load(book)["prove"]
    complete = seen.merged({"explore"})
    assert complete["explore"] == {"burst2 after-prefill incremental release-all": 52}
    assert len(seen.dropped({"explore"})["explore"]) == len(load(book)["explore"]) - 1


def test_record_into_a_file_that_cannot_be_written_is_refused_before_any_stage_runs(tmp_path, monkeypatch):
    use_stages(monkeypatch, "crashing_stage")  # would be exit 3 if it ran
    r = RUNNER.invoke(app, ["check", "--record", "--no-report", "--expectations", str(tmp_path / "no" / "e.json")])
    assert r.exit_code == 2 and "--record cannot write" in r.output and "does not exist" in r.output, r.output
    folder = tmp_path / "ro"
    folder.mkdir()
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # as a read-only checkout answers (root passes chmod)
    r = RUNNER.invoke(app, ["check", "--record", "--no-report", "--expectations", str(folder / "e.json")])
    assert r.exit_code == 2 and "not writable here" in r.output, r.output


@pytest.mark.parametrize("text, fragment", [
    ("", "is not JSON text"),
    ("[]", "must be a JSON object of sections"),
    ('{"explore": {"burst2": "52"}}', "field 'explore.burst2': must be a state count (an integer >= 0), got \"52\""),
    ('{"expolre": {}}', "field 'expolre': unknown section"),
    ('{"variants": {"x": ["p", -1]}}', "field 'variants.x': must be [violated property, shortest path length]"),
    ('{"violated": {"x": ["b", "a"]}}', "must be a sorted list of property names"),
    ("{" * 5000, "is not JSON text"),
])
def test_a_malformed_recording_is_bad_input_naming_the_figure(tmp_path, text, fragment):
    path = tmp_path / "e.json"
    path.write_text(text)
    with pytest.raises(ExpectationsError):
        load(path)
    r = RUNNER.invoke(app, ["check", "--stage", "workload", "--no-report", "--expectations", str(path)])
    assert r.exit_code == 2 and fragment in flat(r.output) and "Traceback" not in r.output, r.output


def test_a_missing_recording_is_bad_input_unless_recording(tmp_path):
    path = tmp_path / "e.json"
    r = RUNNER.invoke(app, ["check", "--stage", "workload", "--no-report", "--expectations", str(path)])
    assert r.exit_code == 2 and "no such file" in r.output
    r = RUNNER.invoke(app, ["check", "--stage", "workload", "--no-report", "--record", "--expectations", str(path)])
    assert r.exit_code == 0, r.output
    assert load(path) == {"workload": {"conversation": [227353, 10], "synthetic": [70390, 255]}}


def test_the_recorded_file_is_of_the_schema():
    load(EXPECTATIONS_PATH)  # raises ExpectationsError naming the first bad figure


# --- a fault of flightcheck is exit 3, never a verdict ---------------------------------------------------
def test_a_stage_that_breaks_in_flightcheck_is_an_error_row_and_the_verdict_is_error(monkeypatch, crash_dir, capsys):
    use_stages(monkeypatch, "passing_stage", "failing_stage", "crashing_stage")
    assert suite.run_suite(as_json=True, quick=True, expectations=EXPECTATIONS_PATH) == "error"
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "error"
    crashed = [r for r in out["rows"] if r["stage"] == "crashing_stage"]
    assert len(crashed) == 1 and crashed[0]["error"] and not crashed[0]["ok"]
    assert crashed[0]["detail"].startswith("error: flightcheck failed here (AttributeError: ")
    trace = Path(crashed[0]["evidence"]["traceback"])
    assert trace.parent == crash_dir and "Traceback" in trace.read_text() and "no_such_field" in trace.read_text()
    assert [r["error"] for r in out["rows"]] == [False, False, True]


def test_check_exits_3_on_an_error_row_and_prints_no_traceback(monkeypatch, crash_dir):
    use_stages(monkeypatch, "passing_stage", "crashing_stage")
    r = RUNNER.invoke(app, ["check", "--no-report"])
    assert r.exit_code == EXIT_FAULT, r.output
    assert "ERROR" in r.output and "1 error (flightcheck itself failed" in flat(r.output)
    assert "Traceback" not in r.output


def test_a_stage_where_the_spec_raises_fails_as_a_check(monkeypatch, capsys):
    use_stages(monkeypatch, "spec_raising_stage")
    assert suite.run_suite(as_json=True, quick=True, expectations=EXPECTATIONS_PATH) == "failed"
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert not row["ok"] and not row["error"] and row["evidence"]["raised_by"] == "spec"
    assert row["detail"] == "the spec under check raised AttributeError: a state has no field 'no_such_field'"


def test_culprit_is_the_innermost_frame_in_the_project():
    from flightcheck.impl.config import EngineConfig

    with pytest.raises(Exception) as caught:
        EngineConfig(num_pages=0)  # raised in impl/config.py, called from this test
    assert culprit(caught.value) == "engine"
    with pytest.raises(Exception) as caught:
        load(Path("/nonexistent/e.json"))
    assert culprit(caught.value) == "flightcheck"


def test_any_command_that_crashes_exits_3_with_one_line_and_the_traceback_in_a_file(monkeypatch, crash_dir):
    import flightcheck.checks.cli.cmd_variants as cmd_variants

    def broken(name):
        raise TypeError("boom \ud800 " + "x" * 1000)

    monkeypatch.setattr(cmd_variants, "variant_scenario", broken)
    r = RUNNER.invoke(app, ["variants"])
    assert r.exit_code == 3
    line = r.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("error: flightcheck failed: this is a bug in flightcheck, not a verdict on what it "
                           "checked (TypeError: boom \\ud800 xxx") and "(1007 characters)" in line
    files = list(crash_dir.iterdir())
    assert len(files) == 1 and str(files[0]) in line
    text = files[0].read_text()
    assert text.startswith("command: flightcheck") and "Traceback" in text and "TypeError" in text


def test_the_console_script_exits_3_on_a_fault(tmp_path):
    code = ("import sys; import flightcheck.checks.cli.cmd_variants as c\n"
            "c.variant_scenario = lambda name: 1 / 0\n"
            "from flightcheck.checks.cli.app import main\nsys.argv = ['flightcheck', 'variants']\nmain()\n")
    env = {**os.environ, "FLIGHTCHECK_CRASH_DIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 3, p.stderr
    assert "ZeroDivisionError" in p.stderr and "Traceback" not in p.stderr and p.stdout == ""


# --- check's arguments, before anything runs -------------------------------------------------------------
@pytest.mark.parametrize("value, fragment", [("", "--report must name a folder"), (" ", "--report must name a folder")])
def test_an_empty_report_folder_is_bad_input(value, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = RUNNER.invoke(app, ["check", "--stage", "workload", "--report", value])
    assert r.exit_code == 2 and fragment in r.output, r.output
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_a_report_folder_under_a_file_is_bad_input(tmp_path):
    (tmp_path / "d").write_text("")
    r = RUNNER.invoke(app, ["check", "--stage", "workload", "--report", str(tmp_path / "d" / "rep")])
    assert r.exit_code == 2 and "--report" in r.output and "Traceback" not in r.output, r.output


def test_a_bad_parameter_raised_inside_a_command_is_a_usage_error_not_a_fault(monkeypatch):
    import typer

    import flightcheck.checks.cli.cmd_variants as cmd_variants

    def refuse(name):
        raise typer.BadParameter("no such thing", param_hint="--thing")

    monkeypatch.setattr(cmd_variants, "variant_scenario", refuse)
    r = RUNNER.invoke(app, ["variants"])
    assert r.exit_code == 2 and "no such thing" in r.output and "flightcheck failed" not in r.output, r.output


def test_a_reader_that_leaves_is_neither_a_fault_nor_a_verdict(monkeypatch, crash_dir):
    import flightcheck.checks.cli.cmd_variants as cmd_variants

    def gone(name):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cmd_variants, "variant_scenario", gone)
    monkeypatch.setattr(os, "dup2", lambda *a: None)  # the runner's captured stdout has no descriptor to point away
    r = RUNNER.invoke(app, ["variants"])
    assert r.exit_code == 141 and "flightcheck failed" not in r.output and not crash_dir.exists(), r.output
