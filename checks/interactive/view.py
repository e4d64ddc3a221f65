"""One state of a path, as the explorer's page shows it.

A path is a list of actions from the initial state; the page shows the state after its first ``at``
actions: the state in the spec's vocabulary with the slots the last action changed, every enabled action
(what it would change, and whether it breaks a property), every disabled action with the spec's own
reasons (:func:`~flightcheck.checks.conform.explain.explain_guard`) and the conjuncts of its guard that
are false (:func:`~flightcheck.spec.conjuncts.false_conjuncts`), grouped by reason, every property's value here, the
breadcrumb of the whole path and the sequence diagram of the steps so far.

For example::

    >>> from flightcheck.checks.interactive.design import design_from_query
    >>> v = state_view(design_from_query({}, {}), ["arrive(0)", "arrive(1)"], 2)
    >>> v["changed"]
    ['requests.r1.flight', 'requests.r1.phase', 'requests.r1.role']
    >>> [a["action"] for a in v["enabled"]]
    ['admit(0)']
    >>> v["disabled"][0]
    {'action': 'arrive(0)', 'why': ['r0 already arrived (waiting)'], 'guard': ['arrive: s.ph[i] == ABSENT']}
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.conform.explain import explain_guard, violated
from flightcheck.checks.explore.counterexample import Counterexample, Step
from flightcheck.checks.explore.steps import step_changes
from flightcheck.checks.inputs import shown
from flightcheck.checks.interactive.design import OPTIONS, BadQuery, Design
from flightcheck.checks.report.sequence import diagram_of
from flightcheck.checks.report.svg_sequence import to_svg
from flightcheck.spec.actions import parse_action
from flightcheck.spec.conjuncts import false_conjuncts
from flightcheck.spec.describe import (
    FLIGHT_MEANINGS, FLIGHT_STATES, GHOST_MEANINGS, PAGE_MEANINGS, PHASE_MEANINGS, REQUEST_FIELDS,
)
from flightcheck.spec.properties import properties_for
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.state import PAGE_NAMES, PHASE_NAMES, Layout

#: The most actions a path in a URL may hold (each is replayed on every request).
MAX_STEPS = 400


def legend() -> dict[str, list[dict[str, str]]]:
    """The words of the state picture, read from the spec's own constants: every phase of
    :data:`~flightcheck.spec.state.PHASE_NAMES`, every page state of
    :data:`~flightcheck.spec.state.PAGE_NAMES`, the flight states, a request's fields and every ghost
    slot of the layout, each with its meaning.

    For example::

        >>> legend()["phases"][1]
        {'name': 'blocked', 'meaning': "a follower waiting for its flight's release (or a leader waiting via another prompt's flight); it holds no pages of its own"}
    """
    ghosts = Layout(SCENARIOS["burst2"]).fields_of("scalar")
    rows = lambda names, meanings: [{"name": n, "meaning": meanings[n]} for n in names]  # noqa: E731
    return {"phases": rows(PHASE_NAMES, PHASE_MEANINGS), "pages": rows(PAGE_NAMES, PAGE_MEANINGS),
            "flights": rows(FLIGHT_STATES.values(), FLIGHT_MEANINGS),
            "fields": rows(REQUEST_FIELDS, REQUEST_FIELDS),
            "ghosts": [{"name": g, "meaning": GHOST_MEANINGS[g]} for g in ghosts]}


def parse_path(text: str) -> list[str]:
    """The actions of a ``path`` parameter (comma-separated, e.g. ``arrive(0),admit(0)``)."""
    actions = [a.strip() for a in text.split(",") if a.strip()] if text else []
    if len(actions) > MAX_STEPS:
        raise BadQuery(f"path holds {len(actions):,} actions, more than the {MAX_STEPS} the explorer replays")
    for n, a in enumerate(actions, 1):
        try:
            parse_action(a)
        except ValueError as error:
            raise BadQuery(f"path step {n}: {str(error)[:200]}") from None
    return actions


def replay(design: Design, actions: list[str]) -> list[Step]:
    """The steps of ``actions`` from the initial state; :class:`BadQuery` naming the first step that is not
    an action of this design or not enabled where it is taken."""
    spec = design.spec
    instances = set(spec.actions)
    state, steps = spec.initial(), []
    for n, text in enumerate(actions, 1):
        act = parse_action(text)
        if act not in instances:
            raise BadQuery(f"path step {n}: {act} is not an action of {design.title()}")
        if not spec.guard(state, act):
            why = "; ".join(explain_guard(spec, state, act)) or "its guard is false"
            raise BadQuery(f"path step {n}: {act} is not enabled after the first {n - 1} step(s): {why}")
        state = spec.apply(state, act)
        steps.append(Step(act, state))
    return steps


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A described state as ``{"requests.r0.phase": "prefill", ...}``: one entry per leaf slot."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out if out or not prefix else {prefix: {}}
    return {prefix: value}


def group_disabled(disabled: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The disabled actions grouped by reason: each reason once, with every action it disables, and the
    guard conjuncts it stands for (those false in all of its actions, less those a reason shared by more
    actions already names; the guard's name kept when it is one action's), in the order the reasons
    first appear.

    For example::

        >>> group_disabled([{"action": "a(0)", "why": ["busy", "a0 done"], "guard": ["a: calm", "a: ph0"]},
        ...                 {"action": "b(0)", "why": ["busy"], "guard": ["b: calm"]}])[1]
        {'why': 'a0 done', 'actions': ['a(0)'], 'guard': ['a: ph0']}
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for d in disabled:
        for why in d["why"]:
            groups.setdefault(why, []).append(d)
    bare = {why: [{g.split(": ", 1)[-1] for g in d["guard"]} for d in members] for why, members in groups.items()}
    common = {why: set.intersection(*sets) for why, sets in bare.items()}
    out = []
    for why, members in groups.items():
        names = {d["action"] for d in members}
        wider = [common[w] for w, m in groups.items() if w != why and names < {d["action"] for d in m}]
        named = common[why].difference(*wider) if wider else common[why]
        if len(members) == 1:  # one action: its conjuncts keep the guard they are from
            named = [g for g in members[0]["guard"] if g.split(": ", 1)[-1] in named]
        out.append({"why": why, "actions": [d["action"] for d in members], "guard": sorted(named)})
    return out


def state_view(design: Design, actions: list[str], at: int | None = None, *, mark: int | None = None,
               property: str | None = None) -> dict[str, Any]:
    """Everything the page shows of the state after the first ``at`` actions of the path (all by default).

    ``mark`` is the step of a loaded counterexample where ``property`` breaks; it is drawn on the path and
    in the sequence diagram. A ``property`` that is not one of the design's is a :class:`BadQuery` listing them.
    """
    spec = design.spec
    steps = replay(design, actions)
    at = len(steps) if at is None else at
    if not 0 <= at <= len(steps):
        raise BadQuery(f"at must be between 0 and the path's {len(steps)} step(s); got {at}")
    known = {p.name: p for p in properties_for(spec)}
    if property is not None and property not in known:
        raise BadQuery(f"property {shown(property)} is not a property of {design.title()}; it has "
                       f"{', '.join(known)}")
    states = [spec.initial()] + [s.state for s in steps]
    state, before = states[at], states[at - 1] if at else None
    described = spec.describe(state)
    now, then = flatten(described), flatten(spec.describe(before)) if before is not None else {}
    changed = sorted(k for k in now.keys() | then.keys() if before is not None and now.get(k) != then.get(k))
    enabled, on, broken = [], set(), set(violated(spec, state))
    for act, after in spec.successors(state):  # "breaks": what the step would newly violate
        on.add(act)
        enabled.append({"action": str(act), "changes": step_changes(spec, state, act, after),
                        "engine": spec.is_engine(act),
                        "breaks": [p for p in violated(spec, after) if p not in broken]})
    disabled = [{"action": str(a), "why": explain_guard(spec, state, a),
                 "guard": [f"{c.method.removeprefix('g_')}: {c.label}" for c in false_conjuncts(spec, state, a)]}
                for a in spec.actions if a not in on]
    props = []
    for p in properties_for(spec):
        value = bool(p.holds(spec, state)) if p.check is not None else None
        props.append({"name": p.name, "kind": p.kind, "holds": value, "story": p.story})
    path = [{"n": n, "action": str(s.action), "changes": step_changes(spec, states[n - 1], s.action, s.state),
             "breaks": [p for p in violated(spec, s.state) if p not in violated(spec, states[n - 1])]}
            for n, s in enumerate(steps, 1)]
    # The diagram names the broken property on the step a loaded counterexample marks, when it is shown.
    failing = known[property] if property is not None and mark == at else None
    diagram = diagram_of(spec, Counterexample(steps[:at]), property=failing and failing.name,
                         story=failing.story if failing else "", kind=failing.kind if failing else "always",
                         title=design.title()) if at else None
    return {
        "title": design.title(), "query": design.query(), "at": at, "length": len(steps),
        "scenario": design.scenario.name, "variant": design.variant, "policy": dict(design.policy.__dict__),
        "options": {name: getattr(design.scenario, name) for name in OPTIONS},
        "path": path, "mark": mark, "property": property,
        "state": described, "changed": changed,
        "last": path[at - 1] if at else None,
        "enabled": enabled, "disabled": disabled, "disabled_groups": group_disabled(disabled), "properties": props,
        "violated": violated(spec, state),
        "diagram": to_svg(diagram) if diagram is not None else "",
    }
