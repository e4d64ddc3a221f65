"""Benchmark: the full 420-configuration workload sweep over a shared trace.

Measures, in one run (with the 1-minute load average, since other work on the machine slows it):
- loading and preparing the trace;
- the sweep as ``flightcheck workload --sweep`` runs it (2 worker processes, shared per-instance work);
- the peer: every configuration simulated on its own in this process, without sharing, timed one by one,
  which gives the per-configuration throughput in block lookups per second.
The two sweeps must agree on every summary; the script exits 1 if they do not.

    python scripts/bench_workload.py                  # conversation trace, 2 workers
    python scripts/bench_workload.py --trace synthetic --workers 2 --no-peer
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time

from flightcheck.checks.workload.opportunity import prepare_trace, simulate
from flightcheck.checks.workload.sweep import run_sweep, sweep_configs
from flightcheck.checks.workload.trace import load_trace, shared_trace_path


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (the sweep's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="conversation", help="shared trace name or a path")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-peer", action="store_true", help="skip the one-by-one peer sweep")
    args = parser.parse_args()

    path = args.trace if os.path.isfile(args.trace) else shared_trace_path(args.trace)
    t0 = time.perf_counter()
    prepared = prepare_trace(load_trace(path))
    load_s = time.perf_counter() - t0
    configs = sweep_configs()
    lookups = prepared.num_block_lookups * len(configs)

    load_before = os.getloadavg()[0]
    cpu0 = _cpu_s()
    t0 = time.perf_counter()
    pooled = run_sweep([prepared], configs, workers=args.workers)
    sweep_s = time.perf_counter() - t0
    sweep_cpu_s = _cpu_s() - cpu0
    report = {
        "trace": prepared.name, "num_requests": prepared.num_requests,
        "block_lookups_per_config": prepared.num_block_lookups, "num_configs": len(configs),
        "load_and_prepare_s": round(load_s, 3), "workers": args.workers,
        "sweep_wall_s": round(sweep_s, 2), "sweep_cpu_s": round(sweep_cpu_s, 2),
        "sweep_lookups_per_s": round(lookups / sweep_s), "load_average_1min_before_sweep": load_before,
        "cpu_count": os.cpu_count(), "python": platform.python_version(),
    }
    if not args.no_peer:
        per_config = []
        t0 = time.perf_counter()
        for config, shared in zip(configs, pooled):
            c0 = time.perf_counter()
            alone = simulate(prepared, config)
            per_config.append(prepared.num_block_lookups / (time.perf_counter() - c0))
            if alone.summary != shared.summary:
                print(f"MISMATCH at {config}", file=sys.stderr)
                return 1
        peer_s = time.perf_counter() - t0
        report |= {
            "peer_serial_unshared_wall_s": round(peer_s, 2),
            "per_config_lookups_per_s_median": round(statistics.median(per_config)),
            "per_config_lookups_per_s_min": round(min(per_config)),
            "per_config_lookups_per_s_max": round(max(per_config)),
            "speedup_sweep_vs_peer": round(peer_s / sweep_s, 2),
        }
    report["load_average_1min_at_end"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
