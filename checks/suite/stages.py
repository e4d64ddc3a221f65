"""The stages of ``flightcheck check``: each a function ``stage(ctx) -> list[Row]`` over the default scenarios.

:data:`flightcheck.checks.suite.job.STAGES` lists them by import path in the order they run, so a stage
whose dependencies are missing reports itself as a failed row instead of breaking the rest. Every stage
compares its figures with the recorded ones (:mod:`flightcheck.checks.suite.expect`): a changed state
count, proof verdict, path length or corpus trace fails its row. The heavy stages spread their items
over the machine's cores; the results do not depend on how (every item is deterministic).

For example::

    >>> from flightcheck.checks.suite.expect import Expectations
    >>> rows = variants_stage(Context(quick=True, expect=Expectations()))
    >>> all(r.ok for r in rows)
    True
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from flightcheck.checks.suite.defaults import equiv_depth, pair_scenario
from flightcheck.checks.suite.expect import Expectations
from flightcheck.checks.suite.job import Row
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES, SCENARIOS, policy_grid
from flightcheck.spec.variants import VARIANTS

# The prove stage's BMC base case and largest k: every default proof needs k <= 2, and a base case as
# deep as k is what k-induction needs (the explore stage has already searched every reachable state).
# `flightcheck prove` goes deeper by default (checks/suite/defaults.py's PROVE_DEPTH, 6) to show short
# counterexamples of a design under edit.
STAGE_BMC_DEPTH, STAGE_MAX_K = 2, 2


@dataclass
class Context:
    """What every stage is run with: the budget level, the recorded figures, the model, extra seconds."""

    quick: bool = False
    expect: Expectations = field(default_factory=Expectations)
    budget: float | None = None   # seconds of random exploration beyond the deterministic campaign
    model: str = "tiny"
    save_dir: Path = Path(".")    # where a failing conformance program is written
    # Where the items of the heavy stages run (:class:`~flightcheck.checks.cluster.Cluster`: a Dask
    # scheduler, an embedded local cluster, or None: in this process).
    cluster: Any = None
    # Stop a stage at its first failing row, cheapest checks first (``flightcheck mutate``: one failing
    # row kills a mutant, and the verdict is the same as the whole stage's, since any failing row fails it).
    first_failure: bool = False
    shrink_seconds: float = 60.0  # how long a failing campaign program is minimised

    @property
    def jobs(self) -> int:
        """Into how many parts a stage splits its work: the cluster's workers (1 without a cluster)."""
        return self.cluster.parts if self.cluster is not None else 1


def _parallel(fn: Callable[[Any], Any], items: list[Any], ctx: Context) -> list[Any]:
    """``[fn(x) for x in items]``, on ``ctx.cluster`` when there is one (order kept)."""
    if ctx.cluster is None:
        return [fn(x) for x in items]
    return ctx.cluster.map(fn, items)


def _key(scn: Any) -> str:
    p = scn.policy
    coordination = f" {p.coordination}" if scn.prefixes else ""  # a prompt tree is checked under each one
    return f"{scn.name}{coordination} {p.release} {p.publication} {p.leader_loss}"


def _where(scn: Any) -> dict[str, Any]:
    """The scenario and policy a row is about, for the evidence (the report rebuilds specs from it)."""
    return {"scenario": scn.name, "policy": dataclasses.asdict(scn.policy)}


# --- explore ---------------------------------------------------------------------------------------------
def _explore_one(scn: Any) -> tuple[str, bool, int, list[str], float, int, dict[str, Any]]:
    from flightcheck.checks.explore.choose import explore_with as explore
    from flightcheck.checks.explore.fingerprint import property_fingerprint
    from flightcheck.spec.model import FlightSpec

    spec = FlightSpec(scn)
    r = explore(spec)
    evidence = {**_where(scn), "states": r.stats.states, "edges": r.stats.edges, "depth": r.stats.depth,
                "properties": {p.name: p.verdict for p in r.properties}}
    if r.graph.number_of_nodes() == r.stats.states:  # the reference explorer's graph holds every state
        evidence["fingerprint"] = property_fingerprint(spec, list(r.graph.nodes))
    return _key(scn), r.ok, r.stats.states, [p.name for p in r.violations], r.stats.seconds, len(r.properties), evidence


