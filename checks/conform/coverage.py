"""Spec coverage: which states and edges of a scenario's explored graph the real engine's runs visit.

:func:`cover` explores a scenario (with symmetry reduction) and then drives the engine through random
runs whose arrivals match that scenario request by request: arrivals in a random order, engine steps,
holds and resumes of a request's prefill (to force other interleavings), random ``max_tokens`` up to
the scenario's decode bound (so requests finish at different points), aborts and bogus terminations
where the scenario allows them, and pools from tight (evictions) to ample. Every run is checked online
against the spec; its spec actions are mapped onto the explored graph through the canonical renaming
of :mod:`flightcheck.spec.symmetry`, so that each engine transition lands on an explorer edge.

Some edges are out of the engine's reach by design, and the coverage figures say so rather than hide
it (:mod:`flightcheck.checks.conform.reach` names the reason of each): the engine finishes a request in
the same step as its last token (the spec may delay ``finish``), publishes and releases in the step that
computed the pages, admits whatever fits at the start of a step, gives a step's prefill budget to the
running requests in order, and evicts only when an allocation needs memory.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> cov = cover(SCENARIOS["burst2"], runs=5)
    >>> 0 < cov.edge_fraction <= 1, cov.failure is None
    (True, True)
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightcheck.checks.conform.diagnosis import Diagnosis
from flightcheck.spec.model import FlightSpec, parse_action
from flightcheck.spec.scenario import Policy, Scenario


@dataclass
class CoverageResult:
    """Visited states and edges of one scenario's explored graph, and how coverage grew run by run."""

    scenario: Scenario
    policy: Policy
    explored: Any
    states: set = field(default_factory=set)
    edges: set = field(default_factory=set)
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (runs, seconds, edge fraction)
    runs: int = 0
    failure: Diagnosis | None = None

    @property
    def num_states(self) -> int:
        """States of the explored graph."""
        return self.explored.graph.number_of_nodes()

    @property
    def num_edges(self) -> int:
        """Edges of the explored graph."""
        return self.explored.graph.number_of_edges()

    @property
    def edge_fraction(self) -> float:
        """Visited explorer edges over all explorer edges."""
        return len(self.edges & set(self.explored.graph.edges)) / max(1, self.num_edges)

    @property
    def state_fraction(self) -> float:
        """Visited explorer states over all explorer states."""
        return len(self.states & set(self.explored.graph.nodes)) / max(1, self.num_states)

    def missed_actions(self) -> dict[str, int]:
        """How many unvisited edges carry each action name (what the engine never did where the spec may)."""
        out: dict[str, int] = {}
        for u, v, d in self.explored.graph.edges(data=True):
            if (u, v) not in self.edges:
                for a in {parse_action(x).name for x in d["actions"]}:
                    out[a] = out.get(a, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"scenario": self.scenario.name, "policy": self.policy.label(), "runs": self.runs,
                "states": self.num_states, "edges": self.num_edges, "states_visited": len(self.states),
                "edges_visited": len(self.edges), "state_fraction": round(self.state_fraction, 4),
                "edge_fraction": round(self.edge_fraction, 4), "missed_by_action": self.missed_actions(),
                "failure": self.failure.to_json() if self.failure else None}


def cover(scenario: Scenario, policy: Policy | None = None, *, runs: int = 50, seconds: float | None = None,
          seed: int = 0, model: str = "tiny") -> CoverageResult:
    """Explore ``scenario`` and measure how much of its graph ``runs`` random engine runs bound to it
    visit (or as many as fit in ``seconds``); the programs come from
    :func:`~flightcheck.checks.conform.generate.scenario_program`."""
    from flightcheck.checks.conform.corpus import edges_of
    from flightcheck.checks.conform.generate import scenario_program
    from flightcheck.checks.conform.runner import run_program
    from flightcheck.checks.explore.explorer import explore

    policy = policy or scenario.policy
    changes = _changes(scenario, policy)
    explored = explore(FlightSpec(scenario, policy))
    result = CoverageResult(scenario, policy, explored)
    rng = random.Random(seed)
    t0 = time.perf_counter()
    while (seconds is None and result.runs < runs) or (seconds is not None and time.perf_counter() - t0 < seconds):
        out = run_program(scenario_program(rng, scenario.name, changes), model)
        result.runs += 1
        for u, v in edges_of(out):
            result.edges.add((u, v))
            result.states.update((u, v))
        result.history.append((result.runs, time.perf_counter() - t0, result.edge_fraction))
        if out.diagnosis is not None:
            result.failure = out.diagnosis
            break
    return result


