"""The regression corpus: client programs that make the engine's own scheduling take every spec edge it can.

For each default scenario and policy, :func:`build` explores the spec's graph, then searches for client
programs (arrival order, which requests arrive, holds, aborts of every role, bogus notices, expiries,
failing forward passes, pool and ``max_tokens`` choices) that steer the real engine onto edges no kept
program has visited yet: fresh random programs and mutations of kept ones (coverage-guided, as a fuzzer
keeps the inputs that reach new code). Every kept program is one that added an edge, so the corpus is a
small set that covers what the search reached; it is written to ``checks/conform/corpus.json`` and
``flightcheck check`` replays it first, deterministically, before its seeded campaign.

For example::

    >>> entry = build("burst2", {"release": "after-prefill", "publication": "incremental"}, seconds=2, seed=0)
    >>> entry.num_covered <= entry.num_edges and len(entry.programs) >= 1
    True
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from flightcheck.checks.conform.generate import random_ops, scenario_program
from flightcheck.checks.conform.program import SUBMIT_OPS, Program
from flightcheck.checks.conform.runner import RunOutcome, run_program

CORPUS_PATH = Path(__file__).with_name("corpus.json")


class CandidateDeparts(Exception):
    """A program searched for the corpus (``--build`` or ``--grow``) made the engine depart from the spec:
    a verdict on the engine (exit 1), not a fault of the search. ``str()`` says where, the diagnosis and
    the rules broken; :attr:`program` is the program as JSON text (``conform --replay`` runs it)."""

    def __init__(self, message: str, program: str) -> None:
        super().__init__(message, program)  # both in args, so the error survives pickling back from a worker
        self.message, self.program = message, program

    def __str__(self) -> str:
        return self.message

    @classmethod
    def of(cls, where: str, outcome: RunOutcome) -> "CandidateDeparts":
        """The error for ``outcome`` (a failing run) of a candidate searched for ``where``."""
        return cls(f"a corpus candidate for {where} makes the engine depart from the spec: {outcome.diagnosis.summary}"
                   + "".join(f"\n  {rule}" for rule in outcome.rules), outcome.program.dumps())


@dataclass
class CorpusEntry:
    """The kept programs of one scenario and policy, and the edges they cover."""

    scenario: str
    policy: dict[str, Any]
    programs: list[Program]
    traces: list[list[str]] = field(default_factory=list)  # the spec actions each program's run took when kept
    num_edges: int = 0
    num_covered: int = 0
    missed: dict[str, int] = field(default_factory=dict)  # unvisited edges by the rule that explains them
    # Spec runs driven through the engine's guard/command pairs (:mod:`~flightcheck.checks.conform.replay`)
    # for edge classes no program was found to make the engine's own scheduling take (``corpus --grow``).
    directed: list[list[str]] = field(default_factory=list)

    @property
    def key(self) -> str:
        """``scenario policy-values``, e.g. ``burst2 after-prefill incremental``."""
        return " ".join([self.scenario] + [str(v) for v in self.policy.values()])

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"scenario": self.scenario, "policy": self.policy, "edges": self.num_edges,
                "covered": self.num_covered, "missed": self.missed,
                "programs": [dict(p.to_json(), trace=" ".join(tr)) for p, tr in zip(self.programs, self.traces)],
                **({"directed": [" ".join(path) for path in self.directed]} if self.directed else {})}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "CorpusEntry":
        """Read an entry back."""
        return cls(obj["scenario"], dict(obj["policy"]), [Program.from_json(p) for p in obj["programs"]],
                   [p.get("trace", "").split() for p in obj["programs"]], obj.get("edges", 0), obj.get("covered", 0),
                   dict(obj.get("missed", {})), [path.split() for path in obj.get("directed", [])])


def edges_of(outcome: RunOutcome) -> set[tuple]:
    """The explored-graph edges ``(state, next state)`` (symmetry representatives) a run walked."""
    spec = outcome.spec
    if spec is None:
        return set()
    from flightcheck.spec.actions import parse_action

    sym = spec.symmetry()
    out, s = set(), spec.initial()
    cs = sym.canonical(s)[0]
    for text in outcome.actions:
        s = spec.apply(s, parse_action(text))
        ct = sym.canonical(s)[0]
        out.add((cs, ct))
        cs = ct
    return out


def _mutate(rng: random.Random, program: Program) -> Program:
    ops = list(program.ops)
    extra = list(random_ops(rng, len(program.setup.templates), ("hold", "abort", "notify", "expire", "fault"),
                            length=3))
    kind = rng.random()
    if kind < 0.4 and ops:
        k = rng.randrange(len(ops) + 1)
        ops[k:k] = [op for op in extra if op[0] not in SUBMIT_OPS][:1] or [("step", 1)]
    elif kind < 0.7 and len(ops) > 1:
        k = rng.randrange(len(ops))
        if ops[k][0] not in SUBMIT_OPS:
            del ops[k]
    elif len(ops) > 1:
        a, b = rng.randrange(len(ops)), rng.randrange(len(ops))
        ops[a], ops[b] = ops[b], ops[a]
    return program.with_ops(ops)


def build(scenario: str, policy: dict[str, Any], *, seconds: float = 60.0, seed: int = 0,
          patience: int = 400, model: str = "tiny") -> CorpusEntry:
    """Search for programs covering the scenario's edges; stop after ``seconds`` or ``patience`` misses."""
    from flightcheck.checks.explore.explorer import explore
    from flightcheck.spec.model import FlightSpec
    from flightcheck.spec.scenario import SCENARIOS

    scn = SCENARIOS[scenario].with_policy(**policy)
    graph = explore(FlightSpec(scn)).graph
    all_edges = set(graph.edges)
    rng = random.Random(f"{scenario}:{sorted(policy.items())}:{seed}")
    kept: list[Program] = []
    traces: list[list[str]] = []
    covered: set = set()
    misses, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds and misses < patience and covered != all_edges:
        program = _mutate(rng, rng.choice(kept)) if kept and rng.random() < 0.5 else scenario_program(rng, scenario, policy)
        out = run_program(program, model)
        if not out.ok:
            raise CandidateDeparts.of(f"{scenario} {' '.join(map(str, policy.values()))}", out)
        new = (edges_of(out) & all_edges) - covered
        if new:
            kept.append(out.program)
            traces.append(out.actions)
            covered |= new
            misses = 0
        else:
            misses += 1
    return CorpusEntry(scenario, dict(policy), kept, traces, len(all_edges), len(covered),
                       missed_by_reason(graph, covered, FlightSpec(scn)))