def _explore_items(quick: bool) -> list[Any]:
    """Every default scenario under every policy of its grid (``quick`` leaves out the five largest)."""
    heavy = ("burst4-abort", "doc3-abort", "doc3-expire", "doc3-pool", "doc3-evict")
    return [s for name, scn in SCENARIOS.items() if not (quick and name in heavy) for s in policy_grid(scn)]


def explore_stage(ctx: Context) -> list[Row]:
    """The correct design over every default scenario under every policy of its grid; each row also
    compares its state count and its properties' fingerprint with the recorded ones."""
    rows = []
    items = _explore_items(ctx.quick)
    for key, ok, states, bad, seconds, nprops, evidence in _parallel(_explore_one, items, ctx):
        changed = ctx.expect.compare("explore", key, states)
        detail = ", ".join(bad) if bad else f"{states} states, all {nprops} properties hold"
        if changed:
            detail = f"state count changed ({changed}); " + detail
        moved = None
        if "fingerprint" in evidence:  # a property whose meaning changed, though every reachable state keeps it
            moved = _fingerprint_change(ctx, key, evidence["fingerprint"])
            if moved:
                detail = f"{moved}; " + detail
        rows.append(Row("explore", key, ok and not changed and not moved, detail, seconds, {**evidence, "violated": bad}))
    return rows


def _fingerprint_change(ctx: Context, key: str, fingerprint: dict[str, int]) -> str | None:
    """What moved in the properties' fingerprint (:mod:`flightcheck.checks.explore.fingerprint`), naming
    each property whose count changed; None when nothing did."""
    changed = ctx.expect.compare("fingerprint", key, fingerprint)
    if not changed or not ctx.expect.has("fingerprint", key):
        return f"property fingerprint {changed}" if changed else None
    was = ctx.expect.recorded["fingerprint"][key]
    moved = [f"{p}: {was.get(p, 'absent')} -> {fingerprint.get(p, 'absent')}" for p in sorted(set(was) | set(fingerprint))
             if was.get(p) != fingerprint.get(p)]
    return "a property's meaning changed on states near the reachable ones (" + "; ".join(moved) + ")"


# --- variants --------------------------------------------------------------------------------------------
def variants_stage(ctx: Context) -> list[Row]:
    """Every design variant on its demo scenario: correct ones pass, mutants fail as their story says,
    with the recorded shortest path, and violate exactly the recorded properties (every one they
    violate, not only their own: a property that stops failing where it failed, or starts, is a changed
    property as much as a changed design)."""
    from flightcheck.checks.explore.choose import explore_with as explore

    rows = []
    for v in VARIANTS.values():
        t = time.perf_counter()
        r = explore(v.demo_spec())
        violated = [p.name for p in r.violations if p.kind != "sometimes"]
        where = {**_where(r.spec.scenario.with_policy(**dataclasses.asdict(r.spec.policy))), "states": r.stats.states}
        if v.expected_violation is None:
            ok = not violated
            detail = "all safety and liveness properties hold" if ok else "violates " + ", ".join(violated)
            story = next((p for p in r.properties if p.name == "sometimes_all_finished" and p.witness), None)
            evidence: dict[str, Any] = {**where, "violated": violated,
                                        "witness": {"property": story.name, "actions": story.witness.actions}
                                        if story else None}
        else:
            res = r.result(v.expected_violation)
            n = len(res.counterexample) if res.counterexample else None
            ok = v.expected_violation in violated
            detail = f"caught: {v.expected_violation} in {n} steps" if ok else f"NOT caught: {v.expected_violation} holds"
            changed = ctx.expect.compare("variants", v.name, [v.expected_violation, n])
            if changed:
                ok, detail = False, f"path changed ({changed}); " + detail
            moved = ctx.expect.compare("violated", v.name, sorted(violated))
            if moved:
                ok, detail = False, f"the properties it violates changed ({moved}); " + detail
            cx = res.counterexample
            evidence = {**where, "property": v.expected_violation, "kind": res.kind, "length": n,
                        "counterexample": cx.actions if cx else None,
                        "loop": [str(s.action) for s in cx.loop] if cx else [], "stutters": bool(cx and cx.stutters),
                        "violated": violated}
        rows.append(Row("variants", v.name, ok, detail, time.perf_counter() - t, evidence))
    return rows


