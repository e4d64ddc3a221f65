"""The server's controlled scheduler against its socket campaign: catches per planted bug, time, shrinking.

For each planted server bug (``checks/server/mutants.py``) and each seed 0..N-1, the seed's program runs
once on the real sockets (``run_program``) and once under the controlled scheduler with the seed's
schedule (``run_seed``: PCT for even seeds, uniform for odd); the first catch of each is shrunk (60 s)
and the shrunk sizes reported. The clean server's time per program is measured both ways in the same
run, as the peer ratio.

    python scripts/bench_interleave.py --seeds 8 --json docs/bench/interleave.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    from flightcheck.checks.server.campaign import shrink as shrink_program
    from flightcheck.checks.server.harness import run_program
    from flightcheck.checks.server.interleave import run_seed, shrink
    from flightcheck.checks.server.mutants import SERVER_MUTANTS
    from flightcheck.checks.server.program import random_program

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    out: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seeds": args.seeds, "mutants": {}}

    clean = {"controlled": [], "sockets": []}
    for seed in seeds:
        t = time.perf_counter()
        assert run_seed(seed).ok
        clean["controlled"].append(time.perf_counter() - t)
        t = time.perf_counter()
        assert run_program(random_program(seed)).ok
        clean["sockets"].append(time.perf_counter() - t)
    out["clean"] = {k: {"median_s": statistics.median(v), "total_s": sum(v)} for k, v in clean.items()}
    print(f"clean server, median per seed: controlled {out['clean']['controlled']['median_s']:.2f} s, "
          f"sockets {out['clean']['sockets']['median_s']:.2f} s")

    for name, (plant, prop) in SERVER_MUTANTS.items():
        row: dict = {}
        with plant():
            for how, run in (("controlled", run_seed), ("sockets", lambda s: run_program(random_program(s)))):
                caught, first, spent = [], None, 0.0
                for seed in seeds:
                    t = time.perf_counter()
                    outcome = run(seed)
                    spent += time.perf_counter() - t
                    if prop in outcome.properties:
                        caught.append(seed)
                        if first is None:
                            first = (seed, spent, outcome)
                entry = {"caught_seeds": caught, "seconds_all": spent,
                         "seconds_to_first": None if first is None else first[1]}
                if first is not None:
                    t = time.perf_counter()
                    if how == "controlled":
                        small = shrink(first[2], 60)
                        entry["shrunk"] = {"steps": len(small.schedule.actions),
                                           "out_of_order": len(small.schedule.departures),
                                           "clients": len(small.program.clients),
                                           "from_steps": len(first[2].schedule.actions),
                                           "from_clients": len(first[2].program.clients)}
                    else:
                        small = shrink_program(first[2], 60)
                        entry["shrunk"] = {"clients": len(small.program.clients),
                                           "from_clients": len(first[2].program.clients),
                                           "still_fails": prop in small.properties}
                    entry["shrink_seconds"] = time.perf_counter() - t
                row[how] = entry
                print(f"{name:32s} {how:10s} caught {len(caught)}/{len(seeds)} {caught} "
                      f"first after {entry['seconds_to_first'] or float('nan'):.1f} s; shrunk {entry.get('shrunk')}")
        out["mutants"][name] = row
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
