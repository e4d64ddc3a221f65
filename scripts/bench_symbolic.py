"""Time per action and bound of the engine-against-spec check (checks/symbolic), and the largest bound
each action reaches within a time budget; CrossHair's figures beside the enumeration's.

    python scripts/bench_symbolic.py [--bounds 1,3 2,4 2,6 3,6] [--limit 60] [--crosshair-depths 1 2]

For each bound (every configuration of checks/symbolic/bound.py: single-flight, promote, prefix), one
exhaustive run per configuration with ``--limit`` seconds each, then a Markdown table: per action, the
states covered, the commands compared, the seconds its obligations took and the verdict (unfinished
when the budget ran out before the bound was covered). Then the largest bound (in the order given)
each action was verified at (not counting a vacuous verdict: never enabled there). With ``--crosshair-depths``: CrossHair over the same harness at bound
1,3 (single-flight), its paths, distinct states, wall time and verdict per depth.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

from flightcheck.checks.symbolic.bound import parse_bound
from flightcheck.checks.symbolic.check import check_engine


def _exhaustive(bounds: list[str], limit: float) -> None:
    print(f"## exhaustive enumeration ({platform.machine()}, {datetime.date.today()}; {limit:.0f} s per configuration)\n")
    print("| bound | action | states | commands | events | seconds (its obligations) | verdict |")
    print("|---|---|---:|---:|---:|---:|---|")  # verdict "verified (vacuous)": never enabled in the bound
    largest: dict[str, str] = {}
    for text in bounds:
        bound = parse_bound(text)
        start = time.perf_counter()
        rows = check_engine(bound, time_limit=limit, replay=False)
        wall = time.perf_counter() - start
        for r in rows:
            vacuous = " (vacuous)" if r.verified and not r.commands and not r.events else ""
            print(f"| {bound} | {r.action} | {r.states} | {r.commands} | {r.events} | {r.seconds:.2f} | {r.verdict}{vacuous} |")
            if r.verified and not vacuous:
                largest[r.action] = str(bound)
        print(f"| {bound} | (all, wall) | | | | {wall:.1f} | |")
    print("\nlargest bound verified per action: " + ", ".join(f"{a} {b}" for a, b in largest.items()) + "\n")


def _crosshair(depths: list[int], limit: float) -> None:
    from flightcheck.checks.symbolic.bound import Bound
    from flightcheck.checks.symbolic.crosshair_run import crosshair_check

    print(f"## CrossHair over the same harness (bound N=1,M=3, single-flight; {limit:.0f} s per depth)\n")
    print("| depth (commands) | paths | distinct states | wall s | verdict |")
    print("|---:|---:|---:|---:|---|")
    for depth in depths:
        run = crosshair_check(Bound(1, 3), "single-flight", depth=depth, time_limit=limit)
        verdict = "counterexample" if run.findings else "verified" if run.complete else "unfinished"
        print(f"| {depth} | {run.paths} | {run.num_states} | {run.wall_seconds:.1f} | {verdict} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bounds", nargs="+", default=["1,3", "2,4", "2,6", "3,6"])
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per configuration and bound")
    parser.add_argument("--crosshair-depths", nargs="*", type=int, default=[])
    args = parser.parse_args()
    _exhaustive(args.bounds, args.limit)
    if args.crosshair_depths:
        _crosshair(args.crosshair_depths, args.limit)


if __name__ == "__main__":
    main()
