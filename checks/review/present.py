"""A review as text (for people) and as JSON (for machines), and its exit status.

:func:`outcome` decides: ``regressed`` when a verdict got worse (exit 1), ``changed`` when behaviour
moved without a regression (exit 0, or 1 under ``--strict``), ``same`` when nothing moved (exit 0).
:func:`to_text` lists the scenarios whose graphs changed, the first added or removed edge of the first
few changed graphs with the shortest path to it, every verdict and counterexample that moved, each
variant that moved, and the regressions last.

For example::

    >>> outcome({"regressions": [], "changed": True}, strict=False), outcome({"regressions": [], "changed": True}, strict=True)
    (('changed', 0), ('changed', 1))
    >>> counts({"states": [52, 54], "states_added": 3, "states_removed": 1, "edges_added": 5, "edges_removed": 2})
    'states 52 -> 54 (+3 -1), edges +5 -2'
"""

from __future__ import annotations

from collections import Counter
from typing import Any

DETAILED = 8  # changed graphs shown with their first change; the others one line each


def outcome(diff: dict[str, Any], strict: bool) -> tuple[str, int]:
    """The review's verdict (``regressed``, ``changed`` or ``same``) and its exit status."""
    if diff["regressions"]:
        return "regressed", 1
    if diff["changed"]:
        return "changed", 1 if strict else 0
    return "same", 0


def counts(item: dict[str, Any]) -> str:
    """``states 52 -> 54 (+3 -1), edges +5 -2``."""
    return (f"states {item['states'][0]} -> {item['states'][1]} (+{item['states_added']} -{item['states_removed']}), "
            f"edges +{item['edges_added']} -{item['edges_removed']}")


def _length(n: int | None) -> str:
    return "none" if n is None else f"{n} steps"


def _moves(item: dict[str, Any]) -> list[str]:
    lines = []
    for m in item["verdicts"]:
        lines.append(f"verdict {m['property']}: {m['was']} -> {m['now']}" + ("  REGRESSION" if m["regressed"] else ""))
    for c in item["counterexamples"]:
        what = ("new counterexample" if c["was"] is None else "counterexample gone" if c["now"] is None
                else "counterexample length")
        lines.append(f"{what} {c['property']}: {_length(c['was'])} -> {_length(c['now'])}"
                     + (f" ({' '.join(c['path'])})" if c["was"] is None and c.get("path") else ""))
    return lines


def change_lines(item: dict[str, Any], detailed: bool = True) -> list[str]:
    """What moved in one compared graph (:func:`~flightcheck.checks.review.graphdiff.compare_item`): its first
    added or removed edge with the path to it (when ``detailed``), then every verdict and counterexample."""
    lines = []
    first = item["first"]
    if first is not None and detailed:
        article = "an" if first["kind"] == "added" else "a"
        lines.append(f"first change: {article} {first['kind']} edge, step {first['steps']}: {' '.join(first['path'])}")
        lines.append(f"  from: {first['from']}")
        lines.append(f"  to:   {first['to']}" + ("  (a state only this side has)" if first["to_is_new"] else ""))
    return lines + _moves(item)


def corpus_lines(corpus: dict[str, Any]) -> list[str]:
    """The conformance corpus as each side's engine ran it: the programs whose spec actions changed, each
    with its first differing event (at most :data:`DETAILED`; ``--json`` has every one)."""
    if not corpus["compared"]:
        return ["", f"conformance corpus: not compared ({corpus['why']})"]
    changed = corpus["changed"]
    extra = "".join(f", {n} only in the {side}'s corpus" for side, n in
                    (("baseline", corpus["only_baseline"]), ("candidate", corpus["only_candidate"])) if n)
    lines = ["", f"conformance corpus: {len(changed)} of {corpus['programs']} programs take other engine steps{extra}"]
    for c in changed[:DETAILED]:
        lines.append(f"  {c['entry']}, program {c['index']}: event {c['event']} was {c['was']}, is now {c['now']}")
    if len(changed) > DETAILED:
        lines.append(f"  (and {len(changed) - DETAILED} more; --json has every one)")
    for c in corpus.get("coverage", []):
        lines.append(f"  engine coverage of {c['entry']}: {c['was']} -> {c['now']} spec edges")
    return lines


def to_text(review: dict[str, Any]) -> list[str]:
    """The review as lines of plain text."""
    diff = review["diff"]
    base, cand = review["baseline"], review["candidate"]
    lines = [f"baseline {base['ref']} ({base['commit'][:10]}) against the working tree {cand['root']}"]
    if cand["uncommitted"]:
        lines.append(f"note: the candidate includes uncommitted changes ({len(cand['uncommitted'])} paths: "
                     + ", ".join(cand["uncommitted"][:5]) + (", ..." if len(cand["uncommitted"]) > 5 else "") + ")")
    lines.append(f"compared {len(diff['items'])} graphs of {len(review['scenarios'])} default scenarios and "
                 f"{len(diff['variants'])} variants in {review['seconds']:.1f} s "
                 f"(CPU {review['cpu_seconds']:.1f} s, both sides at once)")
    changed = [i for i in diff["items"] if i["changed"]]
    if changed:
        per = Counter(i["scenario"] for i in changed)
        total = Counter(i["scenario"] for i in diff["items"])
        lines.append("")
        lines.append("scenarios whose graphs changed: " + ", ".join(f"{s} ({n} of {total[s]} policies)" for s, n in per.items()))
        for k, item in enumerate(changed):
            lines.append(f"  {item['key']}: {counts(item)}")
            lines += [f"    {line}" for line in change_lines(item, detailed=k < DETAILED)]
            if item["key"] in review.get("drawn", {}):
                lines.append(f"    drawn (added green, removed red): {review['drawn'][item['key']]}")
        if len(changed) > DETAILED:
            lines.append(f"  (the first change is drawn for the first {DETAILED}; --json has every one)")
    moved = [v for v in diff["variants"] if v["changed"]]
    if moved:
        lines.append("")
        lines.append("variants that moved:")
        for v in moved:
            caught = "" if v["expected"] is None else (f" (must violate {v['expected']}: "
                                                     + ("still caught" if v["caught"][1] else "NOT caught") + ")")
            states = f", states {v['states'][0]} -> {v['states'][1]}" if v["states"][0] != v["states"][1] else ""
            lines.append(f"  {v['name']}{caught}{states}")
            lines += [f"    {m}" for m in _moves(v)]
    lines += corpus_lines(diff.get("corpus") or {"compared": False, "why": "not run"})
    for title, keys in (("only in the baseline", diff["only_baseline"]), ("only in the candidate", diff["only_candidate"])):
        if keys:
            lines.append(f"{title}: " + ", ".join(keys))
    lines.append("")
    if diff["regressions"]:
        lines.append(f"regressions ({len(diff['regressions'])}):")
        lines += [f"  {r}" for r in diff["regressions"]]
    verdict, status = review["verdict"], review["exit"]
    lines.append({"regressed": f"REGRESSED: a verdict got worse (exit {status})",
                  "changed": f"behaviour changed, no verdict got worse (exit {status}"
                             + ("; --strict fails any change)" if review["strict"] else "; --strict would fail it)"),
                  "same": "no behaviour change: every graph, verdict and counterexample is the baseline's (exit 0)"}[verdict])
    return lines
