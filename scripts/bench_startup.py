"""Start-up: the CPU of short `flightcheck` commands, this tree against another commit's, and what each imports.

Run: python scripts/bench_startup.py [--before main] [--runs 7] [--scenario burst2 --scenario burst3 ...]

Every figure is the user + system CPU seconds of one child process (and its children), measured by
``os.wait4``, the median of ``--runs`` runs; the two trees' runs alternate, so load on a shared machine
falls on both alike. The commit ``--before`` names is unpacked (``git archive``) into a temporary folder
and run from there; this tree is run in place. Each command is what the console script does,
``python -c "from flightcheck.checks.cli.app import main; main()"``, with the tree on ``PYTHONPATH``:

- ``python -c pass``: the interpreter's own start, the floor of any command;
- ``flightcheck --help``;
- ``flightcheck explore --scenario S --no-cache`` for each ``--scenario`` (the result cache bypassed);
- ``flightcheck validate LOG``, LOG a real engine's event log made here (the tiny model, two requests);
- ``flightcheck check --since HEAD --no-report`` in a scratch repository where nothing changed (no row runs).

Python's bytecode cache is kept in a scratch folder (``PYTHONPYCACHEPREFIX``) and warmed by one untimed
run of each command, as an installed package has it; ``--no-bytecode`` runs with
``PYTHONDONTWRITEBYTECODE=1`` instead, every flightcheck module compiled from source on every run (how
this machine's environment is set, and so what its earlier start-up figures include).

Beside the times, each command's heavy libraries (tests/cli/import_spy.py, the same spy as
tests/cli/test_import_graph.py), one run per tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPY = ROOT / "tests" / "cli" / "import_spy.py"
MAIN = "import sys; from flightcheck.checks.cli.app import main; sys.argv[0] = 'flightcheck'; main()"


def unpack(ref: str, into: Path) -> Path:
    """``ref``'s tracked files under ``into``, with the package links the checkout has (flightcheck/spec ...)."""
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", ref], cwd=ROOT, stdout=out, check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    for name in ("spec", "impl", "checks", "data"):
        link = tree / "flightcheck" / name
        if not link.exists():
            link.symlink_to(Path("..") / name)
    return tree


def cpu_of(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """(user + system CPU seconds, exit status) of ``cmd`` run to its end."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def tree_env(tree: Path | None, cache: Path, bytecode: bool = True) -> dict[str, str]:
    env = {**os.environ, "FLIGHTCHECK_CACHE": str(cache), "COLUMNS": "100"}
    env.pop("FLIGHTCHECK_RESULT_CACHE", None)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def heavy_of(args: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """The heavy libraries ``flightcheck ARGS`` loads (one spied run)."""
    done = subprocess.run([sys.executable, str(SPY), "--", *args], capture_output=True, text=True, env=env, cwd=cwd)
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("IMPORT-SPY ")]
    return sorted(json.loads(lines[-1].partition(" ")[2])) if lines else ["(spy failed)"]


def event_log(folder: Path) -> Path:
    """A real engine's event log, written by this tree's tiny engine."""
    path = folder / "run.events.jsonl"
    code = ("import sys\nfrom flightcheck.impl.engine import Engine, EngineConfig\n"
            "from flightcheck.impl.sampling import SamplingParams\n"
            "e = Engine.tiny(EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1), event_log_path=sys.argv[1])\n"
            "for _ in range(2):\n    e.add_request([3, 1, 4, 1, 5, 9, 2, 6] * 5, SamplingParams(max_tokens=2))\n"
            "e.run()\ne.close()\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, env=tree_env(ROOT, folder / "cache"))
    return path


def scratch_checkout(folder: Path) -> Path:
    """A git repository shaped like a checkout, nothing changed since HEAD (check --since runs no row)."""
    for name in ("spec", "impl", "checks", "flightcheck"):
        (folder / name).mkdir(parents=True)
        (folder / name / "note.txt").write_text("x\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false", *args],
                       cwd=folder, check=True, capture_output=True)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="main", help="The commit to compare with (default: main).")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--scenario", action="append", help="explore's scenarios (default: burst2, burst3).")
    ap.add_argument("--no-bytecode", action="store_true", help="Compile every module on every run (no .pyc).")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fc-startup-"))
    before = unpack(args.before, scratch)
    repo = scratch_checkout(scratch / "repo")
    log = event_log(scratch)
    commands = [("`flightcheck --help`", ["--help"], scratch)]
    for scenario in args.scenario or ["burst2", "burst3"]:
        commands.append((f"`flightcheck explore --scenario {scenario} --no-cache`",
                         ["explore", "--scenario", scenario, "--no-cache"], scratch))
    commands.append(("`flightcheck validate run.events.jsonl` (19 events)", ["validate", str(log)], scratch))
    commands.append(("`flightcheck check --since HEAD --no-report` (nothing changed)",
                     ["check", "--since", "HEAD", "--no-report"], repo))
    bytecode = not args.no_bytecode
    trees = {"before": tree_env(before, scratch / "before-cache", bytecode),
             "after": tree_env(ROOT, scratch / "after-cache", bytecode)}
    rev = {name: subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip() for name, ref in (("before", args.before), ("after", "HEAD"))}
    print(f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, Python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; before = {args.before} ({rev['before']}), after = this tree "
          f"(HEAD {rev['after']}); median of {args.runs} runs, CPU s (user + system); "
          f"{'bytecode cached' if bytecode else 'PYTHONDONTWRITEBYTECODE=1'}\n")
    print("| command | before | after | before / after | heavy libraries before | after |")
    print("|---|---:|---:|---:|---|---|")
    floor = statistics.median(cpu_of([sys.executable, "-c", "pass"], trees["after"], scratch)[0]
                              for _ in range(args.runs))
    print(f"| `python -c pass` | {floor:.2f} | {floor:.2f} | 1.00x | | |")
    for label, argv, cwd in commands:
        times: dict[str, list[float]] = {"before": [], "after": []}
        for env in trees.values():  # untimed: writes the bytecode cache
            cpu_of([sys.executable, "-c", MAIN, *argv], env, cwd)
        for _ in range(args.runs):
            for name, env in trees.items():
                seconds, status = cpu_of([sys.executable, "-c", MAIN, *argv], env, cwd)
                if status not in (0, 1):
                    raise SystemExit(f"{name}: flightcheck {' '.join(argv)} exited {status}")
                times[name].append(seconds)
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        heavy = {name: ", ".join(heavy_of(argv, env, cwd)) or "none" for name, env in trees.items()}
        print(f"| {label} | {b:.2f} | {a:.2f} | {b / a:.2f}x | {heavy['before']} | {heavy['after']} |", flush=True)


if __name__ == "__main__":
    main()
