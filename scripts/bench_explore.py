"""Explorer benchmark: the batched explorer against SPIN on the exported model, in one run.

Run: python scripts/bench_explore.py [--part crosscheck variants liveness symmetry crossover]
     [--scenarios burst4 burst5 ...] [--quick]

Parts (each prints one markdown table):
- crosscheck: for each scale scenario, without symmetry, flightcheck's batched explorer (safety
  properties and deadlock, no edges kept: the work SPIN's safety run does) with the spec read by numpy
  and with it compiled (``compiled=True``; its compile, cached per scope, shown apart as SPIN's build
  is), and SPIN on the exported model (``spin -a -o2``, ``gcc -O2 -DNOREDUCE -DSAFETY``, ``pan``):
  state counts (SPIN counts one more, its start state), verdicts, search time, states per second, and
  the ratios;
- variants: every design variant on small scale scenarios, both checkers' violated properties;
- liveness: ``eventually_terminates`` by the explorer and by SPIN (``pan -a -f``, one process per
  engine action) for every variant on the small default scenarios;
- symmetry: flightcheck with symmetry, every property (liveness included), both release points;
- crossover: the reference explorer against the batched one on the default scenarios (the size
  above which ``--engine auto`` hands over).
Times are wall-clock; CPU seconds are printed beside them, since the machine may be shared. The
crosscheck's "speed ratio" is flightcheck's states per second over SPIN's (pan's own search time),
its "CPU ratio" SPIN's pan CPU seconds over flightcheck's; above 1 flightcheck is faster.
"""

from __future__ import annotations

import argparse
import math
import platform
import time

from flightcheck.checks.explore.batched import explore_batched
from flightcheck.checks.explore.explorer import explore
from flightcheck.checks.promela.spin import SPIN_START_STATES, spin_liveness, spin_safety
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.properties import properties_for
from flightcheck.spec.scenario import RELEASES, SCALE_SCENARIOS, SCENARIOS
from flightcheck.spec.variants import VARIANTS

CROSS = ["burst4", "burst5", "burst6", "burst7", "burst8", "mixed4-evict", "mixed6-evict"]
THREADS: bool | None = None


def safety_props(spec):
    return [p for p in properties_for(spec) if p.kind != "eventually"]


def violated(result, kinds=("always", "deadlock_free")) -> list[str]:
    return sorted(p.name for p in result.properties if not p.holds and p.kind in kinds)


