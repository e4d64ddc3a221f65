"""Fast start: the CPU of a first and a second `flightcheck explore --scenario burst4`, against peers in the same run.

Run: python scripts/bench_fast_start.py [--runs 5] [--scenario burst4]

Every figure is the user + system CPU seconds of one child process (and its children), the median of
``--runs`` runs, measured by ``os.wait4``, so that other work on a shared machine counts only through
contention. Rows:

- ``python -c pass``: the interpreter's own start, the floor of any command;
- ``flightcheck explore`` with an empty result cache (a first run; the numba kernels of the visited set
  are already compiled on disk, as after any first use), and ``--no-cache`` (the same, the cache bypassed);
- ``flightcheck explore`` a second time: answered from the result cache (``checks/cli/result_cache.py``);
- SPIN on the same scenario exported by ``flightcheck export --promela`` (no symmetry reduction: SPIN
  has none, so it searches more states): ``spin -a -o2`` plus ``gcc -O2 -DNOREDUCE -DSAFETY`` (its
  first run), then ``./pan`` alone (its second run).

The ``flightcheck`` console script beside this interpreter is run (not a pyenv shim, whose own start
would count); the cache lives in a temporary ``$FLIGHTCHECK_CACHE``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def cpu_of(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[float, int, bytes]:
    """(user + system CPU seconds, exit status, stdout) of running ``cmd`` to its end."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, proc.returncode, out.read()


def flightcheck_command() -> list[str]:
    """The console script installed beside this interpreter, else ``python -m`` the app."""
    script = Path(sys.executable).parent / "flightcheck"
    return [str(script)] if script.exists() else [sys.executable, "-m", "flightcheck.checks.cli.app"]


def median_cpu(cmd: list[str], env: dict[str, str], runs: int, before=None, cwd: str | None = None) -> float:
    """The median CPU of ``runs`` runs of ``cmd``, ``before()`` called ahead of each (to empty a cache)."""
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        seconds, status, _ = cpu_of(cmd, env, cwd)
        if status not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} exited {status}")
        times.append(seconds)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scenario", default="burst4")
    args = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="fc-fast-start-"))
    env = {**os.environ, "FLIGHTCHECK_CACHE": str(cache)}
    env.pop("FLIGHTCHECK_RESULT_CACHE", None)
    fc = flightcheck_command()
    explore = [*fc, "explore", "--scenario", args.scenario]
    results = cache / "results"
    rows = [("`python -c pass`", median_cpu([sys.executable, "-c", "pass"], env, args.runs))]
    rows.append(("`flightcheck explore` first run (empty result cache)",
                 median_cpu(explore, env, args.runs, before=lambda: shutil.rmtree(results, ignore_errors=True))))
    rows.append(("`flightcheck explore --no-cache`", median_cpu([*explore, "--no-cache"], env, args.runs)))
    _, _, first = cpu_of(explore, env)
    _, _, second = cpu_of(explore, env)
    rows.append(("`flightcheck explore` second run (result cache)", median_cpu(explore, env, args.runs)))
    same = "yes" if first == second else "NO"
    if shutil.which("spin") and shutil.which("gcc"):
        work = tempfile.mkdtemp(prefix="fc-fast-start-spin-")
        pml = Path(work) / "model.pml"
        subprocess.run([*fc, "export", "--promela", "--scenario", args.scenario, "--out", str(pml)], env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        build_cpu = median_cpu(["sh", "-c", "spin -a -o2 model.pml >/dev/null && "
                                "gcc -O2 -DNOREDUCE -DSAFETY -o pan pan.c"], env, 1, cwd=work)
        rows.append(("SPIN first run (`spin -a -o2` + `gcc -O2`, then `./pan`)",
                     build_cpu + median_cpu(["./pan"], env, 1, cwd=work)))
        rows.append(("SPIN second run (`./pan` already built)", median_cpu(["./pan"], env, args.runs, cwd=work)))
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"median of {args.runs} runs; second run's stdout identical to the first's: {same}\n")
    print(f"| {args.scenario} | CPU s (user + system) |\n|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
