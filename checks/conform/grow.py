"""Grow the corpus toward the edge classes it never drives: a search whose goal is a class, not an edge.

:func:`flightcheck.checks.conform.corpus.build` keeps a program when it walks a new edge of the
explored graph; the coverage gate (:mod:`flightcheck.checks.conform.edge_classes`) asks for something
coarser and harder: every *kind* of step the engine can take (an action under a policy, with 0, 1 or 2+
waiters, pins, publication) driven at least once. Some kinds sit deep in the graph (a leader failing
while two followers wait under promotion, a bogus notice while a released follower holds pins), and
the edge search, which counts all new edges alike, spends its time elsewhere. :func:`grow` starts from
the entry's kept programs, mutates them (an operation inserted, dropped or swapped; a fault armed
before a request runs; a hold and its resume), and keeps a program only when its run takes a wanted
class; each kept program is a new corpus program of the entry, with the trace it took.

What the search does not find is driven directly: the shortest spec run ending in an edge of the class
(:func:`~flightcheck.checks.conform.edge_classes.class_paths`) goes through the engine's guard/command
pairs (:mod:`~flightcheck.checks.conform.replay`), and when the engine follows it to the end it is kept
as a *directed* run of the entry, replayed by every check. Where the engine departs from it, the class
stays undriven and the departure is returned: a step-loop rule the reach analysis lacks, or a bug.

For example::

    >>> entry = CorpusEntry("burst3-fail", {"release": "after-prefill", "publication": "incremental",
    ...                                     "leader_loss": "release-all"}, [], [["arrive(0)", "admit(0)"]])
    >>> sorted(str(c) for c in driven_classes(entry))
    ['admit · single-flight/after-prefill/incremental/release-all · 0 waiting · no pins · before publication', 'arrive · single-flight/after-prefill/incremental/release-all · 0 waiting · no pins · before publication']
    >>> grow(entry, set(), seconds=1)[1:]  # nothing wanted: nothing run
    (set(), {})
"""

from __future__ import annotations

import random
import time
from typing import Any

from flightcheck.checks.conform.corpus import CandidateDeparts, CorpusEntry, _mutate
from flightcheck.checks.conform.edge_classes import EdgeClass, classes_of_path
from flightcheck.checks.conform.program import Program

# Why a class is left undriven when no run of the spec takes it in the engine's admission order.
OUT_OF_ORDER = "out of the engine's reach: no run of the spec takes it in the engine's admission order (fifo-admission)"


def entry_spec(entry: CorpusEntry) -> Any:
    """The spec of the scenario and policy a corpus entry is recorded under."""
    from flightcheck.spec.model import FlightSpec
    from flightcheck.spec.scenario import SCENARIOS

    return FlightSpec(SCENARIOS[entry.scenario].with_policy(**entry.policy))


def driven_classes(entry: CorpusEntry) -> set[EdgeClass]:
    """The edge classes the entry's programs drive, read from the traces recorded with them (the corpus
    replay fails when a program no longer takes its recorded trace, so these are what the engine does)."""
    spec = entry_spec(entry)
    out: set[EdgeClass] = set()
    for trace in entry.traces + entry.directed:
        out |= classes_of_path(spec, trace)
    return out


def _variant(rng: random.Random, program: Program) -> Program:
    """A mutation of ``program``: the corpus's own mutations, or an operation that reaches what those
    rarely do (a fault armed on a request before it runs; a hold on a request's prefill, resumed later)."""
    ops = list(program.ops)
    roll = rng.random()
    if roll < 0.6 or not ops:
        return _mutate(rng, program)
    k = rng.randrange(len(ops) + 1)
    if roll < 0.8:
        ops[k:k] = [("fault", "queued", rng.randint(0, 3))]
    else:
        kind = rng.choice(("leader", "follower", "waiting", "any"))
        later = rng.randint(k, len(ops))
        ops[later:later] = [("resume", rng.randint(0, 3))]
        ops[k:k] = [("hold", kind, rng.randint(0, 3))]
    return program.with_ops(ops)


def grow(entry: CorpusEntry, wanted: set[EdgeClass], *, seconds: float = 60.0, seed: int = 0,
         patience: int = 600, model: str = "tiny") -> tuple[CorpusEntry, set[EdgeClass], dict[EdgeClass, str]]:
    """Search for programs of ``entry``'s scenario and policy whose runs take classes of ``wanted``
    (until every one is found, ``seconds`` pass, or ``patience`` runs find none), then drive what is left
    directly; return the entry with every kept program (with its trace) and directed run appended, the
    classes they drive, and for each class left undriven why the engine departed from its directed run."""
    from flightcheck.checks.conform.generate import scenario_program
    from flightcheck.checks.conform.runner import run_program

    spec = entry_spec(entry)
    todo = set(wanted)
    programs, traces = list(entry.programs), list(entry.traces)
    rng = random.Random(f"grow:{entry.key}:{seed}")
    misses, t0 = 0, time.perf_counter()
    while todo and time.perf_counter() - t0 < seconds and misses < patience:
        if programs and rng.random() < 0.8:
            program = _variant(rng, rng.choice(programs))
        else:
            program = scenario_program(rng, entry.scenario, entry.policy)
        out = run_program(program, model)
        if not out.ok:
            raise CandidateDeparts.of(entry.key, out)
        hit = classes_of_path(spec, out.actions) & todo
        if hit:
            programs.append(out.program)
            traces.append(out.actions)
            todo -= hit
            misses = 0
        else:
            misses += 1
    directed, why = _directed(spec, todo, model)
    for path in directed:
        todo -= classes_of_path(spec, path)
    grown = CorpusEntry(entry.scenario, dict(entry.policy), programs, traces, entry.num_edges, entry.num_covered,
                        dict(entry.missed), [list(p) for p in entry.directed] + directed)
    return grown, set(wanted) - todo, {c: w for c, w in why.items() if c in todo}


