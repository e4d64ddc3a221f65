"""``flightcheck check``: the main job, every check over the default scenarios, with one summary.

The suite is a list of stages. Each stage is a function ``stage(quick: bool) -> list[Row]`` living next
to its checker (``explore_stage`` and ``variants_stage`` here; others in their own modules), listed by
import path in :data:`STAGES` so that a stage whose dependencies are missing reports itself as an error
row instead of breaking the rest.

For example::

    >>> rows = variants_stage(quick=True)
    >>> all(r.ok for r in rows)
    True
"""

from __future__ import annotations

import importlib
import json
import time
from dataclasses import asdict, dataclass
from typing import Callable

from rich.console import Console
from rich.table import Table

from flightcheck.spec.scenario import PUBLICATIONS, RELEASES, SCENARIOS
from flightcheck.spec.variants import VARIANTS


@dataclass
class Row:
    """One line of the summary: which stage, what was checked, whether it passed, and a detail."""

    stage: str
    item: str
    ok: bool
    detail: str
    seconds: float = 0.0


def explore_stage(quick: bool) -> list[Row]:
    """The correct design over every default scenario, both release points and both publications."""
    from flightcheck.checks.explore.engine import explore_with as explore
    from flightcheck.spec.model import FlightSpec

    rows = []
    for name, scn in SCENARIOS.items():
        for release in RELEASES:
            for publication in PUBLICATIONS:
                if quick and name == "burst4-abort":
                    continue
                spec = FlightSpec(scn.with_policy(release=release, publication=publication))
                r = explore(spec)
                bad = ", ".join(p.name for p in r.violations)
                rows.append(Row("explore", f"{name} {release} {publication}", r.ok,
                                bad or f"{r.stats.states} states, all {len(r.properties)} properties hold",
                                r.stats.seconds))
    return rows


def variants_stage(quick: bool) -> list[Row]:
    """Every design variant on its demo scenario: correct ones pass, mutants fail as their story says."""
    from flightcheck.checks.explore.engine import explore_with as explore

    rows = []
    for v in VARIANTS.values():
        t = time.perf_counter()
        r = explore(v.demo_spec())
        violated = [p.name for p in r.violations if p.kind != "sometimes"]
        if v.expected_violation is None:
            ok, detail = not violated, ("all safety and liveness properties hold" if not violated else "violates " + ", ".join(violated))
        else:
            ok = v.expected_violation in violated
            res = r.result(v.expected_violation)
            n = len(res.counterexample) if res.counterexample else None
            detail = f"caught: {v.expected_violation} in {n} steps" if ok else f"NOT caught: {v.expected_violation} holds"
        rows.append(Row("variants", v.name, ok, detail, time.perf_counter() - t))
    return rows


def prove_stage(quick: bool) -> list[Row]:
    """k-induction for every safety property of the correct design, each default scenario and release
    point (publication incremental). A row passes when nothing is violated; its detail says how many
    properties are proved for every depth and names any that only hold to the depth checked."""
    from flightcheck.checks.proofs.induction import prove
    from flightcheck.spec.model import FlightSpec

    rows = []
    for name, scn in SCENARIOS.items():
        if quick and name in ("burst4-abort", "burst3-abort", "mixed3"):
            continue
        for release in RELEASES:
            rep = prove(FlightSpec(scn.with_policy(release=release)))
            proved = [r for r in rep.results if r.status == "proved"]
            bounded = [r.property for r in rep.results if r.status == "bounded"]
            violated = [r.property for r in rep.results if r.status == "violated"]
            detail = (f"violated: {', '.join(violated)}" if violated else
                      f"{len(proved)}/{len(rep.results)} proved (k<={max((r.k for r in proved), default=0)})"
                      + (f"; only bounded: {', '.join(bounded)}" if bounded else ""))
            rows.append(Row("prove", f"{name} {release}", rep.ok, detail, rep.seconds))
    return rows


def equiv_stage(quick: bool) -> list[Row]:
    """The seed's refactor: ``draining`` against ``correct`` must be equivalent, and every mutant must
    differ from ``correct`` with a distinguishing sequence (each on its demo scenario)."""
    from flightcheck.checks.proofs.equivalence import check_equivalence

    rows = []
    for v in VARIANTS.values():
        if v.name == "correct":
            continue
        demo = SCENARIOS[v.demo].with_policy(**dict(v.demo_policy))
        scn = SCENARIOS["burst2-abort"] if v.expected_violation is None else demo
        # The product induction proves the correct pair for every depth; BMC first rules out short differences.
        res = check_equivalence("correct", v.name, scn, depth=6 if v.expected_violation is None else 10)
        ok = res.equivalent if v.expected_violation is None else not res.equivalent
        rows.append(Row("equiv", f"correct vs {v.name}", ok, res.summary(), res.seconds))
    return rows


