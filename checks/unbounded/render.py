"""Presentation: a relational state in the spec's vocabulary, counterexamples to induction, a run's table.

:func:`describe` reads a finite relational state (a CTI's, or an abstracted spec state) as the spec's
labels read one: per request its class, phase, role in a flight (``leads f0``, ``follows f0``,
``released``), pages held and computed; per page its state in the cache and its references (the
requests holding it); the index and the ghosts. :func:`format_cti` prints a CTI as text,
:func:`nonvacuity_line` a configuration's witnesses, :func:`format_report` a whole run as one line per
property, and :func:`report_json` the same for machines.

For example::

    >>> from flightcheck.checks.unbounded.signature import Finite
    >>> from flightcheck.checks.unbounded.state import initial_state
    >>> describe(Finite(1, (0,), (0,), 2), initial_state(None))["requests"][0]
    {'request': 'r0', 'class': 'A', 'phase': 'absent', 'role': '-', 'holds': [], 'computed': []}
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.unbounded.result import ConfigReport, Cti, NonVacuity, UnboundedReport, Witness
from flightcheck.spec.state import PAGE_NAMES, PHASE_NAMES

_PLURAL = {"class": "classes"}
_TERM = {0: "ok", 1: "a legitimate termination rejected", 2: "a bogus termination accepted"}


def _class(c: int) -> str:
    return chr(ord("A") + c) if c < 26 else f"C{c}"


def page_names(sig: Any) -> list[str]:
    """``A0``, ``A1``, ``B0``: each page by its class (the first whose path has it, in a prompt tree) and
    its position on the class's path."""
    names = []
    for k in sig.domain["P"]:
        pos = sum(1 for q in sig.domain["P"] if sig.lt(q, k))
        owners = [c for c in sig.domain["C"] if sig.onp(c, k)]
        names.append(f"{_class(owners[0])}{pos}" if owners else f"P{k}")
    return names


def _role(sig: Any, s: Any, x: int) -> str:
    parts = []
    flights = [f for f in sig.domain["R"] if s.mem(x, f)]
    for f in flights:
        if f == x:
            parts.append(f"leads f{f}" if s.fl(f) else f"leads f{f} (closed)")
        else:
            parts.append(f"follows f{f}" + ("" if s.fl(f) else " (closed)"))
    if s.fl(x) and x not in flights:
        parts.append(f"flight f{x} open without its leader")
    parts += [f"waits via f{f}" for f in sig.domain["R"] if s.via(x, f)]
    if s.rel(x):
        parts.append("released")
    if s.exp(x):
        parts.append("expired")
    return ", ".join(parts) or "-"


def describe(sig: Any, s: Any) -> dict[str, Any]:
    """A finite relational state as a JSON-ready dictionary in the spec's vocabulary."""
    names = page_names(sig)
    reqs = []
    for x in sig.domain["R"]:
        reqs.append({
            "request": f"r{x}", "class": _class(sig.cls(x)), "phase": PHASE_NAMES[s.ph(x)], "role": _role(sig, s, x),
            "holds": [names[k] for k in sig.domain["P"] if s.hold(x, k)],
            "computed": [names[k] for k in sig.domain["P"] if s.comp(x, k)],
        })
    pages = []
    for k in sig.domain["P"]:
        holders = [f"r{x}" for x in sig.domain["R"] if s.hold(x, k)]
        state = PAGE_NAMES[s.pg(k)] if 0 <= s.pg(k) < len(PAGE_NAMES) else str(s.pg(k))
        pages.append({"page": names[k], "cached": state, "refs": len(holders), "holders": holders})
    index = {_class(c): [f"f{f}" for f in sig.domain["R"] if s.idx(c, f)] for c in sig.domain["C"]}
    return {
        "requests": reqs, "pages": pages, "index": {c: fs for c, fs in index.items() if fs},
        "running": s.running, "termination": _TERM.get(s.g_term, str(s.g_term)),
        "early_release": bool(s.g_early), "duplicate_prefill": bool(s.g_dup),
    }


def _request_line(r: dict[str, Any]) -> str:
    extra = ""
    if r["holds"]:
        extra += f", holds {' '.join(r['holds'])}"
    if r["computed"]:
        extra += f", computed {' '.join(r['computed'])}"
    return f"{r['request']} ({r['class']}): {r['phase']}, {r['role']}{extra}"


