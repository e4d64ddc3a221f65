"""The ``prove`` stage of ``flightcheck check``: k-induction per scenario, then the proofs for all sizes.

k-induction proves every safety property and lemma of the correct design on each default scenario under
both release points and both publications (:func:`prove_items`); then the relational model proves them
for any number of requests, pages and flights (:func:`unbounded_rows`), and drift rows tie that model to
the spec. Every verdict is compared with the recorded one: a property that drops from proved to bounded
fails its row even though nothing is violated.

For example::

    >>> [scenario_key(s) for s in prove_items(quick=True)][:2]
    ['burst2 after-prefill incremental release-all', 'burst2 after-prefill on-completion release-all']
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.suite.context import Context, parallel, scenario_key, where
from flightcheck.checks.suite.expect import is_text_map, is_verdict_map
from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES, SCENARIOS, policy_grid

# The prove stage's BMC base case and largest k: every default proof needs k <= 2, and a base case as
# deep as k is what k-induction needs (the explore stage has already searched every reachable state).
# `flightcheck prove` goes deeper by default (checks/suite/defaults.py's PROVE_DEPTH, 6) to show short
# counterexamples of a design under edit.
STAGE_BMC_DEPTH, STAGE_MAX_K = 2, 2


def prove_items(quick: bool) -> list[Any]:
    """The bounded proofs' scenarios. ``quick`` keeps burst2 (beside its proof for all sizes) and the
    smaller scenarios the relational model does not cover (the page pool): on the others the rows "for
    all sizes" say more than a proof per scenario. The pool's scenario, whose rows cost
    about 18 s each, runs under its own policy only in ``quick`` (every policy in the full check)."""
    items = []
    for name, scn in SCENARIOS.items():
        if quick and (name in ("burst4-abort", "burst3-abort", "burst3-fail", "burst3-expire", "mixed3", "doc3",
                               "doc3-abort", "doc3-evict", "doc3-pool", "doc3-expire")
                      or (name != "burst2" and proved_for_all_sizes(scn))):
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


def proved_for_all_sizes(scn: Any) -> bool:
    """The relational model covers ``scn``'s configuration, where every safety property it models is
    proved for all sizes (what the bounded rows would add is only the properties it does not model)."""
    from flightcheck.checks.unbounded.config import unmodelled

    return unmodelled(scn) is None


def prove_one(scn: Any) -> tuple[str, dict[str, Any], float, dict[str, Any]]:
    """k-induction on one scenario under one policy: its key, each property's verdict, the seconds, and
    the row's evidence (each proof's status, k, support and counterexample to induction)."""
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
    return scenario_key(scn), verdicts, rep.seconds, {**where(scn), "depth": STAGE_BMC_DEPTH, "max_k": STAGE_MAX_K,
                                              "details": details}


def proofs_changed(ctx: Context, section: str, key: str, verdicts: dict[str, str], changed: str) -> str:
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
    lost; ``quick``: see :func:`prove_items`), then the proofs for all sizes (:func:`unbounded_rows`).
    A row fails on a violation, and on any verdict other than the recorded one (a property that drops
    from proved to bounded fails here even though nothing is violated)."""
    rows = []
    for key, verdicts, seconds, evidence in parallel(prove_one, prove_items(ctx.quick), ctx):
        proved = [p for p, v in verdicts.items() if v.startswith("proved")]
        violated = [p for p, v in verdicts.items() if v == "violated"]
        bounded = [p for p, v in verdicts.items() if v == "bounded"]
        k = max((int(v.split("=")[1]) for v in verdicts.values() if v.startswith("proved")), default=0)
        detail = (f"violated: {', '.join(violated)}" if violated else
                  f"{len(proved)}/{len(verdicts)} proved (k<={k})" + (f"; only bounded: {', '.join(bounded)}" if bounded else ""))
        changed = ctx.expect.compare("prove", key, verdicts)
        if changed:
            detail = proofs_changed(ctx, "prove", key, verdicts, changed) + detail
        rows.append(Row("prove", key, not violated and not changed, detail, seconds, {**evidence, "verdicts": verdicts}))
    return rows + unbounded_rows(ctx)


def unbounded_one(config: Any) -> tuple[str, dict[str, str], float, dict[str, Any]]:
    """The relational model's proofs on one configuration: its label, each invariant's verdict, the
    seconds, and the row's evidence (in the bounded rows' shape, plus the non-vacuity witnesses)."""
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


def drift_items(quick: bool) -> list[Any]:
    """The default scenarios (under every policy of their grid) on which the relational model is compared
    with the spec; ``quick``: the two-request ones with aborts and with eviction, and the two-request
    prompt tree (exact single-flight, prefix coordination and none)."""
    from flightcheck.checks.unbounded.config import unmodelled

    names = ["burst2-abort", "burst2-evict", "doc2"] if quick else [n for n, scn in SCENARIOS.items() if unmodelled(scn) is None]
    return [s for n in names for s in policy_grid(SCENARIOS[n]) if unmodelled(s) is None]


def drift_one(scn: Any) -> tuple[str, bool, str, float, dict[str, Any]]:
    """The relational model against the spec on one scenario under one policy: its key, whether they
    agree, the row's detail, the seconds and the evidence."""
    from flightcheck.checks.unbounded.drift import check_drift

    r = check_drift(scn)
    detail = (f"the relational model is the spec's design on {r.states} states, {r.transitions} transitions"
              if r.ok else f"the relational model departs from the spec: {r.mismatches[0]}"
              + (f" (and {len(r.mismatches) - 1} more)" if len(r.mismatches) > 1 else ""))
    return scenario_key(scn), r.ok, detail, r.seconds, {**where(scn), "states": r.states, "transitions": r.transitions,
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
    for label, verdicts, seconds, evidence in parallel(unbounded_one, list(configs.values()), ctx):
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
            detail = proofs_changed(ctx, "unbounded", label, verdicts, changed) + detail
        rows.append(Row("prove", f"for all sizes: {label}", not bad and not changed and not nv["failures"], detail, seconds,
                        {**evidence, "verdicts": verdicts, "not_modelled": dict(NOT_MODELLED)}))
    for key, ok, detail, seconds, evidence in parallel(drift_one, drift_items(ctx.quick), ctx):
        rows.append(Row("prove", f"relational model = spec: {key}", ok, detail, seconds, evidence))
    return rows


STAGE = Stage(
    "prove", prove_stage,
    depends=("spec/**", "checks/explore/**", "checks/proofs/**", "checks/unbounded/**"),
    report="proofs",
    expects={"prove": ("an object of property name -> verdict text", is_text_map),
             "unbounded": ("an object of invariant name -> proved, cti or unknown", is_verdict_map)},
)
