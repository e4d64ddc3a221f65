"""What one step of the explorer costs: a seeded random walk on every default scenario and on the
largest scale one (burst8-abort: 8 requests with cancels, far too many states to draw), each step fetched over real HTTP from
the app as the page fetches it, beside its peer in the same run: the spec's own successor computation
for the same state (what any explorer must pay).

    python scripts/bench_explorer.py [--steps 40] [--seed 1]

Prints a Markdown table: per scenario, the median and worst time of one step over HTTP, the median
successor computation, and their ratio.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import time
import urllib.parse
import urllib.request

from flightcheck.checks.interactive.app import ExplorerApp
from flightcheck.checks.interactive.design import design_from_query
from flightcheck.checks.interactive.serve import ExplorerServer
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS


def walk(scenario: str, steps: int, seed: int) -> list[str]:
    assert scenario in SCENARIOS or scenario in SCALE_SCENARIOS
    spec = design_from_query({"scenario": scenario}, {}).spec
    rnd, state, path = random.Random(seed), spec.initial(), []
    for _ in range(steps):
        succ = spec.successors(state)
        if not succ:
            break
        action, state = rnd.choice(succ)
        path.append(str(action))
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"{datetime.date.today()} · `python scripts/bench_explorer.py --steps {args.steps} --seed {args.seed}`\n")
    print("| scenario | steps | one step over HTTP, median ms | worst ms | successors alone, median ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    with ExplorerServer(ExplorerApp()) as server:
        for name in [*SCENARIOS, "burst8-abort"]:
            path = walk(name, args.steps, args.seed)
            spec = design_from_query({"scenario": name}, {}).spec
            http, alone, state = [], [], spec.initial()
            for n in range(1, len(path) + 1):
                query = urllib.parse.urlencode({"scenario": name, "path": ",".join(path[:n]), "at": n})
                t = time.perf_counter()
                with urllib.request.urlopen(f"{server.url}/api/state?{query}") as response:
                    json.load(response)
                http.append(time.perf_counter() - t)
                t = time.perf_counter()
                spec.successors(state)
                alone.append(time.perf_counter() - t)
                state = next(s for a, s in spec.successors(state) if str(a) == path[n - 1])
            med, peer = statistics.median(http), statistics.median(alone)
            print(f"| {name} | {len(path)} | {med * 1e3:.1f} | {max(http) * 1e3:.1f} | {peer * 1e3:.2f} | "
                  f"{med / peer:.0f}x |")


if __name__ == "__main__":
    main()
