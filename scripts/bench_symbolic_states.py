"""States and seconds of the engine check's enumeration (checks/symbolic), per bound and configuration.

    python scripts/bench_symbolic_states.py [--bounds 2,6 3,6] [--configs single-flight promote prefix]
                                            [--limit SECONDS] [--cpu-limit SECONDS] [--no-symmetry]
                                            [--no-tombstones]

One exhaustive run per bound and configuration (the clean engine, no replay), one after the other in this
process: the states enumerated, whether the bound was covered, the findings, the wall and CPU seconds,
as Markdown table rows. ``--limit``: wall seconds per configuration (unfinished past it); ``--cpu-limit``:
CPU seconds instead (on a shared machine). ``--no-symmetry``: states up to page names only, not request
names (the reductions of ``state_key`` off); ``--no-tombstones``: requests renamed, but the requests that
hold nothing still listed with their endings (the key before the tombstone reduction). Without those
flags the script also runs against a checkout from before a reduction (it asks nothing else of it).
"""

from __future__ import annotations

import argparse
import time

from flightcheck.checks.symbolic.bound import CONFIGS, parse_bound
from flightcheck.checks.symbolic.exhaustive import enumerate_states


def main() -> None:
    """Parse the options, run each bound and configuration, print a row each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bounds", nargs="+", default=["2,6", "3,6"])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--limit", type=float, default=None, help="wall seconds per configuration and bound")
    parser.add_argument("--cpu-limit", type=float, default=None, help="CPU seconds per configuration and bound")
    parser.add_argument("--no-symmetry", action="store_true", help="do not rename requests")
    parser.add_argument("--no-tombstones", action="store_true", help="keep how the requests that hold nothing ended")
    args = parser.parse_args()
    extra: dict = {"symmetry": False} if args.no_symmetry else {}
    if args.no_tombstones:
        extra["tombstones"] = False
    if args.cpu_limit is not None:
        extra.update(time_limit=args.cpu_limit, clock=time.process_time)
    elif args.limit is not None:
        extra["time_limit"] = args.limit
    print("| bound | configuration | states | covered | findings | wall s | CPU s |")
    print("|---|---|---:|---|---:|---:|---:|")
    for text in args.bounds:
        bound = parse_bound(text)
        for config in args.configs:
            wall, cpu = time.perf_counter(), time.process_time()
            run = enumerate_states(bound, config, max_states=10**9, **extra)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"| {bound} | {config} | {run.num_states} | {'yes' if run.complete else 'no'} | "
                  f"{len(run.findings)} | {wall:.1f} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
