"""The import graph of four command paths: heavy libraries load only where the command uses them (issue 44).

Each test runs the command in a subprocess under tests/cli/import_spy.py, which notes the first importer
of each heavy library, and fails naming the library and the chain that imported it, so that an eager
``import`` added at some module's top fails here rather than as a slower start nobody measures. The
times are in BENCHMARKS.md ("Start-up"), made by scripts/bench_startup.py; nothing here is timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from import_spy import HEAVY

SPY = Path(__file__).with_name("import_spy.py")

# What each path may load, out of HEAVY: the reference explorer, which `explore` runs below 250 states,
# keeps its graph in networkx. Everything else is forbidden on these paths.
ALLOWED = {"--help": set(), "explore": {"networkx"}, "validate": set(), "check --since": set()}


def spy(args: list[str], tmp_path: Path, *, cwd: Path | None = None, stop_at: str | None = None) -> tuple[dict, str]:
    """({library: importer chain}, stdout + stderr) of ``flightcheck ARGS`` under the spy."""
    env = {**os.environ, "FLIGHTCHECK_CACHE": str(tmp_path / "cache"), "COLUMNS": "100"}
    env.pop("FLIGHTCHECK_RESULT_CACHE", None)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    spied = [sys.executable, str(SPY), *(["--stop-at", stop_at] if stop_at else []), "--", *args]
    done = subprocess.run(spied, capture_output=True, text=True, cwd=cwd or tmp_path, env=env, timeout=300)
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("IMPORT-SPY ")]
    assert lines, f"the spy printed nothing (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    assert done.returncode in (0, 1), f"exit {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return json.loads(lines[-1].partition(" ")[2]), done.stdout + done.stderr


def assert_light(path: str, loaded: dict) -> None:
    wrong = {name: chain for name, chain in loaded.items() if name in HEAVY and name not in ALLOWED[path]}
    assert not wrong, f"`flightcheck {path}` imported " + "; ".join(
        f"{name}, first by {' <- '.join(ours(chain))}" for name, chain in sorted(wrong.items())) + (
        ". Import it inside the function that uses it (see BENCHMARKS.md, Start-up).")


def ours(chain: list[str]) -> list[str]:
    """The chain's flightcheck frames (typer's and click's between them say nothing), or all of it if none."""
    return [c for c in chain if c.startswith("flightcheck.")] or chain


def test_help_loads_no_heavy_library(tmp_path):
    loaded, out = spy(["--help"], tmp_path)
    assert "explore" in out and "validate" in out
    assert_light("--help", loaded)


def test_a_small_explore_loads_only_the_reference_explorers_graph_library(tmp_path):
    loaded, out = spy(["explore", "--scenario", "burst2", "--no-cache"], tmp_path)
    assert "explorer: reference" in out  # the path under test: auto below the batched explorer's threshold
    assert_light("explore", loaded)


@pytest.fixture(scope="module")
def event_log(tmp_path_factory) -> Path:
    """A real engine's event log (the tiny model, two requests sharing a prompt)."""
    from flightcheck.impl.engine import Engine, EngineConfig
    from flightcheck.impl.sampling import SamplingParams

    path = tmp_path_factory.mktemp("log") / "run.events.jsonl"
    engine = Engine.tiny(EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1), event_log_path=str(path))
    for _ in range(2):
        engine.add_request([3, 1, 4, 1, 5, 9, 2, 6] * 5, SamplingParams(max_tokens=2))
    engine.run()
    engine.close()
    return path


def test_validating_a_log_loads_no_heavy_library(tmp_path, event_log):
    loaded, out = spy(["validate", str(event_log)], tmp_path)
    assert "valid:" in out
    assert_light("validate", loaded)


def _checkout(folder: Path) -> Path:
    """A git repository shaped like a flightcheck checkout (what check --since asks of its folder)."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                       cwd=folder, check=True, capture_output=True, timeout=60)

    for name in ("spec", "impl", "checks", "flightcheck"):
        (folder / name).mkdir(parents=True)
        (folder / name / "note.txt").write_text("x\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "start")
    return folder


def test_check_since_loads_no_heavy_library_before_its_rows(tmp_path):
    repo = _checkout(tmp_path / "repo")
    loaded, out = spy(["check", "--since", "HEAD", "--no-report"], tmp_path, cwd=repo)
    assert "nothing changed since HEAD" in out
    assert_light("check --since", loaded)
    (repo / "checks" / "note.txt").write_text("changed\n")  # a path no rule knows: every stage is selected
    loaded, out = spy(["check", "--since", "HEAD", "--no-report"], tmp_path, cwd=repo,
                      stop_at="flightcheck.checks.suite.job:run_suite")
    assert "IMPORT-SPY-STOPPED" in out and "running" in out  # up to the first row, not past it
    assert_light("check --since", loaded)


def test_the_command_table_names_each_command_and_a_one_command_app_says_what_the_full_one_says():
    """The console script builds only the named command's module (checks/cli/app.py, COMMANDS): the
    table must name every command, and the app of one command must answer as the whole app does."""
    import typer.main
    from typer.testing import CliRunner

    from flightcheck.checks.cli.app import COMMANDS, build_app

    full = build_app()
    assert sorted(typer.main.get_command(full).commands) == sorted(COMMANDS)
    runner = CliRunner()
    for command in COMMANDS:
        one = build_app(command)
        assert list(typer.main.get_command(one).commands) == [command]
        expected, got = (runner.invoke(app, [command, "--help"], env={"COLUMNS": "100"}) for app in (full, one))
        assert (got.exit_code, got.output) == (expected.exit_code, expected.output), command
