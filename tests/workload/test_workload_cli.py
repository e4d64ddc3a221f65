"""``flightcheck workload``: tables, JSON, files, event-log conversion and the errors it reports."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from flightcheck.checks.cli import app as cli, cmd_workload
from flightcheck.checks.workload.opportunity import ModelConfig, prepare_trace, simulate
from flightcheck.checks.workload.trace import load_trace, shared_trace_path

from test_workload_trace import EVENTS


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    cmd_workload.register(app)

    @app.callback()
    def main() -> None:  # a callback keeps "workload" as a named subcommand
        pass

    return app


def invoke(app, *args):
    return CliRunner().invoke(app, ["workload", *map(str, args)])


def test_the_command_is_listed_in_the_cli():
    assert "flightcheck.checks.cli.cmd_workload" in cli.COMMAND_MODULES


def test_one_configuration_prints_phases_and_instances(app):
    result = invoke(app, "conversation", "--w-eff", 10_000, "--instances", 2, "--capacity", 10_000)
    assert result.exit_code == 0, result.output
    expected = simulate(prepare_trace(load_trace(shared_trace_path("conversation"))),
                        ModelConfig(w_eff_ms=10_000, capacity_blocks=10_000, num_instances=2)).summary["all"]
    assert f"{expected.num_cold_attempts:,}" in result.stdout
    assert "warmup" in result.stdout and "steady" in result.stdout and "per instance" in result.stdout
    assert "exact input" in result.stdout and "partial prefix" in result.stdout
    # Every line of the table is whole (no wrapped rows), and the split of removable attempts is on the "all" row.
    (line,) = [row for row in result.stdout.splitlines() if row.startswith("│ all ")]
    assert f"{expected.num_exact_input_removable:,} ({expected.exact_input_ratio:.3g})" in line
    assert f"{expected.num_partial_prefix_removable:,} ({expected.partial_prefix_ratio:.3g})" in line


def test_json_rows_match_the_model(app, tmp_path):
    result = invoke(app, "synthetic", "--w-eff", 300, "--w-eff", 3_000, "--instances", 4, "--routing", "affinity",
                    "--lookup", "independent", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert len(document["summary"]) == 2 * 3 and len(document["instances"]) == 2 * 4 * 3
    prepared = prepare_trace(load_trace(shared_trace_path("synthetic")))
    for row in document["summary"]:
        config = ModelConfig(w_eff_ms=row["w_eff_ms"], capacity_blocks=10_000, num_instances=4, routing="affinity",
                             lookup="independent")
        counts = simulate(prepared, config).summary[row["phase"]]
        assert (row["num_cohorts"], row["num_removable_attempts"], row["fan_in_max"]) == (
            counts.num_cohorts, counts.num_removable_attempts, counts.fan_in_max)
        assert (row["num_exact_input_removable"], row["num_partial_prefix_removable"], row["exact_input_ratio"],
                row["partial_prefix_ratio"]) == (counts.num_exact_input_removable, counts.num_partial_prefix_removable,
                                                 counts.exact_input_ratio, counts.partial_prefix_ratio)
        assert row["num_exact_input_removable"] + row["num_partial_prefix_removable"] == row["num_removable_attempts"]


def test_sweep_writes_rows_plots_and_manifest(app, tmp_path):
    out = tmp_path / "out"
    result = invoke(app, "synthetic", "--sweep", "--w-eff", 100, "--w-eff", 1_000, "--capacity", 1_000, "--out", out)
    assert result.exit_code == 0, result.output
    assert "Highest redundancy" in result.stdout          # 2 x 5 x 1 x 2 x 2 = 40 configurations
    assert "exact / partial there" in result.stdout
    written = sorted(p.name for p in out.iterdir())
    assert written == ["SHA256SUMS", "fan_in_vs_w_eff.png", "instances.csv", "manifest.json",
                       "redundancy_vs_w_eff.png", "results.json", "summary.csv"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest) == [n for n in written if n not in ("SHA256SUMS", "manifest.json")]
    assert json.loads((out / "results.json").read_text())["meta"]["num_configurations"] == 40


def test_event_logs_convert_and_run(app, tmp_path):
    events = tmp_path / "run.events.jsonl"
    events.write_text(EVENTS)
    converted = tmp_path / "run.trace.jsonl"
    result = invoke(app, "--from-events", events, "--convert-out", converted, "--w-eff", 5, "--json")
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(result.stdout)["summary"] if r["phase"] == "all"]
    # Requests 1 and 2 share all three 16-token blocks and arrive 2 ms apart: three cohorts of fan-in 2.
    assert (row["trace"], row["num_cold_attempts"], row["num_cohorts"], row["fan_in_max"]) == ("run.events", 7, 4, 2)
    # One input key, so the same ids: all three followers are exact-input.
    assert (row["num_exact_input_removable"], row["num_partial_prefix_removable"]) == (3, 0)
    assert load_trace(converted).num_requests == 3


@pytest.mark.parametrize("args, message", [
    (["--routing", "random", "conversation"], "random"),
    (["--instances", "17", "conversation"], "num_instances"),
    (["--capacity", "0", "conversation"], "capacity_blocks"),
    (["nope.jsonl"], "not found"),
    ([], "at least one TRACE"),
    (["--cohort-rows", "conversation"], "--out"),
    (["--workers", "100", "conversation"], "--workers: at most 64"),
    (["--cost-per-load", "inf", "conversation"], "--cost-per-load: must be a finite number >= 0"),
    (["--routing", "x" * 1000, "conversation"], "(1,002 characters) is not one of rr, affinity"),
])
def test_bad_arguments_exit_2_with_a_specific_message(app, args, message):
    result = invoke(app, *args)
    assert result.exit_code == 2
    assert message in result.output


def test_a_malformed_trace_exits_2_naming_line_and_field(app, tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}'
    bad.write_text(good + "\n" + good + "\n" + '{"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1, null]}\n')
    result = invoke(app, bad, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "line 3, field 'hash_ids': position 1 must be an integer, got None" in result.stderr
    assert not (tmp_path / "out").exists()    # nothing is written from a trace that failed validation


def test_an_untimed_event_log_is_run_as_simultaneous_arrivals_with_a_note(app, tmp_path):
    events = tmp_path / "untimed.jsonl"
    # Every field an engine's arrive carries except "t" (the log is read by the event schema first).
    events.write_text("".join(json.dumps({"seq": i, "action": "arrive", "request": i, "role": "solo", "flight": None,
                                          "input": "same", "num_tokens": 32}) + "\n" for i in range(3)))
    result = invoke(app, "--from-events", events, "--json")
    assert result.exit_code == 0, result.output
    assert "no arrive event" in result.stderr
    (row,) = [r for r in json.loads(result.stdout)["summary"] if r["phase"] == "all"]
    assert (row["num_cohorts"], row["fan_in_max"], row["num_removable_attempts"]) == (2, 3, 4)
