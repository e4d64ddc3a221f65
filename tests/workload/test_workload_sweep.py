"""The sweep: grid, work sharing across configurations, worker pool, rows, output files and manifest, plots."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json

import pytest

from flightcheck.checks.workload.opportunity import ModelConfig, prepare_trace, simulate
from flightcheck.checks.workload.plot import FAN_IN_PNG, REDUNDANCY_PNG, plot_summary
from flightcheck.checks.workload.sweep import (cohort_rows, instance_rows, run_sweep, summary_rows, sweep_configs,
                                               write_outputs)
from flightcheck.checks.workload.trace import load_trace, parse_trace_lines, shared_trace_path

from switches import SLOW  # noqa: E402


@pytest.fixture(scope="module")
def conversation():
    return prepare_trace(load_trace(shared_trace_path("conversation")))


def test_the_full_grid_has_420_distinct_configurations():
    configs = sweep_configs()
    assert len(configs) == len(set(configs)) == 420
    assert sorted({c.w_eff_ms for c in configs}) == [10, 30, 100, 300, 1_000, 3_000, 10_000]
    assert sorted({c.num_instances for c in configs}) == [1, 2, 4, 8, 16]
    assert len({c.capacity_blocks for c in configs}) == 3
    assert {(c.routing, c.lookup) for c in configs} == {("rr", "contiguous"), ("rr", "independent"),
                                                          ("affinity", "contiguous"), ("affinity", "independent")}


@pytest.mark.slow
def test_pooled_shared_work_sweep_equals_one_by_one_simulation(conversation):
    # Default run: a 24-configuration slice; FLIGHTCHECK_SLOW=1: all 420.
    configs = sweep_configs() if SLOW else sweep_configs((10, 10_000), (1, 2, 16), (1_000,))
    progress = []
    pooled = run_sweep([conversation], configs, workers=2, on_progress=progress.append)
    assert sum(progress) == len(configs) and len(pooled) == len(configs)
    for result, config in zip(pooled, configs):
        alone = simulate(conversation, config)
        assert result.config == config
        assert result.summary == alone.summary
        assert [i.phases for i in result.instances] == [i.phases for i in alone.instances]


def tiny():
    lines = [json.dumps({"timestamp": t, "input_length": 1, "output_length": 1, "hash_ids": ids})
             for t, ids in ((0, [1]), (1, [1]), (2, [1]), (5_000, [2]), (10_000, [3]))]
    return prepare_trace(parse_trace_lines(lines, name="tiny"))


def test_rows_carry_the_avoidable_cost_rate():
    (result,) = run_sweep([tiny()], [ModelConfig(w_eff_ms=10, capacity_blocks=4)], workers=1)
    rows = {r["phase"]: r for r in summary_rows([result], cost_per_load=3.0)}
    assert (rows["all"]["num_removable_attempts"], rows["all"]["duration_s"]) == (2, 10.0)
    assert rows["all"]["cold_load_rate_per_s"] == 0.5                  # 5 cold attempts in 10 s
    assert rows["all"]["redundancy_ratio"] == 0.4
    assert rows["all"]["avoidable_cost_per_s"] == pytest.approx(0.5 * 0.4 * 3.0)
    assert rows["warmup"]["avoidable_cost_per_s"] == pytest.approx(2 / 1.0 * 3.0)
    assert rows["steady"]["avoidable_cost_per_s"] == 0.0
    assert rows["all"]["fan_in_histogram"] == [[1, 2], [3, 1]]
    # The three requests for block 1 have the same input: both followers are exact-input.
    assert (rows["all"]["num_exact_input_removable"], rows["all"]["num_partial_prefix_removable"]) == (2, 0)
    assert (rows["all"]["exact_input_ratio"], rows["all"]["partial_prefix_ratio"]) == (0.4, 0.0)
    assert rows["steady"]["exact_input_ratio"] == 0.0


def test_rows_split_removable_into_exact_input_and_partial_prefix():
    lines = [json.dumps({"timestamp": t, "input_length": 1024, "output_length": 1, "hash_ids": ids})
             for t, ids in ((0, [1, 2]), (1, [1, 3]), (2, [1, 2]), (3, [1, 3]))]
    (result,) = run_sweep([prepare_trace(parse_trace_lines(lines, name="mix"))],
                          [ModelConfig(w_eff_ms=10, capacity_blocks=8)], workers=1, record_cohorts=True)
    row = next(r for r in summary_rows([result]) if r["phase"] == "all")
    assert (row["num_removable_attempts"], row["num_exact_input_removable"], row["num_partial_prefix_removable"]) == (5, 3, 2)
    assert (row["exact_input_ratio"], row["partial_prefix_ratio"], row["redundancy_ratio"]) == (3 / 8, 2 / 8, 5 / 8)
    assert [(r["block"], r["fan_in"], r["exact_followers"]) for r in cohort_rows([result])] == [(0, 4, 1), (1, 2, 1), (2, 2, 1)]


def test_output_files_reconcile_and_their_manifest_verifies(conversation, tmp_path):
    configs = sweep_configs((1_000,), (1, 4), (10_000,), ("rr", "affinity"), ("contiguous",))
    results = run_sweep([conversation, tiny()], configs, workers=2)
    names = write_outputs(tmp_path, results, cost_per_load=2.0, meta={"run": "test"})
    assert names == ["summary.csv", "instances.csv", "results.json"]
    sums = (tmp_path / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == 3
    for entry in sums:
        digest, name = entry.split("  ")
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest
    summary = list(csv.DictReader((tmp_path / "summary.csv").open()))
    instances = list(csv.DictReader((tmp_path / "instances.csv").open()))
    assert len(summary) == 2 * 4 * 3
    assert len(instances) == 2 * (1 + 4 + 1 + 4) * 3
    for row in summary:
        mine = [i for i in instances if all(i[k] == row[k] for k in ("trace", "num_instances", "routing", "phase"))]
        for field in ("num_requests", "num_hits", "num_cold_attempts", "num_cohorts", "num_removable_attempts",
                      "num_exact_input_removable", "num_partial_prefix_removable"):
            assert int(row[field]) == sum(int(i[field]) for i in mine)
        assert int(row["num_exact_input_removable"]) + int(row["num_partial_prefix_removable"]) == int(
            row["num_removable_attempts"])
        assert sum(float(i["request_share"]) for i in mine) == pytest.approx(1.0)
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["meta"] == {"run": "test", "cost_per_load": 2.0}
    assert document["summary"] == json.loads(json.dumps(summary_rows(results, 2.0)))
    first = (tmp_path / "SHA256SUMS").read_text()
    write_outputs(tmp_path, results, cost_per_load=2.0, meta={"run": "test"})
    assert (tmp_path / "SHA256SUMS").read_text() == first     # byte-identical on a rerun


def test_cohort_rows_are_compressed_and_complete(tmp_path):
    results = run_sweep([tiny()], sweep_configs((10, 10_000), (1, 2), (4,), ("rr",), ("contiguous",)),
                        workers=1, record_cohorts=True)
    names = write_outputs(tmp_path, results)
    assert "cohorts.csv.gz" in names
    with gzip.open(tmp_path / "cohorts.csv.gz", "rt") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == sum(r.summary["all"].num_cohorts for r in results)
    assert sum(int(r["fan_in"]) for r in rows) == sum(r.summary["all"].num_cold_attempts for r in results)
    assert sum(int(r["exact_followers"]) for r in rows) == sum(r.summary["all"].num_exact_input_removable for r in results)
    first = (tmp_path / "SHA256SUMS").read_text()
    write_outputs(tmp_path, results)
    assert (tmp_path / "SHA256SUMS").read_text() == first      # gzip carries no timestamp


def test_plots_are_written_as_pngs(conversation, tmp_path):
    configs = sweep_configs((10, 1_000, 10_000), (1, 2), (1_000,), ("rr",), ("contiguous", "independent"))
    rows = summary_rows(run_sweep([conversation, tiny()], configs, workers=1))
    assert plot_summary(rows, tmp_path) == [REDUNDANCY_PNG, FAN_IN_PNG]
    import matplotlib.image

    heights = {}
    for name in (REDUNDANCY_PNG, FAN_IN_PNG):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        heights[name], width, _ = matplotlib.image.imread(tmp_path / name).shape
        assert width == 1000                                   # two (routing, lookup) columns x 5 in x 100 dpi
    # Per trace: redundancy, exact-input and partial-prefix rows; fan-in p99 and max rows (3.6 in each).
    assert heights == {REDUNDANCY_PNG: 2 * 3 * 360, FAN_IN_PNG: 2 * 2 * 360}
    with pytest.raises(ValueError, match="no summary rows"):
        plot_summary([r for r in rows if r["phase"] != "all"], tmp_path)


def test_instance_rows_expose_affinity_imbalance(conversation):
    # Every conversation request starts with block 0, so affinity sends all of them to one instance.
    (result,) = run_sweep([conversation], [ModelConfig(w_eff_ms=100, capacity_blocks=1_000, num_instances=8,
                                                       routing="affinity")], workers=1)
    shares = [r["request_share"] for r in instance_rows([result]) if r["phase"] == "all"]
    assert shares == [1.0] + [0.0] * 7
