"""The coverage gate's cost and counts: the check's gate row at --quick scope and over the full grid.

Runs :func:`flightcheck.checks.suite.coverage_gate.coverage_gate_rows` in this process (no cluster), and
prints, for each scope, the verdict, the edge classes the spec reaches, those within the engine's reach,
those driven, those out of reach by rule, the CPU seconds of the spec explorations and the wall time.

    python scripts/bench_coverage_gate.py            # both scopes
    python scripts/bench_coverage_gate.py --quick    # --quick's scope only
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    from flightcheck.checks.suite.coverage_gate import coverage_gate_rows
    from flightcheck.checks.suite.context import Context

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the --quick scope")
    args = parser.parse_args()
    for quick in (True,) if args.quick else (True, False):
        wall, cpu = time.perf_counter(), time.process_time()
        (row,) = coverage_gate_rows(Context(quick=quick))
        ev = row.evidence
        print(json.dumps({"scope": "quick" if quick else "full", "ok": row.ok, "reachable": ev["reachable"],
                          "engine_reachable": ev["engine_reachable"], "driven": ev["driven"],
                          "out_of_reach_by_rule": ev["out_of_reach_by_rule"],
                          "cpu_seconds": round(time.process_time() - cpu, 1),
                          "wall_seconds": round(time.perf_counter() - wall, 1)}))


if __name__ == "__main__":
    main()
