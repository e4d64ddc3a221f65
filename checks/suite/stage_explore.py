"""The ``explore`` stage of ``flightcheck check``: the correct design over every default scenario.

Every default scenario under every policy of its grid is explored (``--quick`` leaves out the five
largest); a row per scenario and policy passes when every property holds, the state count is the recorded
one, and the properties' fingerprint (:mod:`flightcheck.checks.explore.fingerprint`) is the recorded one.

For example::

    >>> len(explore_items(quick=True)) < len(explore_items(quick=False))
    True
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.suite.context import Context, parallel, scenario_key, where
from flightcheck.checks.suite.expect import is_count, is_count_map
from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage
from flightcheck.spec.scenario import SCENARIOS, policy_grid

# The scenarios --quick leaves out (the largest graphs).
HEAVY = ("burst4-abort", "doc3-abort", "doc3-expire", "doc3-pool", "doc3-evict")


def explore_one(scn: Any) -> tuple[str, bool, int, list[str], float, int, dict[str, Any]]:
    """One scenario under one policy explored: its key, whether every property holds, its state count,
    the violated properties, the seconds, the number of properties, and the row's evidence."""
    from flightcheck.checks.explore.choose import explore_with as explore
    from flightcheck.checks.explore.fingerprint import property_fingerprint
    from flightcheck.spec.model import FlightSpec

    spec = FlightSpec(scn)
    r = explore(spec)
    evidence = {**where(scn), "states": r.stats.states, "edges": r.stats.edges, "depth": r.stats.depth,
                "properties": {p.name: p.verdict for p in r.properties}}
    if r.graph.number_of_nodes() == r.stats.states:  # the reference explorer's graph holds every state
        evidence["fingerprint"] = property_fingerprint(spec, list(r.graph.nodes))
    return (scenario_key(scn), r.ok, r.stats.states, [p.name for p in r.violations], r.stats.seconds,
            len(r.properties), evidence)


def explore_items(quick: bool) -> list[Any]:
    """Every default scenario under every policy of its grid (``quick`` leaves out :data:`HEAVY`)."""
    return [s for name, scn in SCENARIOS.items() if not (quick and name in HEAVY) for s in policy_grid(scn)]


def explore_stage(ctx: Context) -> list[Row]:
    """The correct design over every default scenario under every policy of its grid; each row also
    compares its state count and its properties' fingerprint with the recorded ones."""
    rows = []
    items = explore_items(ctx.quick)
    for key, ok, states, bad, seconds, nprops, evidence in parallel(explore_one, items, ctx):
        changed = ctx.expect.compare("explore", key, states)
        detail = ", ".join(bad) if bad else f"{states} states, all {nprops} properties hold"
        if changed:
            detail = f"state count changed ({changed}); " + detail
        moved = None
        if "fingerprint" in evidence:  # a property whose meaning changed, though every reachable state keeps it
            moved = fingerprint_change(ctx, key, evidence["fingerprint"])
            if moved:
                detail = f"{moved}; " + detail
        rows.append(Row("explore", key, ok and not changed and not moved, detail, seconds, {**evidence, "violated": bad}))
    return rows


def fingerprint_change(ctx: Context, key: str, fingerprint: dict[str, int]) -> str | None:
    """What moved in the properties' fingerprint (:mod:`flightcheck.checks.explore.fingerprint`), naming
    each property whose count changed; None when nothing did."""
    changed = ctx.expect.compare("fingerprint", key, fingerprint)
    if not changed or not ctx.expect.has("fingerprint", key):
        return f"property fingerprint {changed}" if changed else None
    was = ctx.expect.recorded["fingerprint"][key]
    moved = [f"{p}: {was.get(p, 'absent')} -> {fingerprint.get(p, 'absent')}" for p in sorted(set(was) | set(fingerprint))
             if was.get(p) != fingerprint.get(p)]
    return "a property's meaning changed on states near the reachable ones (" + "; ".join(moved) + ")"


STAGE = Stage(
    "explore", explore_stage,
    depends=("spec/**", "checks/explore/**"),
    report="verdicts",
    expects={"explore": ("a state count (an integer >= 0)", is_count),
             "fingerprint": ("an object of property name -> states where it holds", is_count_map)},
)