# --- prove -----------------------------------------------------------------------------------------------
def _prove_items(quick: bool) -> list[Any]:
    """The bounded proofs' scenarios. ``quick`` keeps burst2 (beside its proof for all sizes) and the
    smaller scenarios the relational model does not cover (the page pool): on the others the rows "for
    all sizes" say more than a proof per scenario. The pool's scenario, whose rows cost
    about 18 s each, runs under its own policy only in ``quick`` (every policy in the full check)."""
    items = []
    for name, scn in SCENARIOS.items():
        if quick and (name in ("burst4-abort", "burst3-abort", "burst3-fail", "burst3-expire", "mixed3", "doc3",
                               "doc3-abort", "doc3-evict", "doc3-pool", "doc3-expire")
                      or (name != "burst2" and _proved_for_all_sizes(scn))):
            continue
        if quick and scn.has_pool:
            items.append(scn)
            continue
        for release in RELEASES:
            for publication in PUBLICATIONS:
                items.append(scn.with_policy(release=release, publication=publication))
        if scn.aborts and scn.policy.single_flight and not quick:  # the other leader-loss policy too
            items.append(scn.with_policy(leader_loss="promote" if scn.policy.leader_loss != "promote" else "release-all"))
    return items


def _proved_for_all_sizes(scn: Any) -> bool:
    """The relational model covers ``scn``'s configuration, where every safety property it models is
    proved for all sizes (what the bounded rows would add is only the properties it does not model)."""
    from flightcheck.checks.unbounded.config import unmodelled

    return unmodelled(scn) is None


def _prove_one(scn: Any) -> tuple[str, dict[str, Any], float, dict[str, Any]]:
    from flightcheck.checks.proofs.induction import prove
    from flightcheck.spec.model import FlightSpec

    spec = FlightSpec(scn)
    rep = prove(spec, max_k=STAGE_MAX_K, depth=STAGE_BMC_DEPTH)
    verdicts = {r.property: f"{r.status} k={r.k}" if r.status == "proved" else r.status for r in rep.results + rep.lemmas}
    details = {}
    for r in rep.results + rep.lemmas:
        details[r.property] = {
            "status": r.status, "k": r.k, "lemma": r in rep.lemmas, "support": list(r.support),
            "seconds": round(r.seconds, 3),
            "counterexample": r.counterexample.actions if r.counterexample is not None else None,
            "counterexample_to_induction": (dict(r.cti.to_json(spec), text=r.cti.format(spec))
                                            if r.cti is not None else None)}
    return _key(scn), verdicts, rep.seconds, {**_where(scn), "depth": STAGE_BMC_DEPTH, "max_k": STAGE_MAX_K,
                                              "details": details}


def _proofs_changed(ctx: Context, section: str, key: str, verdicts: dict[str, str], changed: str) -> str:
    """The start of a proof row's detail when its verdicts differ from the recorded ones: each property
    that moved (``p: was -> now``), or what :meth:`Expectations.compare` said when nothing is recorded."""
    if not ctx.expect.has(section, key):
        return f"proofs {changed}; "
    was = ctx.expect.recorded[section][key]
    moved = [f"{p}: {was.get(p)} -> {v}" for p, v in verdicts.items() if was.get(p) != v]
    moved += [f"{p}: {w} -> gone" for p, w in was.items() if p not in verdicts]
    return "proofs changed (" + "; ".join(moved) + "); "