def crosscheck(names: list[str]) -> None:
    print("\n### Batched explorer vs SPIN, no symmetry, safety and deadlock\n")
    print("| scenario | release | states (flightcheck) | states (SPIN - 1) | verdicts equal | numpy s (CPU s) "
          "| compiled s (CPU s) [compile s] | SPIN search s (CPU s) | SPIN with build s | numpy states/s "
          "| compiled states/s | SPIN states/s | speed ratio numpy | speed ratio compiled | CPU ratio compiled |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        for release in RELEASES:
            spec = FlightSpec(SCALE_SCENARIOS[name].with_policy(release=release))
            runs = {}
            for compiled in (False, True):
                cpu0 = time.process_time()
                r = explore_batched(spec, symmetry=False, properties=safety_props(spec), max_states=10**9,
                                    threads=THREADS, compiled=compiled)
                runs[compiled] = (r, time.process_time() - cpu0 - r.extra.get("compile_seconds", 0.0))
            (r, cpu), (c, ccpu) = runs[False], runs[True]
            # SPIN's hash table sized for the graph (2 slots a state), as one would tune it by hand.
            s = spin_safety(spec, hash_bits=max(20, math.ceil(math.log2(2 * r.stats.states))))
            same = violated(r) == violated(c) == sorted(s.violated) \
                and r.stats.states == c.stats.states == s.states - SPIN_START_STATES
            rate, crate, spin_rate = r.stats.states_per_second, c.stats.states_per_second, s.states_per_second
            print(f"| {name} | {release} | {r.stats.states:,} | {s.states - SPIN_START_STATES:,} | "
                  f"{'yes' if same else 'NO'} ({', '.join(violated(r)) or 'all hold'}) | "
                  f"{r.stats.explore_seconds:.2f} ({cpu:.2f}) | {c.stats.explore_seconds:.2f} ({ccpu:.2f}) "
                  f"[{c.extra['compile_seconds']:.1f}] | {s.seconds:.2f} ({s.cpu_seconds:.2f}) | "
                  f"{s.wall_seconds:.1f} | {rate:,.0f} | {crate:,.0f} | {spin_rate:,.0f} | "
                  f"{rate / max(spin_rate, 1e-9):.2f} | {crate / max(spin_rate, 1e-9):.2f} | "
                  f"{s.cpu_seconds / max(ccpu, 1e-9):.2f} |", flush=True)


def variants(names: list[str]) -> None:
    print("\n### Every variant: violated safety properties, batched explorer vs SPIN (no symmetry)\n")
    print("| scenario | variant | states | flightcheck violated | SPIN violated | equal |")
    print("|---|---|---:|---|---|---|")
    for name in names:
        for v in VARIANTS.values():
            spec = v.build(SCALE_SCENARIOS[name].with_policy(**dict(v.demo_policy)))
            r = explore_batched(spec, symmetry=False, properties=safety_props(spec), max_states=10**9)
            s = spin_safety(spec, optimize="-O0")  # counts and verdicts only: build fast
            same = violated(r) == sorted(s.violated) and r.stats.states == s.states - SPIN_START_STATES
            print(f"| {name} | {v.name} | {r.stats.states:,} | {', '.join(violated(r)) or '-'} | "
                  f"{', '.join(sorted(s.violated)) or '-'} | {'yes' if same else 'NO'} |", flush=True)


def liveness(names: list[str]) -> None:
    print("\n### eventually_terminates: explorer (no symmetry) vs SPIN under weak fairness (pan -a -f)\n")
    print("| scenario | variant | flightcheck | SPIN | equal | SPIN s |")
    print("|---|---|---|---|---|---:|")
    for name in names:
        for v in VARIANTS.values():
            spec = v.build(SCENARIOS[name].with_policy(**dict(v.demo_policy)))
            r = explore_batched(spec, symmetry=False)
            ours = "violated" if not r.result("eventually_terminates").holds else "holds"
            s = spin_liveness(spec, optimize="-O0")
            theirs = "violated" if s.violated else "holds"
            print(f"| {name} | {v.name} | {ours} | {theirs} | {'yes' if ours == theirs else 'NO'} | "
                  f"{s.wall_seconds:.1f} |", flush=True)


def symmetry(names: list[str]) -> None:
    print("\n### flightcheck with symmetry: every property (liveness included)\n")
    print("| scenario | release | states | edges | time to verdict (s) | states/s | verdict |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name in names:
        for release in RELEASES:
            r = explore_batched(FlightSpec(SCALE_SCENARIOS[name].with_policy(release=release)), max_states=10**9,
                                threads=THREADS)
            st = r.stats
            print(f"| {name} | {release} | {st.states:,} | {st.edges:,} | {st.seconds:.2f} | "
                  f"{st.states / st.seconds:,.0f} | {'ok' if r.ok else 'violated: ' + ', '.join(p.name for p in r.violations)} |",
                  flush=True)


def crossover() -> None:
    print("\n### Reference explorer vs batched explorer on the default scenarios (symmetry on)\n")
    print("| scenario | release | states | reference s | batched s | batched / reference |")
    print("|---|---|---:|---:|---:|---:|")
    rows = []
    for name, scn in SCENARIOS.items():
        for release in RELEASES:
            spec = FlightSpec(scn.with_policy(release=release))
            t = time.perf_counter()
            a = explore(spec)
            ta = time.perf_counter() - t
            t = time.perf_counter()
            b = explore_batched(spec)
            tb = time.perf_counter() - t
            assert a.stats.states == b.stats.states
            rows.append((a.stats.states, name, release, ta, tb))
    for states, name, release, ta, tb in sorted(rows):
        print(f"| {name} | {release} | {states:,} | {ta:.3f} | {tb:.3f} | {tb / ta:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", nargs="+", default=["crosscheck", "variants", "liveness", "symmetry", "crossover"],
                    choices=["crosscheck", "variants", "liveness", "symmetry", "crossover"])
    ap.add_argument("--scenarios", nargs="+", default=CROSS, choices=list(SCALE_SCENARIOS))
    ap.add_argument("--quick", action="store_true", help="the smaller scenarios only")
    ap.add_argument("--threads", choices=["auto", "on", "off"], default="auto",
                    help="the batched explorer's two-thread pipeline (auto: on with more than one core)")
    args = ap.parse_args()
    global THREADS
    THREADS = {"auto": None, "on": True, "off": False}[args.threads]
    names = [n for n in args.scenarios if not args.quick or n in ("burst4", "burst5", "mixed4-evict")]
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} · Python {platform.python_version()} · {platform.machine()}")
    # numba compiles the hash set's loops on their first call (about a second): not part of any figure.
    warm = FlightSpec(SCALE_SCENARIOS["burst4"])
    explore_batched(warm, symmetry=False, keep_edges=False, properties=safety_props(warm))
    if "crosscheck" in args.part:
        crosscheck(names)
    if "variants" in args.part:
        variants([n for n in ("burst4", "mixed4-evict") if n in names])
    if "liveness" in args.part:
        liveness(["burst2", "burst2-abort", "burst2-evict"] + ([] if args.quick else ["burst3-abort"]))
    if "symmetry" in args.part:
        symmetry([n for n in SCALE_SCENARIOS if not args.quick or n in names])
    if "crossover" in args.part:
        crossover()


if __name__ == "__main__":
    main()
