"""The stages of ``flightcheck check``: each a function ``stage(quick) -> list[Row]`` over the default scenarios.

:data:`flightcheck.checks.cli.suite.STAGES` lists them by import path in the order they run, so a stage
whose dependencies are missing reports itself as a failed row instead of breaking the rest.

For example::

    >>> rows = variants_stage(quick=True)
    >>> all(r.ok for r in rows)
    True
"""

from __future__ import annotations

import time

from flightcheck.checks.cli.suite import Row
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES, SCENARIOS
from flightcheck.spec.variants import VARIANTS


def explore_stage(quick: bool) -> list[Row]:
    """The correct design over every default scenario, both release points and both publications."""
    from flightcheck.checks.explore.explorer import explore
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
    from flightcheck.checks.explore.explorer import explore

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
    from flightcheck.checks.conform.campaign import run_conformance
    from flightcheck.checks.conform.engines import load_model
    from flightcheck.checks.conform.results import ConformOptions
    from flightcheck.checks.conform.probe import probe

    load_model("smollm2")  # a bad model file stops the stage as a ModelFileError, not as a conformance failure
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


def conform_stage(quick: bool) -> list[Row]:
    """Suite stage: short conformance runs on the tiny model for both release points and publications, plus the probe."""
    from flightcheck.checks.conform.campaign import run_conformance
    from flightcheck.checks.conform.probe import probe
    from flightcheck.checks.conform.results import ConformOptions

    rows = []
    for release in RELEASES:
        for publication in PUBLICATIONS:
            r = run_conformance(ConformOptions(release=release, publication=publication,
                                               examples=6 if quick else 15, max_rules=20, seed=0))
            detail = (f"{r.runs} runs, {r.steps} engine steps, {r.events} events checked" if r.ok
                      else r.failure.diagnosis.summary + " [" + ", ".join(r.failure.diagnosis.properties) + "]")
            evidence = {"failure": r.failure.to_json()} if r.failure is not None else {}
            rows.append(Row("conform", f"tiny {release} {publication}", r.ok, detail, r.seconds, evidence))
    t = time.perf_counter()
    none, single = probe("none"), probe("single-flight")
    ok = set(none.computations_per_page) == {8} and set(single.computations_per_page) == {1} \
        and none.conformed and single.conformed
    rows.append(Row("conform", "probe 8 cold identical requests", ok,
                    f"computations per shared page: none {none.computations_per_page}, single-flight "
                    f"{single.computations_per_page}", time.perf_counter() - t))
    return rows