def _directed(spec: Any, wanted: set[EdgeClass], model: str) -> tuple[list[list[str]], dict[EdgeClass, str]]:
    """The directed runs the engine follows for ``wanted`` (for each class the first of its candidate runs
    that the engine follows to the end), and for each class whose every run it leaves, where and why it
    left the shortest."""
    from flightcheck.checks.conform.edge_classes import class_paths
    from flightcheck.checks.conform.replay import replay

    kept, done = [], set()
    found = class_paths(spec, wanted)
    why = {c: OUT_OF_ORDER for c in wanted if c not in found}
    for cls, paths in sorted(found.items(), key=lambda kv: (len(kv[1][0]), kv[0])):
        for path in paths:
            if cls in done:
                break
            res = replay(path, spec.scenario, model=model)
            if res.followed and all(step.same for step in res.steps):
                kept.append(path)
                done |= classes_of_path(spec, path)
            elif cls not in why:  # the shortest run's departure says the most
                bad = next((step for step in res.steps if not step.same), res.steps[-1])
                why[cls] = f"{' '.join(path)}: {res.summary}: {bad.note}"
    return kept, {c: w for c, w in why.items() if c not in done}


def entry_classes(entry: CorpusEntry) -> tuple[Any, set[EdgeClass]]:
    """What the gate needs of one entry: the edge classes its scenario and policy reach in the spec (with
    their reach, :class:`~flightcheck.checks.conform.edge_classes.Reachable`) and those its runs drive."""
    from flightcheck.checks.conform.edge_classes import reachable_one

    return reachable_one(entry_spec(entry).scenario), driven_classes(entry)


def _classes_one(obj: dict[str, Any]) -> tuple[Any, set[EdgeClass]]:
    return entry_classes(CorpusEntry.from_json(obj))


def _grow_one(args: tuple) -> tuple[dict[str, Any], set[EdgeClass], dict[EdgeClass, str]]:
    obj, wanted, seconds, seed = args
    import flightcheck.impl  # noqa: F401 -- the fast BLAS before anything imports MLX, in a fresh process
    grown, found, why = grow(CorpusEntry.from_json(obj), wanted, seconds=seconds, seed=seed)
    return grown.to_json(), found, why


def grow_all(entries: list[CorpusEntry], *, seconds: float = 45.0, seed: int = 0, jobs: int = 2,
             scheduler: str | None = None, progress: Any = None
             ) -> tuple[list[CorpusEntry], dict[EdgeClass, str], list[EdgeClass]]:
    """Grow every entry toward the classes the whole corpus never drives and its own scenario and policy
    reach within the engine's reach, on Dask (``jobs`` workers of an embedded cluster, or ``scheduler``);
    return the entries (grown ones replaced, order kept), the classes still undriven, in order, each with
    why the engine left its directed run, and the classes found out of reach by the admission order (what
    the check's gate rules out too). ``progress(key, found, wanted)`` is called as each entry is grown."""
    from flightcheck.checks.cluster import Cluster
    from flightcheck.checks.conform.edge_classes import Reachable

    with Cluster(scheduler, workers=jobs) as cluster:
        infos = cluster.map(_classes_one, [e.to_json() for e in entries])
        reach, driven = Reachable(), set()
        for r, d in infos:
            reach.merge(r)
            driven |= d
        missing = reach.engine_classes - driven
        todo = [(k, r.engine_classes & missing) for k, (r, _d) in enumerate(infos)]
        todo = [(k, w) for k, w in todo if w]
        out = list(entries)
        args = [(entries[k].to_json(), w, seconds, seed) for k, w in todo]
        why: dict[EdgeClass, str] = {}
        for n, (obj, found, notes) in cluster.as_completed(_grow_one, args):
            k, wanted = todo[n]
            out[k] = CorpusEntry.from_json(obj)
            missing -= found
            why.update(notes)
            if progress is not None:
                progress(out[k].key, found, wanted)
        still = {c: why.get(c, "not found") for c in sorted(missing)}
        return out, {c: w for c, w in still.items() if w != OUT_OF_ORDER}, [c for c, w in still.items() if w == OUT_OF_ORDER]
