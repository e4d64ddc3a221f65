"""The story scenario's state graph under each release point, coloured by the edges the engine's runs took.

The runs are the regression corpus's (:mod:`flightcheck.checks.conform.corpus`): the programs that
``check``'s conform stage replays on the real engine, each with the spec actions its run took when it
was recorded (the stage fails if a replay takes another step, so a passing row means these are the
engine's runs of this check). Their actions are replayed on the spec and mapped onto the explored
graph's symmetry representatives. Where the corpus has no entry for a policy, random engine runs bound
to the scenario are made here instead (:func:`~flightcheck.checks.conform.coverage.cover`, tiny model),
and the section says so. Edges no run took are grey, each counted under the step-loop rule that keeps
the engine off it (:mod:`flightcheck.checks.conform.reach`).

For example::

    >>> edges_of_traces(FlightSpec(SCENARIOS[STORY_SCENARIO]), [["arrive(0)", "arrive(1)"]])[1]
    0
"""

from __future__ import annotations

from typing import Any, Iterable

from flightcheck.spec.model import FlightSpec, parse_action
from flightcheck.spec.scenario import RELEASES, SCENARIOS

# The seed's opening example: the scenario the report draws and the walkthrough tells the story on.
STORY_SCENARIO = "burst2"
COVER_RUNS = 30          # random engine runs per policy when the corpus has no entry for it
TAKEN, NOT_TAKEN = "#1e9e3e", "#c8c8c8"
TAKEN_FILL, NOT_TAKEN_FILL = "#d7f5dd", "#ffffff"


def edges_of_traces(spec: FlightSpec, traces: Iterable[list[str]]) -> tuple[set[tuple[Any, Any]], int]:
    """The explored-graph edges (symmetry representatives) the traces walk, and how many traces could not
    be replayed on ``spec`` (an action not enabled: the trace belongs to another spec)."""
    sym = spec.symmetry()
    edges: set[tuple[Any, Any]] = set()
    bad = 0
    for trace in traces:
        s = spec.initial()
        cs = sym.canonical(s)[0]
        walked = []
        for text in trace:
            act = parse_action(text)
            if act not in spec.actions or not spec.guard(s, act):
                bad += 1
                walked = []
                break
            s = spec.apply(s, act)
            ct = sym.canonical(s)[0]
            walked.append((cs, ct))
            cs = ct
        edges.update(walked)
    return edges, bad


def _corpus_traces(scenario: str, policy: dict[str, Any]) -> list[list[str]] | None:
    from flightcheck.checks.conform.corpus import load

    for entry in load():
        if entry.scenario == scenario and all(policy.get(k) == v for k, v in entry.policy.items()):
            return [t for t in entry.traces if t]
    return None


def coverage_graphs(corpus_ok: bool | None = None, *, model: str = "tiny") -> list[Any]:
    """A :class:`~flightcheck.checks.report.sections.CoverageGraph` per release point of the story scenario;
    ``corpus_ok`` is the verdict of the conform stage's corpus row for it (None when not run)."""
    from dataclasses import asdict

    from flightcheck.checks.conform.reach import explain_missed
    from flightcheck.checks.explore.explorer import explore
    from flightcheck.checks.explore.picture import build_picture
    from flightcheck.checks.report.sections import CoverageGraph

    out = []
    for release in RELEASES:
        scn = SCENARIOS[STORY_SCENARIO].with_policy(release=release)
        spec = FlightSpec(scn)
        result = explore(spec)
        traces = _corpus_traces(scn.name, asdict(scn.policy))
        if traces is not None:
            taken, bad = edges_of_traces(spec, traces)
            verdict = {None: "not replayed in this run", True: "replayed by this check, every step as recorded",
                       False: "the conform row for it FAILED: see the summary"}[corpus_ok]
            source = (f"the {len(traces)} corpus programs' engine runs ({verdict})"
                      + (f"; {bad} traces did not replay on the spec" if bad else ""))
        else:
            from flightcheck.checks.conform.coverage import cover
            cov = cover(scn, runs=COVER_RUNS, model=model)
            taken = cov.edges
            source = (f"{cov.runs} random engine runs made for this report ({model} model; the corpus has no "
                      f"entry for this policy)" + (f"; a run failed: {cov.failure.summary}" if cov.failure else ""))
        taken &= set(result.graph.edges)
        states = {u for e in taken for u in e}
        colors = {e: (TAKEN if e in taken else NOT_TAKEN) for e in result.graph.edges}
        fills = {s: (TAKEN_FILL if s in states else NOT_TAKEN_FILL) for s in result.graph.nodes}
        title = (f"{scn.name} under {release}: the engine's runs took {len(taken)} of {result.graph.number_of_edges()} "
                 f"state-to-state edges (green; parallel actions count once), {len(states)} of "
                 f"{result.graph.number_of_nodes()} states")
        legend = [(TAKEN, f"an edge the engine's runs took ({len(taken)})"),
                  (TAKEN_FILL, f"a state they reached ({len(states)}; fill)"),
                  (NOT_TAKEN, f"an edge no run took ({result.graph.number_of_edges() - len(taken)})")]
        pic = build_picture(result, edge_colors=colors, node_colors=fills, title=title, color_legend=legend)
        missed = {rule: len(edges) for rule, edges in explain_missed(result.graph, taken, spec).items()}
        out.append(CoverageGraph(scn.name, release, scn.policy.label(), result.graph.number_of_nodes(),
                                 result.graph.number_of_edges(), len(states), len(taken), source, pic,
                                 missed_by_rule=dict(sorted(missed.items(), key=lambda kv: -kv[1]))))
    return out