def _page_line(p: dict[str, Any]) -> str:
    return f"page {p['page']}: {p['cached']} refs={p['refs']}"


def _scalars(d: dict[str, Any]) -> list[str]:
    index = "; ".join(f"{c} -> {' '.join(fs)}" for c, fs in d["index"].items()) or "-"
    return [f"index: {index}; running={d['running']}; termination {d['termination']}; "
            f"early release {'yes' if d['early_release'] else 'no'}; "
            f"duplicate prefill {'yes' if d['duplicate_prefill'] else 'no'}"]


def format_state(d: dict[str, Any], indent: str = "    ") -> list[str]:
    """A described state, one line per request, per page, and one for the index and ghosts."""
    lines = [_request_line(r) for r in d["requests"]] + [_page_line(p) for p in d["pages"]] + _scalars(d)
    return [indent + x for x in lines]


def format_changes(before: dict[str, Any], after: dict[str, Any], indent: str = "    ") -> list[str]:
    """Only the lines an action changed."""
    old, new = format_state(before, indent), format_state(after, indent)
    changed = [b for a, b in zip(old, new) if a != b]
    return changed or [indent + "(nothing changed)"]


def format_cti(cti: Cti, design: str = "correct") -> str:
    """A CTI as text: what fails, where, and the step that breaks it."""
    sizes = ", ".join(f"{n} {k if n == 1 else _PLURAL.get(k, k + 's')}" for k, n in cti.sizes.items())
    if cti.action == "initial":
        head = f"{cti.invariant} fails in the initial state ({sizes}):"
        return "\n".join([head] + format_state(cti.before))
    head = (f"counterexample to induction: {cti.invariant} breaks under {cti.action} ({sizes}); every invariant "
            f"assumed holds before it")
    lines = [head, "  before:"] + format_state(cti.before) + [f"  after {cti.action}:"]
    lines += format_changes(cti.before, cti.after)
    if not cti.confirmed:
        lines.append("  (the finite replay of this structure disagrees with z3's model: a bug in flightcheck)")
    return "\n".join(lines)


def cti_json(cti: Cti) -> dict[str, Any]:
    """A CTI for machines."""
    return {"invariant": cti.invariant, "action": cti.action, "sizes": cti.sizes, "before": cti.before,
            "after": cti.after, "confirmed": cti.confirmed}


def _most(sizes: list[dict[str, int]]) -> str:
    top = {k: max((s.get(k, 0) for s in sizes), default=0) for k in ("request", "class", "page")}
    return ", ".join(f"{n} {k if n == 1 else _PLURAL.get(k, k + 's')}" for k, n in top.items())


def nonvacuity_line(c: ConfigReport) -> str:
    """One line: whether the proof under ``c`` is about something (the axioms, each action, each antecedent)."""
    nv = c.nonvacuity
    failures, unknown = nv.failures(), nv.unknown()
    if nv.axioms == "unsatisfiable":
        return f"VACUOUS: {failures[0]} (every verdict is vacuous)"
    acts = [w for w in nv.actions if w.status == "witnessed"]
    ants = [w for w in nv.antecedents if w.status == "witnessed"]
    parts = [f"axioms satisfiable (initial state: {_most([nv.initial])})"
             if nv.initial_status == "satisfiable" else f"axioms {nv.axioms}, initial state {nv.initial_status}",
             f"{len(acts)}/{len(nv.actions)} actions witnessed enabled"
             + (f" (states of at most {_most([w.sizes for w in acts])})" if acts else ""),
             f"{len(ants)}/{len(nv.antecedents)} antecedents met"]
    if unknown:
        parts.append(f"unknown (timeout, not a failure): {', '.join(unknown)}")
    if any(not w.confirmed for w in acts + ants):
        parts.append("a witness the finite reading disagrees with (a bug in flightcheck)")
    head = "VACUOUS: " + "; ".join(failures) + "; " if failures else "non-vacuous: "
    return head + "; ".join(parts)


def witness_json(w: Witness) -> dict[str, Any]:
    """A witness for machines: the action instance or antecedent, the state's sizes and its rendering."""
    return {"kind": w.kind, "subject": w.subject, "status": w.status, "instance": w.instance, "sizes": w.sizes,
            "state": [x.strip() for x in format_state(w.state)] if w.state is not None else None,
            "confirmed": w.confirmed, "reason": w.reason}


