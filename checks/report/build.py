"""The report's model built from ``flightcheck check``'s rows, plus what is cheap to recompute for it.

Every verdict comes from a row's evidence (:attr:`flightcheck.checks.suite.job.Row.evidence`): the
property verdicts of each explored scenario and policy, each variant's counterexample actions, each
proof's status, ``k``, support and counterexample to induction, each equivalence verdict and its
distinguishing sequence, the probe's and the workload's counts. What a picture needs beyond that is
recomputed here, cheaply: a path is replayed on its spec to draw it, a distinguishing sequence is
replayed on both designs to say what each step changed, and the story scenario is explored under each
release point to draw the graph the engine's runs covered. Nothing here hard-codes a variant, a
scenario or an action: variants and scenarios come from the rows (which iterate ``VARIANTS`` and
``SCENARIOS``), actions from the paths. A section that cannot be recomputed is named in
``Report.problems`` rather than left out silently.

For example::

    >>> rows = [{"stage": "variants", "item": "no-unknown-check", "ok": True, "detail": "caught", "seconds": 0.1,
    ...          "evidence": {"scenario": "burst2-abort", "policy": {}, "property": "termination_validated",
    ...                       "kind": "always", "length": 1, "counterexample": ["notify(0)"]}}]
    >>> report = build_report(rows, coverage=False, tradeoff=False)
    >>> v = report.variants[0]
    >>> v.property, v.length, v.diagram.steps[0].mark, report.missing[:2]
    ('termination_validated', 1, 'violation', ['explore', 'prove'])
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Iterable

from flightcheck.checks.suite.claims import proof_claims, strength_cell, summary_line
from flightcheck.checks.report.sections import (
    EquivEntry, EquivStep, ProofLine, ProofTable, PropertyColumn, Report, SummaryRow, VariantStory, VerdictLine,
)

def strength_counts(rows: list[dict[str, Any]]) -> str:
    """The rows counted by what they establish (the summary's line), from their JSON form."""
    from types import SimpleNamespace

    return summary_line([SimpleNamespace(claim=r.get("claim")) for r in rows])


def section_stages() -> dict[str, list[str]]:
    """Each report section with the stages whose rows feed it (in the order they run), as each stage
    declares (``Stage.report``, :mod:`flightcheck.checks.suite.registry`).

    >>> section_stages()["conform"]
    ['conform', 'smollm2']
    """
    from flightcheck.checks.suite.registry import stages

    out: dict[str, list[str]] = {}
    for stage in stages():
        if stage.report is not None:
            out.setdefault(stage.report, []).append(stage.name)
    return out


def _rows(rows: Iterable[Any]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(r) if dataclasses.is_dataclass(r) else dict(r) for r in rows]


def _scenario(ev: dict[str, Any]) -> Any:
    from flightcheck.spec.scenario import SCENARIOS

    scn = SCENARIOS[ev["scenario"]]
    return scn.with_policy(**ev["policy"]) if ev.get("policy") else scn


def _path(spec: Any, actions: list[str], loop: list[str] = (), stutters: bool = False) -> Any:
    """A counterexample rebuilt from its actions (and its loop, replayed after them)."""
    from flightcheck.checks.explore.counterexample import Counterexample, Step
    from flightcheck.spec.actions import parse_action

    cx = Counterexample.from_actions(spec, actions)
    s = cx.final_state(spec)
    for text in loop:
        act = parse_action(text)
        s = spec.apply(s, act)
        cx.loop.append(Step(act, s))
    cx.stutters = stutters
    return cx


def _verdicts(rows: list[dict[str, Any]]) -> tuple[list[PropertyColumn], list[VerdictLine]]:
    from flightcheck.spec.properties import PROPERTIES

    lines = []
    for r in rows:
        ev = r["evidence"]
        if "properties" not in ev:
            continue
        lines.append(VerdictLine(ev["scenario"], _scenario(ev).policy.label(), ev.get("states"),
                                 dict(ev["properties"]), r["ok"]))
    seen = {name for line in lines for name in line.verdicts}
    columns = [PropertyColumn(p.name, p.kind, p.story) for p in PROPERTIES if p.name in seen]
    return columns, lines


def _variant(r: dict[str, Any]) -> VariantStory:
    from flightcheck.checks.report.sequence import diagram_of
    from flightcheck.spec.properties import get_property
    from flightcheck.spec.variants import VARIANTS

    v, ev = VARIANTS[r["item"]], r["evidence"]
    scn = _scenario(ev)
    spec = v.build(scn)
    story = VariantStory(v.name, v.story, scn.name, scn.policy.label(), r["ok"], r["detail"])
    title = f"{v.name} on {scn.name} ({scn.policy.label()})"
    if ev.get("counterexample"):
        prop = get_property(ev["property"])
        cx = _path(spec, ev["counterexample"], ev.get("loop", []), ev.get("stutters", False))
        story.property, story.property_story, story.length = prop.name, prop.story, ev.get("length")
        story.diagram = diagram_of(spec, cx, property=prop.name, story=prop.story, kind=prop.kind,
                                   title=f"{title}: {prop.name} violated in {len(cx)} steps")
        story.listing = cx.format(spec)
    elif ev.get("witness"):
        prop = get_property(ev["witness"]["property"])
        cx = _path(spec, ev["witness"]["actions"])
        story.property_story = prop.story
        story.diagram = diagram_of(spec, cx, title=f"{title}: every property holds; {prop.name} in {len(cx)} steps")
        story.diagram.ending = f"{prop.name}: {prop.story}"
        story.length = len(cx)
        story.listing = cx.format(spec)
    return story


def _proof(r: dict[str, Any]) -> ProofTable:
    ev = r["evidence"]
    lines = []
    claims = proof_claims(ev) if "details" in ev else {}
    for name, d in ev.get("details", {}).items():
        cti = d.get("counterexample_to_induction") or {}
        lines.append(ProofLine(name, d["status"], d["k"], d.get("lemma", False), list(d.get("support", [])),
                               cti.get("text", ""), list(d.get("counterexample") or []), claims[name].words()))
    if not lines:  # rows from before the details were recorded: the verdict strings alone
        for name, v in ev.get("verdicts", {}).items():
            status, _, k = v.partition(" k=")
            lines.append(ProofLine(name, status, int(k or 0), False, []))
    return ProofTable(ev.get("scenario", r["item"]), _scenario(ev).policy.label() if "scenario" in ev else "",
                      r["ok"], r["detail"], lines, r["claim"]["says"] if r.get("claim") else "")


def _equiv(r: dict[str, Any]) -> EquivEntry:
    from flightcheck.checks.report.lockstep import lockstep_steps
    from flightcheck.spec.variants import VARIANTS

    ev = r["evidence"]
    scn = _scenario(ev)
    entry = EquivEntry(ev["variant_a"], ev["variant_b"], scn.name, scn.policy.label(), ev["verdict"], r["detail"],
                       r["ok"], ev.get("difference", ""))
    if ev.get("sequence"):
        a, b = VARIANTS[ev["variant_a"]].build(scn), VARIANTS[ev["variant_b"]].build(scn)
        entry.steps = [EquivStep(*step) for step in lockstep_steps(a, b, ev["sequence"])]
    return entry


def _safely(report: Report, what: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as error:  # a section that cannot be drawn is named, never silently dropped
        report.problems.append(f"{what}: {type(error).__name__}: {error}")
        return None


def build_report(rows: Iterable[Any], *, options: dict[str, Any] | None = None, coverage: bool = True,
                 tradeoff: bool = True, model: str = "tiny") -> Report:
    """The :class:`Report` of ``rows`` (``Row`` objects or their JSON dicts). ``coverage`` draws the story
    scenario's graphs coloured by the engine's runs; ``tradeoff`` reads the recorded benchmark figures."""
    rows = _rows(rows)
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_stage.setdefault(r["stage"], []).append(r)
    feeds = section_stages()
    section = {name: [r for r in rows if r["stage"] in names] for name, names in feeds.items()}
    ok = all(r["ok"] for r in rows)
    report = Report(
        title="flightcheck check", ok=ok,
        summary=[SummaryRow(r["stage"], r["item"], r["ok"], r["detail"], r.get("seconds", 0.0),
                            strength_cell(r.get("claim"))) for r in rows],
        generated=datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), options=dict(options or {}),
        errors=sum(bool(r.get("error")) for r in rows),
        missing=[names[0] for names in feeds.values() if not any(n in by_stage for n in names)],
        strength=strength_counts(rows))
    report.properties, report.verdicts = _verdicts(section.get("verdicts", []))
    for r in section.get("variants", []):
        if r["item"] != "(stage)":
            story = _safely(report, f"variant {r['item']}", _variant, r)
            if story is not None:
                report.variants.append(story)
    for r in section.get("proofs", []):
        if r["item"] != "(stage)" and "mismatches" not in r["evidence"]:  # a drift row has no proof table
            table = _safely(report, f"proof {r['item']}", _proof, r)
            if table is not None:
                report.proofs.append(table)
    for r in section.get("equivalences", []):
        if r["item"] != "(stage)" and "verdict" in r["evidence"]:
            entry = _safely(report, r["item"], _equiv, r)
            if entry is not None:
                report.equivalences.append(entry)
    for r in sorted(section.get("conform", []), key=lambda r: feeds["conform"].index(r["stage"])):
        report.conform.append(SummaryRow(r["stage"], r["item"], r["ok"], r["detail"], r.get("seconds", 0.0)))
        ev = r["evidence"]
        if "single-flight" in ev and "none" in ev:
            report.probe[ev.get("model", r["stage"])] = {"none": ev["none"], "single-flight": ev["single-flight"]}
    report.workload = [dict(r["evidence"], item=r["item"], ok=r["ok"], detail=r["detail"])
                       for r in section.get("workload", []) if r["item"] != "(stage)"]
    if coverage:
        from flightcheck.checks.report.coverage_graph import STORY_SCENARIO, coverage_graphs

        corpus = [r for r in by_stage.get("conform", []) if r["item"] == f"corpus {STORY_SCENARIO}"]
        corpus_ok = corpus[0]["ok"] if corpus else None
        report.coverage = _safely(report, "coverage graphs", lambda: coverage_graphs(corpus_ok, model=model)) or []
    if tradeoff:
        from flightcheck.checks.report.tradeoff import recorded_tradeoff

        report.tradeoff = _safely(report, "release-point trade-off", recorded_tradeoff)
    return report