def prove_stage(ctx: Context) -> list[Row]:
    """k-induction for every safety property and lemma of the correct design, each default scenario,
    both release points and both publications (and the other leader-loss policy where a leader can be
    lost; ``quick``: see :func:`_prove_items`), then the proofs for all sizes (:func:`unbounded_rows`).
    A row fails on a violation, and on any verdict other than the recorded one (a property that drops
    from proved to bounded fails here even though nothing is violated)."""
    rows = []
    for key, verdicts, seconds, evidence in _parallel(_prove_one, _prove_items(ctx.quick), ctx):
        proved = [p for p, v in verdicts.items() if v.startswith("proved")]
        violated = [p for p, v in verdicts.items() if v == "violated"]
        bounded = [p for p, v in verdicts.items() if v == "bounded"]
        k = max((int(v.split("=")[1]) for v in verdicts.values() if v.startswith("proved")), default=0)
        detail = (f"violated: {', '.join(violated)}" if violated else
                  f"{len(proved)}/{len(verdicts)} proved (k<={k})" + (f"; only bounded: {', '.join(bounded)}" if bounded else ""))
        changed = ctx.expect.compare("prove", key, verdicts)
        if changed:
            detail = _proofs_changed(ctx, "prove", key, verdicts, changed) + detail
        rows.append(Row("prove", key, not violated and not changed, detail, seconds, {**evidence, "verdicts": verdicts}))
    return rows + unbounded_rows(ctx)


def _unbounded_one(config: Any) -> tuple[str, dict[str, str], float, dict[str, Any]]:
    from flightcheck.checks.unbounded.checker import prove_config
    from flightcheck.checks.unbounded.render import cti_json, format_cti, nonvacuity_json

    rep = prove_config(config)
    verdicts = {v.name: v.status for v in rep.verdicts}
    # The bounded rows' shape (the report reads both): an inductive invariant is a proof with k=1.
    details = {v.name: {"kind": v.kind, "status": v.status, "k": 1 if v.status == "proved" else None,
                        "lemma": v.kind == "lemma", "support": list(v.support), "seconds": round(v.seconds, 3),
                        "reason": v.reason, "counterexample": None,
                        "counterexample_to_induction": (dict(cti_json(v.cti), text=format_cti(v.cti))
                                                        if v.cti is not None else None)}
               for v in rep.verdicts}
    return config.label(), verdicts, rep.seconds, {"config": config.label(), "environment": config.environment(),
                                                   "queries": rep.queries, "details": details,
                                                   "nonvacuity": nonvacuity_json(rep.nonvacuity)}


def _drift_items(quick: bool) -> list[Any]:
    """The default scenarios (under every policy of their grid) on which the relational model is compared
    with the spec; ``quick``: the two-request ones with aborts and with eviction, and the two-request
    prompt tree (exact single-flight, prefix coordination and none)."""
    from flightcheck.checks.unbounded.config import unmodelled

    names = ["burst2-abort", "burst2-evict", "doc2"] if quick else [n for n, scn in SCENARIOS.items() if unmodelled(scn) is None]
    return [s for n in names for s in policy_grid(SCENARIOS[n]) if unmodelled(s) is None]


def _drift_one(scn: Any) -> tuple[str, bool, str, float, dict[str, Any]]:
    from flightcheck.checks.unbounded.drift import check_drift

    r = check_drift(scn)
    detail = (f"the relational model is the spec's design on {r.states} states, {r.transitions} transitions"
              if r.ok else f"the relational model departs from the spec: {r.mismatches[0]}"
              + (f" (and {len(r.mismatches) - 1} more)" if len(r.mismatches) > 1 else ""))
    return _key(scn), r.ok, detail, r.seconds, {**_where(scn), "states": r.states, "transitions": r.transitions,
                                                 "mismatches": r.mismatches}


