"""The distributed explorer against the single-process explorer, in the same run.

    python scripts/bench_distributed.py [--scenario burst8 --scenario mixed4-evict]

For each scenario: the reference explorer in this process (the peer; safety and deadlock properties
only, as the distributed one checks), then the distributed explorer on an embedded Dask cluster of 1, 2
and 3 worker processes. Prints a Markdown table: states per second of the search (cluster start-up
excluded), its ratio to the peer, each worker's states and resident memory, and whether the state
counts, edges, depth and every verdict with its counterexample's length equal the peer's.
"""

from __future__ import annotations

import argparse
import datetime
import time

from flightcheck.checks.cluster import Cluster
from flightcheck.checks.explore.distributed import KINDS, explore_distributed
from flightcheck.checks.explore.explorer import explore
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.properties import properties_for
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS


def _summary(r) -> tuple:
    return (r.stats.states, r.stats.edges, r.stats.depth,
            [(p.name, p.holds, len(p.counterexample) if p.counterexample else None) for p in r.properties])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", action="append")
    args = ap.parse_args()
    names = args.scenario or ["burst8", "mixed4-evict"]
    print(f"{datetime.date.today()} · `python scripts/bench_distributed.py` "
          f"{' '.join('--scenario ' + n for n in names)}\n")
    print("| scenario | explorer | states | states/s | vs one process | per worker: states, resident MiB | same result |")
    print("|---|---|---:|---:|---:|---|---|")
    for name in names:
        spec = FlightSpec({**SCENARIOS, **SCALE_SCENARIOS}[name])
        props = [p for p in properties_for(spec) if p.kind in KINDS]
        t = time.perf_counter()
        peer = explore(spec, properties=props)
        rate = peer.stats.states / (time.perf_counter() - t)
        print(f"| {name} | one process (reference) | {peer.stats.states:,} | {rate:,.0f} | 1.00 | | |")
        for workers in (1, 2, 3):
            with Cluster(workers=workers) as cluster:
                if workers > 1:
                    cluster.map(abs, [0, 0])  # start the embedded cluster before the clock
                r = explore_distributed(spec, cluster)
            parts = "; ".join(f"{w['states']:,}, {w['rss_mib']:.0f}" for w in r.extra["per_worker"])
            where = "in this process" if workers == 1 else f"{workers} Dask workers"
            print(f"| {name} | distributed, {where} | {r.stats.states:,} | {r.stats.states_per_second:,.0f} | "
                  f"{r.stats.states_per_second / rate:.2f} | {parts} | {'yes' if _summary(r) == _summary(peer) else 'NO'} |")


if __name__ == "__main__":
    main()
