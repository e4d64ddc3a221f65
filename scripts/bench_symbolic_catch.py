"""Time to catch each of the project's engine mutants: the exhaustive engine check against the seeded
conformance campaign, in the same run.

    python scripts/bench_symbolic_catch.py [--seconds 120] [--mutants NAME ...]

For each mutant of ``checks/conform/mutants.py`` that the engine check catches: the engine check at the
smallest bound that exposes it (``check_engine(..., mutant=...)``, stopping at its first counterexample,
no replay), and the peer, ``flightcheck conform --mutant NAME --seed 0 --json`` (Hypothesis campaigns
until the first failure and its shrinking, at most ``--seconds``), each a fresh process timed from the
start. Prints a Markdown table with the wall times and their ratio.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time

CAUGHT = {  # mutant -> the smallest bound at which the engine check exposes it
    "publish-before-compute": "1,3", "forget-released": "1,3", "leak-ref-on-abort": "1,3",
    "strand-followers": "1,3", "accept-unknown-termination": "1,3", "follower-admitted-early": "2,3",
    "unpinned-release": "2,3", "expire-forgets": "2,3", "admit-ignores-reservations": "2,3",
    "waiter-pins-leader-tail": "2,3", "waiter-unpinned": "2,3", "promote-loses-followers": "3,3",
    "via-earliest-flight": "3,3", "lru-stale-hit": "2,3", "eos-ignored": "1,3", "stop-as-length": "1,3",
    "evict-referenced": "3,4,branches", "heir-earliest-waiter": "3,3",
}
ENGINE = ("import json, sys; from flightcheck.checks.symbolic.bound import parse_bound; "
          "from flightcheck.checks.symbolic.check import check_engine; "
          "rows = check_engine(parse_bound(sys.argv[1]), mutant=sys.argv[2], replay=False); "
          "print(json.dumps([r.action for r in rows if r.verdict == 'counterexample']))")


def _timed(cmd: list[str], timeout: float) -> tuple[float, str]:
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else f"exit {p.returncode}"
    except subprocess.TimeoutExpired:
        out = "timeout"
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--mutants", nargs="+", choices=list(CAUGHT), default=list(CAUGHT), help="only these")
    args = ap.parse_args()
    only = "" if args.mutants == list(CAUGHT) else " --mutants " + " ".join(args.mutants)
    print(f"{datetime.date.today()} · `python scripts/bench_symbolic_catch.py --seconds {args.seconds:g}{only}`\n")
    print("| mutant | bound | engine check s | caught by | conform campaign s (peer) | campaign verdict | ratio |")
    print("|---|---|---:|---|---:|---|---:|")
    for name in args.mutants:
        bound = CAUGHT[name]
        e_s, e_out = _timed([sys.executable, "-c", ENGINE, bound, name], 600)
        with tempfile.TemporaryDirectory() as saved:  # the campaign's failing programs are not kept
            c_s, c_out = _timed([sys.executable, "-m", "flightcheck.checks.cli.app", "conform", "--mutant", name,
                                 "--seed", "0", "--json", "--seconds", str(int(args.seconds)), "--save-dir", saved],
                                args.seconds + 300)
        try:
            verdict = json.loads(c_out).get("verdict", "?")
        except ValueError:
            verdict = c_out[:40]
        caught = ", ".join(json.loads(e_out)) if e_out.startswith("[") else e_out
        print(f"| {name} | {bound} | {e_s:.1f} | {caught} | {c_s:.1f} | {verdict} | {c_s / e_s:.2f} |")


if __name__ == "__main__":
    main()
