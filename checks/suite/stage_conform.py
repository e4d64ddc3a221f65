"""The ``conform`` stage of ``flightcheck check``: the tiny-model engine in lockstep with the spec.

The regression corpus replayed (every program takes the steps it took when recorded, every directed run
is followed to the end), the hand-written shapes, a seeded campaign per policy, the 8-request probe, and
the coverage gate (:mod:`flightcheck.checks.suite.coverage_gate`). Under ``ctx.first_failure`` (what
``flightcheck mutate`` runs) the parts run cheapest first and the stage ends at the first failing row.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage
from flightcheck.checks.suite.context import Context, parallel
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES, SCENARIOS


def _replay_entries(args: tuple[list[dict], str, bool]) -> list[tuple[str, Any, list[str], int, float]]:
    import flightcheck.impl  # noqa: F401 -- the fast BLAS first, in a fresh process
    from flightcheck.checks.conform.corpus import CorpusEntry, replay, replay_directed

    entries, model, first_failure = args
    out = []
    for obj in entries:
        entry = CorpusEntry.from_json(obj)
        t = time.perf_counter()
        failed, changed, covered = replay(entry, model)
        summary = None
        if failed is not None:
            d = failed.diagnosis
            summary = {"summary": d.summary, "properties": d.properties, "kind": d.kind, "rules": failed.rules,
                       "diagnosis": d.to_json(), "report": d.format()}
        elif departures := replay_directed(entry, model):  # the engine's guard/command pairs left a directed run
            summary = {"summary": departures[0], "properties": [], "kind": "directed", "departures": departures}
        out.append((entry.key, summary, changed, len(covered), time.perf_counter() - t))
        if first_failure and (failed is not None or changed):
            break
    return out


def corpus_rows(ctx: Context) -> list[Row]:
    """Replay the regression corpus: every program must conform and take the steps it took when recorded."""
    from flightcheck.checks.conform.corpus import load

    entries = load()
    if not entries:
        return [Row("conform", "corpus", False, "no corpus: build it with `flightcheck corpus --build`")]
    if ctx.quick:  # each scenario under its own policy only
        from flightcheck.checks.conform.corpus import policy_key
        defaults = {n: policy_key(s) for n, s in SCENARIOS.items()}
        entries = [e for e in entries if defaults.get(e.scenario) == e.policy]
    if ctx.first_failure:  # the quickest entries first: most engine bugs fail on a short program
        entries = sorted(entries, key=lambda e: sum(len(t) for t in e.traces))
    parts = ctx.jobs
    chunks = [[e.to_json() for e in entries[k::parts]] for k in range(parts)]
    args = [(c, ctx.model, ctx.first_failure) for c in chunks if c]
    results = [r for part in parallel(_replay_entries, args, ctx) for r in part]
    by_scenario: dict[str, list] = {}
    for key, failed, changed, covered, seconds in results:
        by_scenario.setdefault(key.split()[0], []).append((key, failed, changed, covered, seconds))
    rows = []
    for name, parts in by_scenario.items():
        failures = [(k, f) for k, f, _c, _n, _s in parts if f is not None]
        changes = [(k, c) for k, _f, c, _n, _s in parts if c]
        programs = sum(len(e.programs) for e in entries if e.scenario == name)
        edges = sum(n for _k, _f, _c, n, _s in parts)
        seconds = sum(s for *_x, s in parts)
        if failures:
            key, summary = failures[0]
            props = f" [{', '.join(summary['properties'])}]" if summary["properties"] else ""
            rows.append(Row("conform", f"corpus {name}", False, f"{key}: {summary['summary']}{props}", seconds,
                            {"failure": summary}))
        elif changes:
            key, lines = changes[0]
            rows.append(Row("conform", f"corpus {name}", False, f"behaviour changed on the corpus ({key}, "
                            f"{lines[0]}); if meant, rebuild it: flightcheck corpus --build", seconds,
                            {"changed": {k: c for k, c in changes}}))
        else:
            directed = sum(len(e.directed) for e in entries if e.scenario == name)
            runs = f", {directed} directed runs followed" if directed else ""
            rows.append(Row("conform", f"corpus {name}", True, f"{len(parts)} policies, {programs} programs{runs}, "
                            f"{edges} spec edges taken, every step as recorded", seconds,
                            {"scenario": name, "policies": [k for k, *_r in parts], "programs": programs,
                             "directed": directed,
                             "edges_taken": {k: n for k, _f, _c, n, _s in parts}}))
    return rows


def shape_rows(ctx: Context) -> list[Row]:
    """The hand-written programs of :mod:`flightcheck.checks.conform.shapes`, each replayed once."""
    from flightcheck.checks.conform.runner import run_program
    from flightcheck.checks.conform.shapes import SHAPES

    t = time.perf_counter()
    for name, shape in SHAPES.items():
        out = run_program(shape.program(), ctx.model)
        if not out.ok:
            d = out.diagnosis
            return [Row("conform", "shapes", False, f"{name}: {d.summary} [{', '.join(d.properties)}]",
                        time.perf_counter() - t, {"shape": name, "story": shape.story, "rules": out.rules,
                                                  "diagnosis": d.to_json()})]
    return [Row("conform", "shapes", True, f"{len(SHAPES)} hand-written programs conform ({', '.join(SHAPES)})",
                time.perf_counter() - t, {"shapes": list(SHAPES)})]


def _seeded(args: tuple[str, str, int, str, float | None, int, str, float]) -> dict[str, Any]:
    import flightcheck.impl  # noqa: F401 -- the fast BLAS first, in a fresh process
    from flightcheck.checks.conform.campaign import run_programs, seeded_programs

    release, publication, count, model, seconds, seed, save_dir, shrink = args
    fixed = {"release": release, "publication": publication}
    r = run_programs(seeded_programs(seed, count, fixed=fixed), model, seconds=seconds, save_dir=save_dir, seed=seed,
                     shrink_seconds=shrink)
    return {"ok": r.ok, "runs": r.runs, "steps": r.steps, "events": r.events, "seconds": r.seconds,
            "failure": r.failure.to_json() if r.failure else None, "text": r.failure.format() if r.failure else None}


def seeded_rows(ctx: Context) -> list[Row]:
    """The seeded campaign (deterministic: the same programs every run), per release point and
    publication; with ``--budget``, random programs beyond it from a seed printed with any failure."""
    count = 15 if ctx.quick else 50
    shrink = ctx.shrink_seconds
    items = [(r, p, count, ctx.model, None, 0, str(ctx.save_dir), shrink) for r in RELEASES for p in PUBLICATIONS]
    if ctx.budget:
        seed = int(time.time())
        share = ctx.budget / len(items)
        items += [(r, p, 10**6, ctx.model, share, seed, str(ctx.save_dir), shrink) for r in RELEASES for p in PUBLICATIONS]
    rows = []
    results = (parallel(_seeded, items, ctx) if not ctx.first_failure
               else _until_failure(_seeded, items, lambda r: not r["ok"]))
    for (release, publication, _n, _m, budget, seed, _d, _s), r in zip(items, results):
        name = f"{'budget' if budget else 'seeded'} {release} {publication}" + (f" (seed {seed})" if budget else "")
        if r["ok"]:
            detail = f"{r['runs']} programs, {r['steps']} engine steps, {r['events']} events checked"
        else:
            d = r["failure"]["diagnosis"]
            detail = f"{d['summary']} [{', '.join(d['properties'])}]"
            if r["failure"].get("saved_to"):
                detail += f"; replay: flightcheck conform --replay {r['failure']['saved_to']}"
        counts = {"release": release, "publication": publication, "runs": r["runs"], "steps": r["steps"],
                  "events": r["events"]}
        rows.append(Row("conform", name, r["ok"], detail, r["seconds"],
                        {**counts, "failure": r["failure"], "report": r["text"]} if not r["ok"] else counts))
    return rows


def probe_rows(ctx: Context) -> list[Row]:
    """The probe: 8 cold identical requests compute each shared page 8 times without coordination and
    once with single-flight, and conform while they do."""
    from flightcheck.checks.conform.probe import probe

    t = time.perf_counter()
    evidence: dict[str, Any] = {}
    try:
        none, single = probe("none"), probe("single-flight")
        ok = set(none.computations_per_page) == {8} and set(single.computations_per_page) == {1} \
            and none.conformed and single.conformed
        detail = (f"computations per shared page: none {none.computations_per_page}, single-flight "
                  f"{single.computations_per_page}")
        evidence = {"model": "tiny", "none": none.to_json(), "single-flight": single.to_json()}
    except Exception as error:  # a probe that breaks is a failed row beside the campaigns, never all of them
        ok, detail = False, f"the probe failed: {type(error).__name__}: {error}"
    return [Row("conform", "probe 8 cold identical requests", ok, detail, time.perf_counter() - t, evidence)]


def _until_failure(fn: Callable[[Any], Any], items: list[Any], failed: Callable[[Any], bool]) -> list[Any]:
    """``[fn(x) for x in items]`` in this process, stopping after the first result that ``failed``."""
    out = []
    for x in items:
        out.append(fn(x))
        if failed(out[-1]):
            break
    return out


def conform_stage(ctx: Context) -> list[Row]:
    """The engine against the spec: the corpus replayed, the hand-written shapes, the seeded campaign,
    and the probe. With ``ctx.first_failure`` the parts run cheapest first, by the time each takes to
    find what it finds (the probe, the shapes, the seeded campaign's 200 programs of every feature in
    about 20 s, then the corpus's 4,456 in about 150 s) and the stage ends at the first failing row. Last,
    the coverage gate (:mod:`flightcheck.checks.suite.coverage_gate`): every edge class the engine can take
    is driven by some corpus program."""
    from flightcheck.checks.suite.coverage_gate import coverage_gate_rows

    if not ctx.first_failure:
        return corpus_rows(ctx) + shape_rows(ctx) + seeded_rows(ctx) + probe_rows(ctx) + coverage_gate_rows(ctx)
    # No gate here: it reads the spec and the corpus's recorded runs, not the engine, so a mutant of the
    # engine (what --first-failure serves) cannot move it.
    parts = (probe_rows, shape_rows, seeded_rows, corpus_rows)
    done = _until_failure(lambda part: part(ctx), list(parts), lambda rows: not all(r.ok for r in rows))
    return [row for rows in done for row in rows]


STAGE = Stage(
    "conform", conform_stage,
    depends=("spec/**", "impl/*.py", "checks/conform/**", "checks/explore/**", "checks/suite/coverage_gate.py"),
    report="conform",
    kills=("impl/*.py",), kill_rank=0,
)