def missed_by_reason(graph: Any, covered: set, spec: Any) -> dict[str, int]:
    """How many of the graph's edges the runs missed, by the step-loop rule that explains each
    (:mod:`flightcheck.checks.conform.reach`), most first."""
    from flightcheck.checks.conform.reach import explain_missed

    counts = {rule: len(edges) for rule, edges in explain_missed(graph, covered, spec).items()}
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def replay(entry: CorpusEntry, model: str = "tiny") -> tuple[RunOutcome | None, list[str], set]:
    """Run every program of ``entry``: the first failing run (or None), how the engine's behaviour
    differs from the trace recorded when the corpus was built (one line per program that changed), and
    the explored-graph edges the runs covered."""
    changed, covered = [], set()
    for n, (program, trace) in enumerate(zip(entry.programs, entry.traces), 1):
        out = run_program(program, model)
        if not out.ok:
            return out, changed, covered
        covered |= edges_of(out)
        if trace and out.actions != trace:
            k = next((j for j, (a, b) in enumerate(zip(trace, out.actions)) if a != b), min(len(trace), len(out.actions)))
            was = trace[k] if k < len(trace) else "the end"
            now = out.actions[k] if k < len(out.actions) else "the end"
            changed.append(f"program {n}: event {k + 1} was {was}, is now {now}")
    return None, changed, covered


def replay_directed(entry: CorpusEntry, model: str = "tiny") -> list[str]:
    """Drive each of ``entry``'s directed runs through the engine's guard/command pairs; one line for each
    the engine does not follow to the end (where it departs, and why), none when it follows them all."""
    from flightcheck.checks.conform.replay import replay as drive
    from flightcheck.spec.scenario import SCENARIOS

    scn = SCENARIOS[entry.scenario].with_policy(**entry.policy)
    out = []
    for n, path in enumerate(entry.directed, 1):
        res = drive(path, scn)
        if not (res.followed and all(step.same for step in res.steps)):
            bad = next((step for step in res.steps if not step.same), res.steps[-1])
            out.append(f"directed run {n}: {res.summary}: {bad.note}")
    return out