def unbounded_rows(ctx: Context) -> list[Row]:
    """The proofs for any number of requests, pages and flights (:mod:`flightcheck.checks.unbounded`):
    a row per configuration of the relational model, its verdicts compared with the recorded ones, then
    the drift rows that tie the hand-written relational model to the spec (every reachable state of the
    default scenarios it models, every action: same guard, same successor, same property readings)."""
    from flightcheck.checks.unbounded.config import grid
    from flightcheck.checks.unbounded.invariants import NOT_MODELLED

    rows = []
    configs = {c.label(): c for c in grid()}
    for label, verdicts, seconds, evidence in _parallel(_unbounded_one, list(configs.values()), ctx):
        props = [n for n, d in evidence["details"].items() if d["kind"] == "property"]
        bad = [n for n in props if verdicts[n] != "proved"]
        nv = evidence["nonvacuity"]  # a proof with a vacuous part (axioms, an action, an antecedent) fails
        if nv["failures"]:
            detail = "vacuous: " + "; ".join(nv["failures"])
        elif bad:
            first = evidence["details"][bad[0]]
            cti = first["counterexample_to_induction"]
            why = f"counterexample to induction under {cti['action']}" if cti else first["reason"] or "timeout"
            detail = f"not proved for all sizes: {', '.join(bad)} ({bad[0]}: {why})"
        else:
            detail = f"{len(props)}/{len(props)} proved for all sizes; bounded only: {', '.join(NOT_MODELLED)}"
            detail += (f"; non-vacuous: {sum(w['status'] == 'witnessed' for w in nv['actions'])}/{len(nv['actions'])} "
                       f"actions, {sum(w['status'] == 'witnessed' for w in nv['antecedents'])}/"
                       f"{len(nv['antecedents'])} antecedents witnessed")
        if nv["unknown"]:
            detail += f"; unknown (timeout): {', '.join(nv['unknown'])}"
        changed = ctx.expect.compare("unbounded", label, verdicts)
        if changed:
            detail = _proofs_changed(ctx, "unbounded", label, verdicts, changed) + detail
        rows.append(Row("prove", f"for all sizes: {label}", not bad and not changed and not nv["failures"], detail, seconds,
                        {**evidence, "verdicts": verdicts, "not_modelled": dict(NOT_MODELLED)}))
    for key, ok, detail, seconds, evidence in _parallel(_drift_one, _drift_items(ctx.quick), ctx):
        rows.append(Row("prove", f"relational model = spec: {key}", ok, detail, seconds, evidence))
    return rows


# --- equiv -----------------------------------------------------------------------------------------------
def equiv_stage(ctx: Context) -> list[Row]:
    """The seed's refactor: ``draining`` against ``correct`` must be equivalent, and every mutant must
    differ from ``correct`` with a distinguishing sequence (each pair on the scenario and at the depth the
    ``equiv`` command uses by default: :mod:`flightcheck.checks.suite.defaults`)."""
    from flightcheck.checks.proofs.equivalence import check_equivalence

    rows = []
    for v in VARIANTS.values():
        if v.name == "correct":
            continue
        scn = pair_scenario("correct", v.name)
        # The product induction proves the correct pair for every depth; BMC first rules out short differences.
        depth = equiv_depth("correct", v.name)
        res = check_equivalence("correct", v.name, scn, depth=depth)
        ok = res.equivalent if v.expected_violation is None else not res.equivalent
        detail = res.summary()
        changed = ctx.expect.compare("equiv", v.name, [res.verdict, len(res.sequence)])
        if changed:
            ok, detail = False, f"verdict changed ({changed}); " + detail
        rows.append(Row("equiv", f"correct vs {v.name}", ok, detail, res.seconds,
                        {**_where(scn), "variant_a": "correct", "variant_b": v.name, "depth": depth,
                         "verdict": res.verdict, "sequence": res.sequence, "difference": res.difference}))
    return rows


