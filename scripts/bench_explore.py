"""Explorer benchmark: states per second and time to verdict, with and without symmetry.

Run: python scripts/bench_explore.py [--scenarios burst4-abort burst5-abort]
Prints one markdown table row per (scenario, release, symmetry).
"""

from __future__ import annotations

import argparse
import platform
import time

from flightcheck.checks.explore.explorer import explore
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import RELEASES, SCENARIOS, burst

EXTRA = {
    "burst5-abort": burst(5, aborts=True, notifications=True, name="burst5-abort"),
    "burst4x2-abort": burst(4, classes=2, aborts=True, notifications=True, name="burst4x2-abort"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scenarios", nargs="+", default=["burst3-abort", "burst4-abort", "burst5-abort"])
    ap.add_argument("--no-full", action="store_true", help="skip the runs without symmetry")
    args = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')} · Python {platform.python_version()} · {platform.machine()}")
    print("| scenario | release | symmetry | states | edges | time to verdict (s) | states/s | verdict |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for name in args.scenarios:
        scn = SCENARIOS.get(name) or EXTRA[name]
        for release in RELEASES:
            for sym in (True, False):
                if not sym and (args.no_full or name.startswith("burst5")):
                    continue
                spec = FlightSpec(scn.with_policy(release=release))
                r = explore(spec, symmetry=sym)
                st = r.stats
                print(f"| {name} | {release} | {'on' if sym else 'off'} | {st.states:,} | {st.edges:,} | "
                      f"{st.seconds:.2f} | {st.states_per_second:,.0f} | {'ok' if r.ok else 'violated'} |", flush=True)


if __name__ == "__main__":
    main()
