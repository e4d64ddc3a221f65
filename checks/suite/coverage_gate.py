"""The coverage gate of ``flightcheck check``: every kind of step the engine can take is driven on it.

The conform stage replays the corpus and runs the seeded campaign, but a replay that passes says nothing
about what it never tried. The gate reads the spec, not the corpus, for what must be tried: every
default scenario under the policies of its grid (``--quick``: under its own policy) is explored, each
reachable edge is put in its abstract class (:mod:`flightcheck.checks.conform.edge_classes`: the action,
the policy combination, 0, 1 or 2+ waiters, pins, publication), and each class some edge of which the
engine's step loop can take (:mod:`flightcheck.checks.conform.reach`) must be taken by some corpus
program's recorded run (the corpus rows fail when a program no longer takes its recorded run). The row
fails naming each class the spec reaches and no program drives, with an example edge; the classes out of
the engine's reach are counted by the step-loop rule that keeps the engine from them.

``flightcheck corpus --grow`` searches for the programs a failing gate asks for.
"""

from __future__ import annotations

import time
from typing import Any

from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.context import Context, parallel


def gate_items(quick: bool) -> list[tuple[str, dict[str, Any], list[list[str]]]]:
    """The gate's units of work: each scenario and policy of the corpus grid (``quick``: each scenario
    under its own policy), with the runs its corpus entry recorded: its programs' traces and its directed
    runs (none when it has no entry)."""
    from flightcheck.checks.conform.corpus import CorpusEntry, grid, load, policy_key
    from flightcheck.spec.scenario import SCENARIOS

    traces = {e.key: e.traces + e.directed for e in load()}
    items = grid()
    if quick:
        items = [(n, p) for n, p in items if p == policy_key(SCENARIOS[n])]
    return [(n, p, traces.get(CorpusEntry(n, p, []).key, [])) for n, p in items]


def _gate_one(item: tuple[str, dict[str, Any], list[list[str]]]) -> tuple[Any, set, float]:
    from flightcheck.checks.conform.corpus import CorpusEntry
    from flightcheck.checks.conform.grow import entry_classes

    t = time.process_time()
    name, policy, traces = item
    reach, driven = entry_classes(CorpusEntry(name, dict(policy), [], list(traces)))
    return reach, driven, time.process_time() - t


def _in_order_one(args: tuple[tuple[str, dict[str, Any], list[list[str]]], set]) -> set:
    """The classes of ``wanted`` some run of the item's spec takes with the engine's admission order."""
    from flightcheck.checks.conform.corpus import CorpusEntry
    from flightcheck.checks.conform.edge_classes import class_paths
    from flightcheck.checks.conform.grow import entry_spec

    (name, policy, _traces), wanted = args
    return set(class_paths(entry_spec(CorpusEntry(name, dict(policy), [])), wanted, tries=1))


def coverage_gate_rows(ctx: Context) -> list[Row]:
    """One row: passes when every edge class within the engine's reach that the gate's scenarios reach in
    the spec is driven by some corpus run; fails naming the undriven classes otherwise. A class no corpus
    run drives is first searched for with the engine's admission order (:func:`~flightcheck.checks.conform.
    edge_classes.class_paths`); one that no such search reaches is out of reach (rule ``fifo-admission``)."""
    from flightcheck.checks.conform.edge_classes import Reachable, gate, gate_summary

    t = time.perf_counter()
    items = gate_items(ctx.quick)
    results = parallel(_gate_one, items, ctx)
    reach, driven, cpu = Reachable(), set(), 0.0
    for r, d, seconds in results:
        reach.merge(r)
        driven |= d
        cpu += seconds
    undriven = set(gate(reach, driven))
    if undriven:
        todo = [(item, r.engine_classes & undriven) for item, (r, _d, _s) in zip(items, results)
                if r.engine_classes & undriven]
        in_order = set().union(*parallel(_in_order_one, todo, ctx))
        reach.exclude(undriven - in_order, "fifo-admission")
    ok, detail, evidence = gate_summary(reach, driven)
    if not ok:
        detail += "; grow the corpus toward them: flightcheck corpus --grow"
    return [Row("conform", "coverage gate: every edge class the engine can take is driven", ok, detail,
                time.perf_counter() - t, {**evidence, "cpu_seconds": round(cpu, 1)})]