def real_model_stage(ctx: Context) -> list[Row]:
    """The real SmolLM2 engine: a short seeded lockstep campaign and the probe."""
    from flightcheck.checks.conform.campaign import run_programs, seeded_programs
    from flightcheck.checks.conform.engines import load_model
    from flightcheck.checks.conform.probe import probe

    load_model("smollm2")  # a bad model file stops the stage as a ModelFileError, not as a conformance failure
    rows = []
    r = run_programs(seeded_programs(0, 3), "smollm2", save_dir=ctx.save_dir, seed=0)
    detail = (f"{r.runs} programs, {r.steps} engine steps, {r.events} events checked" if r.ok
              else f"{r.failure.diagnosis.summary} [{', '.join(r.failure.diagnosis.properties)}]")
    counts = {"runs": r.runs, "steps": r.steps, "events": r.events}
    rows.append(Row("smollm2", "conform (seeded, short)", r.ok, detail, r.seconds,
                    {**counts, "failure": r.failure.to_json()} if r.failure else counts))
    t = time.perf_counter()
    evidence: dict[str, Any] = {}
    try:
        none, single = probe("none", model="smollm2"), probe("single-flight", model="smollm2")
        ok = set(none.computations_per_page) == {8} and set(single.computations_per_page) == {1}
        detail = (f"computations per shared page: none {none.computations_per_page}, "
                  f"single-flight {single.computations_per_page}")
        evidence = {"model": "smollm2", "none": none.to_json(), "single-flight": single.to_json()}
    except Exception as error:
        ok, detail = False, f"the probe failed: {type(error).__name__}: {error}"
    rows.append(Row("smollm2", "probe 8 cold identical requests", ok, detail, time.perf_counter() - t, evidence))
    return rows


def workload_stage(ctx: Context) -> list[Row]:
    """Would single-flight pay on the real Mooncake traces? One configuration each (1 instance,
    10,000 blocks, W_eff = 1 s, contiguous lookup); the row passes when per-instance counts reconcile
    with the summary and the counts are the recorded ones, and its detail is the measured redundancy."""
    from flightcheck.checks.workload.opportunity import ModelConfig, prepare_trace, simulate
    from flightcheck.checks.workload.trace import load_trace, shared_trace_path

    rows = []
    for name in ("conversation", "synthetic"):
        t = time.perf_counter()
        prepared = prepare_trace(load_trace(shared_trace_path(name)))
        res = simulate(prepared, ModelConfig(w_eff_ms=1000.0, capacity_blocks=10_000))
        whole = res.summary["all"]
        parts = sum((inst.phases["all"] for inst in res.instances[1:]), res.instances[0].phases["all"])
        ratio = whole.redundancy_ratio or 0.0
        changed = ctx.expect.compare("workload", name, [whole.num_cold_attempts, whole.num_removable_attempts])
        detail = (f"redundancy {ratio:.4%}: single-flight removes {whole.num_removable_attempts:,} of "
                  f"{whole.num_cold_attempts:,} cold block loads ({whole.num_exact_input_removable:,} of identical "
                  f"inputs, {whole.num_partial_prefix_removable:,} only prefix coordination could serve)")
        evidence = {"trace": name, "w_eff_ms": 1000.0, "capacity_blocks": 10_000, "instances": len(res.instances),
                    "requests": whole.num_requests, "cold_attempts": whole.num_cold_attempts,
                    "cohorts": whole.num_cohorts, "removable_attempts": whole.num_removable_attempts,
                    "hits": whole.num_hits, "redundancy_ratio": ratio, "reconciles": parts == whole,
                    "exact_input_removable": whole.num_exact_input_removable,
                    "partial_prefix_removable": whole.num_partial_prefix_removable}
        rows.append(Row("workload", f"{name} W_eff=1s", parts == whole and not changed,
                        (f"counts changed ({changed}); " if changed else "") + detail, time.perf_counter() - t,
                        evidence))
    return rows


def rows_of(stages: Iterable[Callable[[Context], list[Row]]], ctx: Context) -> list[Row]:
    """Every row of the given stages, in order (for tests and embedders)."""
    return [row for stage in stages for row in stage(ctx)]