def save(entries: Iterable[CorpusEntry], path: Path = CORPUS_PATH) -> Path:
    """Write the corpus (one JSON document, entries in order)."""
    path.write_text(json.dumps({"entries": [e.to_json() for e in entries]}, separators=(",", ":")) + "\n")
    return path


def load(path: Path = CORPUS_PATH) -> list[CorpusEntry]:
    """Read the corpus; an absent file is an empty corpus."""
    if not path.is_file():
        return []
    return [CorpusEntry.from_json(e) for e in json.loads(path.read_text())["entries"]]


def policy_key(scn: Any) -> dict[str, Any]:
    """The policy knobs an entry is recorded under: those its scenario's grid varies (coordination too,
    on a prompt tree, whose grid runs every coordination)."""
    p = scn.policy
    knobs = {"release": p.release, "publication": p.publication, "leader_loss": p.leader_loss}
    return {"coordination": p.coordination, **knobs} if scn.prefixes else knobs


def grid() -> list[tuple[str, dict[str, Any]]]:
    """Every default scenario under every policy of its grid: what the corpus covers."""
    from flightcheck.spec.scenario import SCENARIOS, policy_grid

    return [(name, policy_key(s)) for name, scn in SCENARIOS.items() for s in policy_grid(scn)]


def _build_one(args: tuple) -> CorpusEntry:
    name, policy, seconds, seed = args
    import flightcheck.impl  # noqa: F401 -- the fast BLAS before anything imports MLX, in a fresh process
    return build(name, policy, seconds=seconds, seed=seed)


def build_all(*, seconds: float = 20.0, seed: int = 0, jobs: int = 2, only: list[str] | None = None,
              progress: Any = None, scheduler: str | None = None) -> list[CorpusEntry]:
    """Build the entry of every (scenario, policy) of :func:`grid` (``only``: those scenarios) on Dask:
    ``jobs`` worker processes of an embedded cluster, or the workers of ``scheduler`` (an address); the
    entries in the grid's order, ``progress(entry)`` as each is built."""
    from flightcheck.checks.cluster import Cluster

    todo = [(n, p, seconds, seed) for n, p in grid() if only is None or n in only]
    entries: list[CorpusEntry | None] = [None] * len(todo)
    with Cluster(scheduler, workers=jobs) as cluster:
        for k, entry in cluster.as_completed(_build_one, todo):
            entries[k] = entry
            if progress is not None:
                progress(entry)
        return reduce_all([e for e in entries if e is not None], cluster=cluster)


def reduce(entry: CorpusEntry, model: str = "tiny") -> CorpusEntry:
    """The fewest of ``entry``'s programs that still cover every edge the entry covers (greedy set cover:
    the program with the most edges not yet covered first), with their traces refreshed."""
    runs = [run_program(p, model) for p in entry.programs]
    edges = [edges_of(out) for out in runs]
    want = set().union(*edges) if edges else set()
    chosen: list[int] = []
    covered: set = set()
    while covered != want:
        k = max(range(len(edges)), key=lambda n: (len(edges[n] - covered), -n))
        if not edges[k] - covered:
            break
        chosen.append(k)
        covered |= edges[k]
    chosen.sort()
    return CorpusEntry(entry.scenario, dict(entry.policy), [runs[k].program for k in chosen],
                       [runs[k].actions for k in chosen], entry.num_edges, entry.num_covered, dict(entry.missed),
                       [list(p) for p in entry.directed])


def _reduce_one(obj: dict[str, Any]) -> dict[str, Any]:
    import flightcheck.impl  # noqa: F401 -- the fast BLAS before anything imports MLX, in a fresh process
    return reduce(CorpusEntry.from_json(obj)).to_json()


def reduce_all(entries: list[CorpusEntry], *, jobs: int = 2, cluster: Any = None) -> list[CorpusEntry]:
    """:func:`reduce` every entry on ``cluster`` (default: an embedded Dask cluster of ``jobs`` processes)."""
    from flightcheck.checks.cluster import Cluster

    if cluster is None:
        with Cluster(workers=jobs) as own:
            return reduce_all(entries, cluster=own)
    return [CorpusEntry.from_json(obj) for obj in cluster.map(_reduce_one, [e.to_json() for e in entries])]
