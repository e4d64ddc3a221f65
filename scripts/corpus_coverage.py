"""The engine's own-scheduling edge coverage of every default scenario, read from the regression corpus.

Each corpus entry keeps, for every program, the spec actions its run took when it was kept; those runs'
edges (symmetry representatives) are compared with the scenario's explored graph under its own default
policy, and each edge no run took is named by the step-loop rule that keeps the engine from taking it
(:mod:`flightcheck.checks.conform.reach`; ``unexplained``: no rule applies, so either the search has not
found it yet or a rule is missing). Prints a markdown table (BENCHMARKS.md). Runs nothing on the engine.

    python scripts/corpus_coverage.py
"""

from __future__ import annotations


def main() -> int:
    from flightcheck.checks.conform.corpus import load, missed_by_reason
    from flightcheck.checks.explore.explorer import explore
    from flightcheck.spec.actions import parse_action
    from flightcheck.spec.model import FlightSpec
    from flightcheck.spec.scenario import SCENARIOS

    print("| scenario (its default policy) | programs | edges | covered | missed, by the step-loop rule that rules each out |")
    print("|---|---:|---:|---:|---|")
    total = [0, 0, 0]
    for entry in load():
        p = SCENARIOS[entry.scenario].policy
        if entry.policy != {"release": p.release, "publication": p.publication, "leader_loss": p.leader_loss}:
            continue
        spec = FlightSpec(SCENARIOS[entry.scenario])
        graph = explore(spec).graph
        sym = spec.symmetry()
        covered = set()
        for trace in entry.traces:
            s = spec.initial()
            cs = sym.canonical(s)[0]
            for text in trace:
                s = spec.apply(s, parse_action(text))
                ct = sym.canonical(s)[0]
                covered.add((cs, ct))
                cs = ct
        covered &= set(graph.edges)
        missed = missed_by_reason(graph, covered, spec)
        n = graph.number_of_edges()
        total = [total[0] + len(entry.programs), total[1] + n, total[2] + len(covered)]
        print(f"| {entry.scenario} | {len(entry.programs)} | {n} | {len(covered)} ({100 * len(covered) / n:.0f}%) | "
              + ", ".join(f"{k} {v}" for k, v in missed.items()) + " |")
    print(f"| all | {total[0]} | {total[1]} | {total[2]} ({100 * total[2] / total[1]:.0f}%) | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
