"""Benchmark the z3 checks: BMC depth reached in a time budget, and k-induction time per property.

Prints markdown tables (for BENCHMARKS.md). For example::

    python scripts/bench_z3.py                      # 60 s of BMC per scenario, induction on all defaults
    python scripts/bench_z3.py --budget 10 --bmc-scenarios burst2
"""

from __future__ import annotations

import argparse
import platform
import time

import z3

from flightcheck.checks.proofs.bmc import check_bmc
from flightcheck.checks.proofs.induction import prove
from flightcheck.spec.scenario import RELEASES, SCENARIOS
from flightcheck.spec.variants import VARIANTS


def bmc_depth(scenario: str, budget: float) -> tuple[int, list[float]]:
    """The deepest depth fully checked (all safety properties, no violation) within ``budget`` seconds."""
    spec = VARIANTS["correct"].build(SCENARIOS[scenario])
    start = time.monotonic()
    marks: list[float] = []
    results = check_bmc(spec, depth=200, deadline=start + budget,
                        on_depth=lambda t: marks.append(time.monotonic() - start))
    assert all(r.status == "bounded" for r in results), [r.summary() for r in results]
    return results[0].depth, marks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of BMC per scenario")
    ap.add_argument("--bmc-scenarios", nargs="*", default=["burst2", "burst2-abort", "burst3-abort", "burst4-abort"])
    ap.add_argument("--max-k", type=int, default=2)
    args = ap.parse_args()
    print(f"z3 {z3.get_version_string()}, Python {platform.python_version()}, {platform.machine()}")
    print()
    print(f"BMC of the correct design (every safety property + no_deadlock), {args.budget:.0f} s budget:")
    print()
    print("| scenario | policy | depth reached | seconds to that depth | seconds at depth/2 |")
    print("|---|---|---:|---:|---:|")
    for name in args.bmc_scenarios:
        depth, marks = bmc_depth(name, args.budget)
        half = marks[len(marks) // 2] if marks else 0.0
        print(f"| {name} | {SCENARIOS[name].policy.label()} | {depth} | {marks[-1] if marks else 0:.1f} | {half:.2f} |", flush=True)
    print()
    print(f"k-induction of the correct design (max k={args.max_k}, BMC base to depth 2); seconds per property")
    print("are its own induction queries; 'base' is the shared BMC base case:")
    print()
    per_prop: dict[str, list[float]] = {}
    verdicts: dict[str, set[str]] = {}
    print("| scenario | release | total s | BMC base s | proved | not proved |")
    print("|---|---|---:|---:|---:|---|")
    for name in SCENARIOS:
        for release in RELEASES:
            spec = VARIANTS["correct"].build(SCENARIOS[name].with_policy(release=release))
            report = prove(spec, max_k=args.max_k, depth=2)
            for r in report.results + report.lemmas:
                per_prop.setdefault(r.property, []).append(r.seconds)
                verdicts.setdefault(r.property, set()).add(r.status if r.status != "proved" else f"proved k={r.k}")
            proved = sum(r.status == "proved" for r in report.results)
            rest = ", ".join(r.property for r in report.results if r.status != "proved") or "-"
            print(f"| {name} | {release} | {report.seconds:.2f} | {report.bmc_seconds:.2f} | "
                  f"{proved}/{len(report.results)} | {rest} |", flush=True)
    print()
    print("Per property (and lemma), over those 18 runs: its own induction query time.")
    print()
    print("| property | verdicts | median s | max s |")
    print("|---|---|---:|---:|")
    for prop, secs in per_prop.items():
        secs = sorted(secs)
        print(f"| {prop} | {', '.join(sorted(verdicts[prop]))} | {secs[len(secs) // 2]:.3f} | {secs[-1]:.3f} |")

if __name__ == "__main__":
    main()