def nonvacuity_json(nv: NonVacuity) -> dict[str, Any]:
    """A configuration's non-vacuity for machines: ``ok``, the failures, the axioms and every witness."""
    return {"ok": not nv.failures(), "failures": nv.failures(), "unknown": nv.unknown(),
            "axioms": nv.axioms, "core": nv.core, "initial": {"status": nv.initial_status, "sizes": nv.initial},
            "actions": [witness_json(w) for w in nv.actions],
            "antecedents": [witness_json(w) for w in nv.antecedents]}


def property_line(report: UnboundedReport, name: str) -> str:
    """One line for a property over every configuration."""
    rows = [(c, c.verdict(name)) for c in report.configs if name in {v.name for v in c.verdicts}]
    secs = sum(v.seconds for _c, v in rows)
    status = report.status(name)
    if status == "proved":
        support = sorted({s for _c, v in rows for s in v.support})
        uses = f"; lemmas used: {', '.join(support)}" if support else "; no lemma needed"
        return f"{name}: proved for all sizes ({len(rows)} configurations, {secs:.2f} s{uses})"
    if status == "vacuous":
        bad = [(c, v) for c, v in rows if v.status == "vacuous"]
        return (f"{name}: vacuous under {len(bad)} of {len(rows)} configurations, first {bad[0][0].config.label()} "
                f"({bad[0][1].reason})")
    if status == "unknown":
        bad = [c.config.label() for c, v in rows if v.status == "unknown"]
        return f"{name}: unknown (timeout) under {', '.join(bad)}"
    bad = [(c, v) for c, v in rows if v.status == "cti"]
    c, v = bad[0]
    word = "not inductive" if report.variant == "correct" else "fails (CTI)"
    return f"{name}: {word} under {len(bad)} of {len(rows)} configurations, first {c.config.label()} ({v.cti.action})"


def format_report(report: UnboundedReport) -> str:
    """The whole run: a line per property, the lemmas' verdicts, each CTI, and what is not modelled."""
    lines = [f"unbounded proofs of {report.variant}: {len(report.configs)} configurations "
             f"({report.seconds:.1f} s, {report.cpu_seconds:.1f} s CPU)"]
    for c in report.configs:
        lines.append(f"  {c.config.label()}; environment: {c.config.environment()}")
        lines.append(f"    {nonvacuity_line(c)}")
    lines.append("")
    lines += [property_line(report, n) for n in report.property_names()]
    for name, why in report.not_modelled.items():
        lines.append(f"{name}: not modelled: {why}")
    failing_lemmas = sorted({v.name for c in report.configs for v in c.lemmas if v.status in ("cti", "unknown")})
    if failing_lemmas:
        lines.append(f"lemmas not proved (dropped from the invariant): {', '.join(failing_lemmas)}")
    vacuous = [(c, f) for c in report.configs for f in c.vacuity_failures]
    if vacuous:
        lines.append(f"not a proof: vacuous under {len({id(c) for c, _f in vacuous})} of {len(report.configs)} "
                     "configurations:")
        lines += [f"  {c.config.label()}: {f}" for c, f in vacuous]
    shown = set()
    for c in report.configs:
        for v in c.verdicts:
            if v.status == "cti" and v.kind == "property" and v.name not in shown:
                shown.add(v.name)
                lines += ["", f"{v.name} under {c.config.label()}:", format_cti(v.cti, report.variant)]
    return "\n".join(lines)


def report_json(report: UnboundedReport) -> dict[str, Any]:
    """The whole run for machines."""
    return {
        "variant": report.variant, "ok": report.ok, "seconds": round(report.seconds, 3),
        "cpu_seconds": round(report.cpu_seconds, 3),
        "properties": {n: report.status(n) for n in report.property_names()},
        "not_modelled": report.not_modelled,
        "vacuous": [{"config": c.config.label(), "failure": f} for c in report.configs for f in c.vacuity_failures],
        "configs": [{
            "config": c.config.label(), "environment": c.config.environment(), "seconds": round(c.seconds, 3),
            "queries": c.queries, "rounds": c.rounds, "nonvacuity": nonvacuity_json(c.nonvacuity),
            "verdicts": [{"name": v.name, "kind": v.kind, "status": v.status, "seconds": round(v.seconds, 4),
                          "support": list(v.support), "reason": v.reason,
                          **({"cti": cti_json(v.cti)} if v.cti is not None else {})} for v in c.verdicts],
        } for c in report.configs],
    }
