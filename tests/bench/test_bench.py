"""``flightcheck bench``: the seed's seven experiments, leader-abort and overlap end to end (quick sizes; the tiny
model by default, the real SmolLM2 with FLIGHTCHECK_SLOW=1), their
tables, JSON and plots; the exact token counts each experiment is about; the same burst through HTTP
(a local server per run, and a running server at a URL); bad arguments exit 2."""

import json

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from switches import SLOW


def bench(*args):
    return CliRunner().invoke(app, ["bench", *args], catch_exceptions=False)


def rows(out, name):
    data = json.loads((out / f"{name}.json").read_text())
    return {(row["config"], row["cell"]): row["metrics"] for row in data["rows"]}, data


@pytest.fixture(scope="module")
def quick_all(tmp_path_factory):
    """All nine experiments: on the tiny model by default (5 s; the token counts do not depend on the
    model), on SmolLM2 with FLIGHTCHECK_SLOW=1 (100 s). The HTTP burst below always runs SmolLM2."""
    out = tmp_path_factory.mktemp("bench")
    result = bench("all", "--quick", "--out", str(out), *(() if SLOW else ("--model", "tiny")))
    assert result.exit_code == 0, result.output
    return out, result.output


def test_all_nine_write_a_table_json_and_plot(quick_all):
    out, output = quick_all
    for name in ("hot-prefix", "cold-burst", "incremental", "release-points", "burst-8", "late-arrival", "control",
                 "leader-abort", "overlap"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        table = (out / f"{name}.md").read_text()
        assert table.startswith(f"**{name}**") and "| config |" in table and "Seed:" in table
        assert f"**{name}**" in output  # printed as well
        data = json.loads((out / f"{name}.json").read_text())
        assert data["repeats"] == 1 and data["mode"] == "in-process" and data["runs"]


def test_the_token_counts_each_experiment_is_about(quick_all):
    out, _ = quick_all
    hot, _ = rows(out, "hot-prefix")
    assert hot[("prefix-caching", None)]["recovered"] == 48            # the 48-token document: 3 pages
    cold, _ = rows(out, "cold-burst")
    burst = cold[("no coordination, on-completion", 4)]
    assert burst["recovered_total"] == 0 and burst["prefill_tokens"] == 4 * 64   # the seed's finding
    incremental, _ = rows(out, "incremental")
    assert incremental[("on-completion", 2)]["recovered_per_follower"] == 0
    assert incremental[("incremental", 2)]["recovered_per_follower"] == 48      # (64 - 1) // 16 pages
    burst8, _ = rows(out, "burst-8")
    assert burst8[("independent", 8)]["prefill_tokens"] == 800 and burst8[("independent", 8)]["recovered_per_follower"] == 0
    for strategy in ("release-on-completion", "release-after-prefill"):
        assert burst8[(strategy, 8)]["recovered_per_follower"] == 96            # (100 - 1) // 16 pages
        assert burst8[(strategy, 8)]["prefill_tokens"] == 100 + 7 * 4           # each follower: its tail
    late, _ = rows(out, "late-arrival")
    assert late[("on-completion", None)]["second_role"] == "follower"
    assert late[("after-prefill", None)]["second_role"] == "leader"             # the first's flight closed
    assert late[("after-prefill", None)]["recovered"] == 48
    # 200-token prompt, 12 shareable pages; the leader computes one 8-page chunk (128 tokens) and aborts.
    abort, _ = rows(out, "leader-abort")
    assert abort[("release-all", 8)]["prefill_tokens"] == 128 + 7 * (200 - 128)     # every follower recomputes
    assert abort[("promote", 8)]["prefill_tokens"] == 128 + (200 - 128) + 6 * (200 - 192)  # one does, six recover
    assert (abort[("release-all", 8)]["promoted"], abort[("promote", 8)]["promoted"]) == (0, 1)
    # 40-token prompts, 2 shareable pages; at 50% the 20 shared tokens fill one page, at 100% all are equal.
    overlap, _ = rows(out, "overlap")
    assert [overlap[("none", c)]["shared_pages"] for c in (50, 100)] == [1, 2]
    for cell, waiting, computed in ((50, "prefix>=1", 40 + 7 * (40 - 16)), (100, "single-flight", 40 + 7 * (40 - 32))):
        assert overlap[("none", cell)]["prefill_tokens"] == 8 * 40
        assert overlap[(waiting, cell)]["prefill_tokens"] == computed
    assert [overlap[(c, 50)]["via_waits"] for c in ("none", "single-flight", "prefix>=1", "prefix>=8")] == [0, 0, 7, 0]
    assert overlap[("single-flight", 50)]["prefill_tokens"] == overlap[("prefix>=8", 50)]["prefill_tokens"] == 8 * 40
    assert {overlap[(c, 100)]["prefill_tokens"] for c in ("prefix>=1", "prefix>=8", "prefix>=24")} == {96}
    assert overlap[("prefix>=1", 100)]["via_waits"] == 0  # identical prompts follow exactly, as single-flight
    control, _ = rows(out, "control")
    assert control[("single-flight", 4)]["recovered_per_follower"] == 0 and control[("single-flight", 4)]["roles"] == "leader"


def test_changes_are_against_the_baseline_of_the_same_run(quick_all):
    out, _ = quick_all
    burst8, data = rows(out, "burst-8")
    table = (out / "burst-8.md").read_text().splitlines()
    base = burst8[("independent", 8)]["avg_ttft_ms"]
    after = burst8[("release-after-prefill", 8)]["avg_ttft_ms"]
    line = next(x for x in table if "| release-after-prefill |" in x)
    assert f"{(after / base - 1) * 100:+.1f}%" in line
    assert data["baseline"] == "independent"


def test_repeats_give_medians_of_every_run(tmp_path):
    result = bench("release-points", "--quick", "--model", "tiny", "--repeats", "3", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    by_row, data = rows(tmp_path, "release-points")
    assert len(data["runs"]) == 2 * 3
    runs = [r["metrics"]["avg_ttft_ms"] for r in data["runs"] if r["config"] == "after-prefill"]
    assert by_row[("after-prefill", 2)]["avg_ttft_ms"] == sorted(runs)[1]


def test_the_burst_through_http_with_a_local_server_per_run(tmp_path):
    result = bench("burst-8", "--quick", "--server", "local", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    by_row, data = rows(tmp_path, "burst-8")
    assert data["mode"] == "local-http"
    assert by_row[("independent", 8)]["recovered_per_follower"] == 0
    assert by_row[("release-after-prefill", 8)]["recovered_per_follower"] == 96   # usage.cached_tokens
    assert set(by_row[("release-after-prefill", 8)]["roles"].split("/")) <= {"follower", "leader"}  # the extension


def test_the_overlap_table_has_a_row_per_shared_fraction_and_policy_against_none(quick_all):
    out, _ = quick_all
    table = (out / "overlap.md").read_text()
    assert "| shared % | config | shared pages |" in table and "| slowest TTFT vs none |" in table
    assert "| 50 | prefix>=1 | 1 | 7 | 208 |" in table
    _, data = rows(out, "overlap")
    assert [r["config"] for r in data["rows"]][:6] == ["none", "single-flight", "prefix>=1", "prefix>=8", "prefix>=16",
                                                        "prefix>=24"]


def test_the_burst_against_a_running_server_uses_its_policy(tmp_path):
    from flightcheck.impl.engine import Engine, EngineConfig
    from flightcheck.impl.server import Server

    server = Server(Engine.tiny(EngineConfig(num_pages=256, release="on-completion")), port=0).start()
    try:
        result = bench("release-points", "--quick", "--server", server.url, "--out", str(tmp_path))
        assert result.exit_code == 0, result.output
        by_row, data = rows(tmp_path, "release-points")
        [(label, cell)] = by_row
        assert label == "server (single-flight, release on-completion, publication incremental)" and cell == 2
        assert by_row[(label, cell)]["recovered_per_follower"] == 48
    finally:
        server.close()


@pytest.mark.parametrize("args, message", [
    (["burst-9"], "unknown experiment 'burst-9'"),
    (["burst-8", "--server", "ftp://x"], "--server must be 'local' or an http:// URL"),
    (["burst-8", "--server", "http://127.0.0.1:9"], "cannot reach an OpenAI-compatible server"),
    (["burst-8", "--model", "gpt5"], "--model must be smollm2 or tiny"),
    (["burst-8", "--repeats", "0", "--model", "tiny"], "--repeats must be >= 1"),
])
def test_bad_arguments_exit_2(args, message):
    result = CliRunner().invoke(app, ["bench", *args])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
