"""The fast start: a repeated `flightcheck explore` replayed from the result cache, and a light CLI import.

The subprocess runs use burst2 (52 states) and a cache folder under tmp_path, never the user's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flightcheck.checks.cli import result_cache

ARGS = ["explore", "--scenario", "burst2"]


def _flightcheck(cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FLIGHTCHECK_CACHE": str(cache)}
    env.pop(result_cache.SWITCH, None)
    return subprocess.run([sys.executable, "-m", "flightcheck.checks.cli.app", *args], capture_output=True,
                          env=env, timeout=180)


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "results").glob("*.json"))


def _forge(path: Path, status: int, stdout: str) -> None:
    """An entry with a valid checksum but a text no run prints: seeing it proves a replay."""
    result_cache.store(path, status, stdout)


def test_the_second_run_prints_exactly_what_the_first_printed_and_is_a_replay(tmp_path):
    first = _flightcheck(tmp_path, *ARGS)
    assert first.returncode == 0, first.stderr
    [entry] = _entries(tmp_path)
    assert result_cache.load(entry) == (0, first.stdout.decode())
    second = _flightcheck(tmp_path, *ARGS)
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout)
    assert b"replayed" in second.stderr and b"replayed" not in first.stderr  # a replay always says so
    _forge(entry, 1, "replayed\n")
    third = _flightcheck(tmp_path, *ARGS)
    assert (third.returncode, third.stdout) == (1, b"replayed\n")  # answered from the entry, status included
    fresh = _flightcheck(tmp_path, *ARGS, "--no-cache")  # --no-cache runs it, and leaves the entry alone
    assert (fresh.returncode, fresh.stdout.splitlines()[:-2]) == (0, first.stdout.splitlines()[:-2])
    assert result_cache.load(entry) == (1, "replayed\n")


DAMAGE = [b"{not json", b"", b'{"format": 1, "status": 0, "stdout": "x", "sha256": "0"}', b'["a list"]',
          b"\xff\xfe", b'{"format": 1, "status": true, "stdout": "x"}', b'{"status": 0}']


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_entry_reads_as_a_miss(tmp_path, damage):
    entry = tmp_path / "e.json"
    entry.write_bytes(damage)
    assert result_cache.load(entry) is None


def test_a_damaged_entry_is_ignored_and_written_again(tmp_path):
    first = _flightcheck(tmp_path, *ARGS, "--json")
    [entry] = _entries(tmp_path)
    entry.write_bytes(DAMAGE[0])
    again = _flightcheck(tmp_path, *ARGS, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["stats"]["states"] == json.loads(first.stdout)["stats"]["states"] == 52
    assert result_cache.load(entry) == (0, again.stdout.decode())  # rewritten with the new run


def test_a_verdict_is_kept_but_bad_input_and_faults_are_not(tmp_path, capsys):
    env = {"FLIGHTCHECK_CACHE": str(tmp_path)}

    def violation() -> None:
        print("a property fails")
        raise SystemExit(1)

    def refuse() -> None:
        raise AssertionError("a replay must not run the command")

    with pytest.raises(SystemExit) as done:
        result_cache.run(["explore", "--variant", "x"], violation, env)
    assert done.value.code == 1
    with pytest.raises(SystemExit) as done:
        result_cache.run(["explore", "--variant", "x"], refuse, env)
    assert done.value.code == 1
    assert capsys.readouterr().out == "a property fails\n" * 2
    for status in (2, 3):
        def failing(status: int = status) -> None:
            print("bad")
            raise SystemExit(status)
        with pytest.raises(SystemExit):
            result_cache.run(["explore", f"--status-{status}"], failing, env)
    with pytest.raises(RuntimeError):
        result_cache.run(["explore", "--raises"], lambda: (_ for _ in ()).throw(RuntimeError("boom")), env)
    assert len(_entries(tmp_path)) == 1


def test_runs_with_side_effects_or_another_machine_are_never_cached():
    for argv in (["explore", "--render", "g.svg"], ["explore", "--render=g.svg"], ["explore", "--workers", "2"],
                 ["explore", "--scheduler", "tcp://h:1"], ["explore", "--help"], ["explore", "--no-cache"],
                 ["check"], ["diff"], []):
        assert not result_cache.applies(argv, {}), argv
    assert not result_cache.applies(ARGS, {result_cache.SWITCH: "0"})
    assert result_cache.applies(ARGS, {result_cache.SWITCH: "1"})


def test_the_key_covers_the_arguments_and_the_terminal_environment():
    base = result_cache.entry_key(ARGS, {})
    assert base == result_cache.entry_key(ARGS, {})
    assert base != result_cache.entry_key([*ARGS, "--json"], {})
    assert base != result_cache.entry_key(ARGS, {"COLUMNS": "200"})
    assert base != result_cache.entry_key(ARGS, {"NO_COLOR": "1"})


def test_importing_the_cli_pulls_nothing_heavy_and_building_it_no_numba_networkx_or_scipy():
    code = ("import sys, flightcheck.checks.cli.app as a\n"
            "light = sorted(m for m in ('typer', 'rich', 'numpy', 'z3') if m in sys.modules)\n"
            "a.build_app()\n"
            "heavy = sorted(m for m in ('numba', 'networkx', 'scipy', 'matplotlib', 'hypothesis', 'distributed')"
            " if m in sys.modules)\n"
            "print(light, heavy)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[] []"


def test_a_cache_that_cannot_be_keyed_or_written_leaves_the_run_uncached_not_failed(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    ran = []

    def command() -> None:
        ran.append(1)
        print("ran")
        raise SystemExit(0)

    for _ in range(2):  # the folder is a file: nothing is kept, so the command runs every time
        with pytest.raises(SystemExit) as done:
            result_cache.run(ARGS, command, {"FLIGHTCHECK_CACHE": str(blocker)})
        assert done.value.code == 0
    monkeypatch.setattr(result_cache, "source_digest", lambda: (_ for _ in ()).throw(OSError("unreadable")))
    with pytest.raises(SystemExit):
        result_cache.run(ARGS, command, {"FLIGHTCHECK_CACHE": str(tmp_path / "c")})
    assert len(ran) == 3 and capsys.readouterr().out == "ran\n" * 3 and not (tmp_path / "c").exists()
