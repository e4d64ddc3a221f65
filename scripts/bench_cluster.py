"""Wall time of one check stage in one process, on the embedded Dask cluster, and on a real Dask
scheduler with two workers on 127.0.0.1, in the same run (the peer is the one-process run).

    python scripts/bench_cluster.py [--stage explore] [--repeats 3]

Prints a Markdown table: the median wall time of `flightcheck check --quick --stage STAGE --no-report
--json` per setting, its ratio to one process, and whether every setting gave the same rows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

from local_dask import local_dask_cluster


def _check(stage: str, *extra: str) -> tuple[float, list]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "flightcheck.checks.cli.app", "check", "--quick", "--stage", stage,
                        "--no-report", "--json", *extra], capture_output=True, text=True, check=True)
    rows = json.loads(p.stdout.strip().splitlines()[-1])["rows"]
    return time.perf_counter() - t, [(r["item"], r["ok"], r["detail"]) for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", default="explore")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with local_dask_cluster(workers=2) as address:
        settings = {"one process (--workers 1)": ("--workers", "1"),
                    "embedded local cluster, 2 workers (default)": ("--workers", "2"),
                    "dask scheduler + 2 dask workers (--scheduler)": ("--scheduler", address)}
        times: dict[str, list[float]] = {k: [] for k in settings}
        rows: dict[str, list] = {}
        for _ in range(args.repeats):  # interleaved, so a noisy neighbour hits every setting alike
            for name, extra in settings.items():
                seconds, got = _check(args.stage, *extra)
                times[name].append(seconds)
                rows[name] = got
        base = statistics.median(times["one process (--workers 1)"])
        same = len({json.dumps(r) for r in rows.values()}) == 1
        print(f"`check --quick --stage {args.stage}`, {len(next(iter(rows.values())))} rows, median of "
              f"{args.repeats}, {datetime.date.today()} on {os.cpu_count()} cores; same rows everywhere: {same}\n")
        print("| setting | wall s (median) | vs one process |\n|---|---|---|")
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"| {name} | {m:.1f} | {m / base:.2f}x |")


if __name__ == "__main__":
    main()
