"""Benchmark: engine steps per second under lockstep checking, and spec-edge coverage reached in 60 s.

Usage::

    python scripts/bench_conform.py            # full: ~4 minutes
    python scripts/bench_conform.py --quick    # a smoke run (~20 s)

1. The same seeded workloads (bursts of identical and mixed prompts with aborts, on the tiny model)
   are run twice: on the bare engine and on the engine with the online monitor (every event checked
   against the spec, the abstract state compared after every event). Steps per second of both, and
   their ratio, from the wall time of the engine calls only.
2. Spec-edge coverage: for each default scenario, the engine's own runs (``cover``) for a fixed time
   budget, and the directed replay (``cover_directed``) to every edge, with its time.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from flightcheck.checks.conform.engines import build_engine
from flightcheck.checks.conform.prompts import class_tokens
from flightcheck.checks.conform.coverage import cover, cover_directed
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.sampling import SamplingParams
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES, SCENARIOS


def workload(seed: int, checked: bool) -> tuple[int, float]:
    """One seeded run; returns (engine steps, seconds spent in engine calls)."""
    rng = random.Random(seed)
    config = EngineConfig(max_running=rng.choice((2, 4)), prefill_chunk_pages=rng.choice((1, 64)), num_pages=64,
                          release=rng.choice(RELEASES),
                          publication=rng.choice(PUBLICATIONS))
    engine = build_engine("tiny", config)
    if checked:
        Monitor(engine)
    prompts = [class_tokens(c, 16 * rng.randint(1, 3) + rng.choice((0, 5)), 256) for c in range(2)]
    steps, spent = 0, 0.0
    for _ in range(6):
        t = time.perf_counter()
        engine.add_request(rng.choice(prompts), SamplingParams(max_tokens=rng.randint(2, 6)))
        spent += time.perf_counter() - t
        for _ in range(rng.randint(0, 2)):
            t = time.perf_counter()
            engine.step()
            spent += time.perf_counter() - t
            steps += 1
    live = [r for r, q in engine.scheduler.requests.items() if q.phase.is_live]
    if live and rng.random() < 0.5:
        t = time.perf_counter()
        engine.abort(rng.choice(live))
        spent += time.perf_counter() - t
    while engine.has_unfinished():
        t = time.perf_counter()
        engine.step()
        spent += time.perf_counter() - t
        steps += 1
    return steps, spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--part", choices=("all", "steps", "coverage"), default="all", help="what to measure")
    args = parser.parse_args()
    runs = 20 if args.quick else 200
    budget = 5.0 if args.quick else 60.0
    out: dict = {"runs": runs}
    workload(0, True)  # warm-up: model load, MLX compilation
    for label, checked in (("bare", False), ("checked", True)) if args.part != "coverage" else ():
        steps = seconds = 0
        for seed in range(runs):
            s, t = workload(seed, checked)
            steps, seconds = steps + s, seconds + t
        out[label] = {"steps": steps, "seconds": round(seconds, 3), "steps_per_second": round(steps / seconds, 1)}
    if args.part != "coverage":
        out["checked_over_bare"] = round(out["checked"]["steps_per_second"] / out["bare"]["steps_per_second"], 3)
    names = [] if args.part == "steps" else ["burst2", "notail", "burst2-abort", "burst2-cap1"] if args.quick else [n for n in SCENARIOS if n != "burst4-abort"]
    out["coverage"] = []
    for name in names:
        own = cover(SCENARIOS[name], seconds=budget)
        row = {"scenario": name, "edges": own.num_edges, "own_runs": own.runs,
               "own_edge_fraction": round(own.edge_fraction, 4), "own_seconds": budget}
        if own.num_edges <= 1000 or not args.quick:
            t = time.perf_counter()
            directed = cover_directed(SCENARIOS[name], seconds=budget, explored=own.explored)
            row.update(directed_edge_fraction=round(directed.edge_fraction, 4),
                       directed_seconds=round(time.perf_counter() - t, 1))
        out["coverage"].append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps(out, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
