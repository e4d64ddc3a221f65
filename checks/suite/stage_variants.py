"""The ``variants`` stage of ``flightcheck check``: every design variant on its demo scenario.

Correct designs pass; each mutant is caught by its own property with the recorded shortest path, and
violates exactly the recorded properties (every one it violates, not only its own).

For example::

    >>> from flightcheck.checks.suite.expect import Expectations
    >>> rows = variants_stage(Context(quick=True, expect=Expectations()))
    >>> all(r.ok for r in rows)
    True
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from flightcheck.checks.suite.context import Context, where
from flightcheck.checks.suite.expect import is_count, is_text, pair_of, sorted_names
from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage
from flightcheck.spec.variants import VARIANTS


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
        here = {**where(r.spec.scenario.with_policy(**dataclasses.asdict(r.spec.policy))), "states": r.stats.states}
        if v.expected_violation is None:
            ok = not violated
            detail = "all safety and liveness properties hold" if ok else "violates " + ", ".join(violated)
            story = next((p for p in r.properties if p.name == "sometimes_all_finished" and p.witness), None)
            evidence: dict[str, Any] = {**here, "violated": violated,
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
            evidence = {**here, "property": v.expected_violation, "kind": res.kind, "length": n,
                        "counterexample": cx.actions if cx else None,
                        "loop": [str(s.action) for s in cx.loop] if cx else [], "stutters": bool(cx and cx.stutters),
                        "violated": violated}
        rows.append(Row("variants", v.name, ok, detail, time.perf_counter() - t, evidence))
    return rows


STAGE = Stage(
    "variants", variants_stage,
    depends=("spec/**", "checks/explore/**"),
    report="variants",
    expects={"variants": ("[violated property, shortest path length]", pair_of(is_text, is_count)),
             "violated": ("a sorted list of property names", sorted_names)},
)
