"""The mutation run's wall time on Dask against the thread pool it replaced, in the same run.

    python scripts/bench_mutate_cluster.py [--sample 8] [--seed 3]

A seeded sample of the coordinator's mutants through check's probe and shape rows, two at a time: on a
plain ``ThreadPoolExecutor`` of two threads (the runner before Dask, the peer), on the embedded Dask
cluster (``flightcheck mutate``'s default) and on a real ``dask scheduler`` with two ``dask worker``
processes on 127.0.0.1 (``--scheduler``). Prints a Markdown table: wall time, ratio to the pool, and
whether every mutant got the same verdict.
"""

from __future__ import annotations

import argparse
import datetime
import time
from concurrent.futures import ThreadPoolExecutor

from local_dask import local_dask_cluster

from flightcheck.checks.mutate.plan import plan, resolve_target
from flightcheck.checks.mutate.runner import RunOptions, run_mutant, run_mutants

STAGES = ("flightcheck.checks.suite.stage_conform:probe_rows", "flightcheck.checks.suite.stage_conform:shape_rows")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=8)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    p = plan([resolve_target("impl/coordinator.py")], sample=args.sample, seed=args.seed)
    opts = RunOptions(stages=STAGES, quick=True, jobs=2)
    runs = {}
    t = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        runs["thread pool (peer)"] = list(pool.map(lambda m: run_mutant(m, p.paths[m.module], opts, 300), p.to_run))
    seconds = {"thread pool (peer)": time.perf_counter() - t}
    t = time.perf_counter()
    runs["embedded Dask cluster"] = run_mutants(p.to_run, p.paths, opts, 300)
    seconds["embedded Dask cluster"] = time.perf_counter() - t
    with local_dask_cluster(workers=2) as address:
        t = time.perf_counter()
        runs["dask scheduler, 2 workers"] = run_mutants(p.to_run, p.paths, opts, 300, scheduler=address)
        seconds["dask scheduler, 2 workers"] = time.perf_counter() - t
    peer = [(o.id, o.status) for o in runs["thread pool (peer)"]]
    print(f"{datetime.date.today()} · `python scripts/bench_mutate_cluster.py --sample {args.sample} --seed {args.seed}`"
          f" · {len(p.to_run)} mutants of impl/coordinator.py, stages probe_rows + shape_rows, two at a time\n")
    print("| where the mutants ran | wall s | ratio to the pool | verdicts as the pool's |")
    print("|---|---:|---:|---|")
    for name, outcomes in runs.items():
        same = [(o.id, o.status) for o in outcomes] == peer
        print(f"| {name} | {seconds[name]:.1f} | {seconds[name] / seconds['thread pool (peer)']:.2f} | "
              f"{'yes' if same else 'NO'} |")
    pool = runs["thread pool (peer)"]
    counts = {k: sum(o.status == k for o in pool) for k in sorted({o.status for o in pool})}
    print("\nverdicts: " + ", ".join(f"{k} {n}" for k, n in counts.items()))


if __name__ == "__main__":
    main()