def _changes(scenario: Scenario, policy: Policy) -> dict:
    """The policy fields that differ from the scenario's own (what a bound program records)."""
    return {k: getattr(policy, k) for k in policy.__dataclass_fields__ if getattr(policy, k) != getattr(scenario.policy, k)}


def plot_coverage(results: list[CoverageResult], path: str | Path) -> Path:
    """A PNG of edge coverage against runs, one line per scenario."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        xs = [h[0] for h in r.history]
        ys = [100 * h[2] for h in r.history]
        ax.plot(xs, ys, label=f"{r.scenario.name} ({r.num_edges} edges)")
    ax.set_xlabel("engine runs")
    ax.set_ylabel("spec edges visited (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Spec-edge coverage by the real engine (tiny model)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def render_coverage(result: CoverageResult, path: str | Path) -> Path:
    """The scenario's graph with the edges the engine visited in green, the others grey."""
    from flightcheck.checks.explore.render import render_result

    colors = {(u, v): ("forestgreen" if (u, v) in result.edges else "grey80") for u, v in result.explored.graph.edges}
    nodes = {s: ("palegreen" if s in result.states else "white") for s in result.explored.graph.nodes}
    title = (f"{result.scenario.name}: engine visited {len(result.edges)}/{result.num_edges} edges, "
             f"{len(result.states)}/{result.num_states} states")
    return render_result(result.explored, Path(path), edge_colors=colors, node_colors=nodes, title=title)


def cover_directed(scenario: Scenario, policy: Policy | None = None, *, seconds: float | None = None,
                   model: str = "tiny", explored: Any = None) -> CoverageResult:
    """Drive the engine to every edge of the graph through its guard/command pairs (see :mod:`replay`).

    For each edge not yet visited (breadth-first order), a shortest path to its source plus the edge is
    replayed on a fresh engine; the prefix the engine follows with the same behaviour counts as
    visited. This measures which spec edges the engine's commands can realise when the order is chosen
    for it, next to :func:`cover`, which measures what its own scheduling reaches.
    """
    import networkx as nx

    from flightcheck.checks.explore.explorer import explore
    from flightcheck.checks.conform.replay import replay

    policy = policy or scenario.policy
    spec = FlightSpec(scenario, policy)
    explored = explored or explore(spec)
    graph, init = explored.graph, explored.initial
    sym = spec.symmetry()
    result = CoverageResult(scenario, policy, explored)
    paths = nx.single_source_shortest_path(graph, init)
    t0 = time.perf_counter()
    order = sorted(graph.edges, key=lambda e: len(paths.get(e[0], ())))
    for u, v in order:
        if (u, v) in result.edges or u not in paths:
            continue
        if seconds is not None and time.perf_counter() - t0 > seconds:
            break
        nodes = paths[u] + [v]
        s, perm = spec.initial(), sym.canonical(spec.initial())[1]
        actions, canon_path = [], [sym.canonical(s)[0]]
        for a_node, b_node in zip(nodes, nodes[1:]):
            # Any action on the canonical edge, renamed back into the concrete request names.
            for text in graph[a_node][b_node]["actions"]:
                act = sym.rename_action(parse_action(text), sym.inverse(perm))
                if spec.guard(s, act) and sym.canonical(spec.apply(s, act))[0] == b_node:
                    break
            else:
                act = None
            if act is None:
                break
            s = spec.apply(s, act)
            perm = sym.canonical(s)[1]
            actions.append(str(act))
            canon_path.append(b_node)
        res = replay(actions, scenario, policy, model=model)
        result.runs += 1
        ok_steps = 0
        for step in res.steps[:len(actions)]:
            if not step.same:
                break
            ok_steps += 1
        for k in range(ok_steps):
            result.edges.add((canon_path[k], canon_path[k + 1]))
            result.states.update((canon_path[k], canon_path[k + 1]))
        result.history.append((result.runs, time.perf_counter() - t0, result.edge_fraction))
    return result