def real_model_stage(quick: bool) -> list[Row]:
    """The real SmolLM2 engine: a short lockstep conformance run and the probe."""
    from flightcheck.checks.conform.campaign import ConformOptions, run_conformance
    from flightcheck.checks.conform.probe import probe

    rows = []
    r = run_conformance(ConformOptions(model="smollm2", examples=3, max_rules=12, seed=0))
    detail = (f"{r.runs} runs, {r.steps} engine steps, {r.events} events checked" if r.ok
              else r.failure.diagnosis.summary)
    rows.append(Row("smollm2", "conform (short)", r.ok, detail, r.seconds))
    t = time.perf_counter()
    none, single = probe("none", model="smollm2"), probe("single-flight", model="smollm2")
    ok = set(none.computations_per_page) == {8} and set(single.computations_per_page) == {1}
    rows.append(Row("smollm2", "probe 8 cold identical requests", ok,
                    f"computations per shared page: none {none.computations_per_page}, "
                    f"single-flight {single.computations_per_page}", time.perf_counter() - t))
    return rows


def workload_stage(quick: bool) -> list[Row]:
    """Would single-flight pay on the real Mooncake traces? One configuration each (1 instance,
    10,000 blocks, W_eff = 1 s, contiguous lookup); the row passes when per-instance counts reconcile
    with the summary, and its detail is the measured redundancy."""
    from flightcheck.checks.workload.model import ModelConfig, prepare_trace, simulate
    from flightcheck.checks.workload.trace import load_trace, shared_trace_path

    rows = []
    for name in ("conversation", "synthetic"):
        t = time.perf_counter()
        prepared = prepare_trace(load_trace(shared_trace_path(name)))
        res = simulate(prepared, ModelConfig(w_eff_ms=1000.0, capacity_blocks=10_000))
        whole = res.summary["all"]
        parts = sum((inst.phases["all"] for inst in res.instances[1:]), res.instances[0].phases["all"])
        ratio = whole.redundancy_ratio or 0.0
        rows.append(Row("workload", f"{name} W_eff=1s", parts == whole,
                        f"redundancy {ratio:.4%}: single-flight removes {whole.num_removable_attempts:,} of "
                        f"{whole.num_cold_attempts:,} cold block loads", time.perf_counter() - t))
    return rows


# Stages by import path, in the order they run. A stage that needs the real model is skipped by --quick.
STAGES: list[tuple[str, str, bool]] = [
    ("explore", "flightcheck.checks.cli.suite:explore_stage", False),
    ("variants", "flightcheck.checks.cli.suite:variants_stage", False),
    ("prove", "flightcheck.checks.cli.suite:prove_stage", False),
    ("equiv", "flightcheck.checks.cli.suite:equiv_stage", False),
    ("conform", "flightcheck.checks.cli.cmd_conform:conform_stage", False),
    ("smollm2", "flightcheck.checks.cli.suite:real_model_stage", True),
    ("workload", "flightcheck.checks.cli.suite:workload_stage", False),
]


def _load(path: str) -> Callable[[bool], list[Row]]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def run_suite(*, as_json: bool = False, quick: bool = False) -> bool:
    """Run every stage, print the summary (or JSON), and return True when everything passed."""
    console = Console(stderr=as_json)
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a log file gets whole lines, not wrapped cells
    rows: list[Row] = []
    for stage, path, needs_model in STAGES:
        if quick and needs_model:
            continue
        t = time.perf_counter()
        with console.status(f"running {stage} ..."):
            try:
                rows += _load(path)(quick)
            except Exception as e:  # a broken stage is a failed row, never a silent pass
                rows.append(Row(stage, "(stage)", False, f"{type(e).__name__}: {e}", time.perf_counter() - t))
    ok = all(r.ok for r in rows)
    if as_json:
        print(json.dumps({"verdict": "ok" if ok else "failed", "rows": [asdict(r) for r in rows]}))
        return ok
    table = Table(title="flightcheck check")
    for col in ("stage", "item", "verdict", "detail", "s"):
        table.add_column(col, justify="right" if col == "s" else "left")
    for r in rows:
        table.add_row(r.stage, r.item, "[green]ok[/]" if r.ok else "[bold red]FAIL[/]", r.detail, f"{r.seconds:.1f}")
    console.print(table)
    failed = sum(not r.ok for r in rows)
    console.print(f"[{'green' if ok else 'bold red'}]{len(rows) - failed} passed, {failed} failed[/]")
    return ok
