"""A path of the spec as a sequence diagram: lifelines, one row of arrows per step, the violation marked.

:func:`diagram_of` turns a :class:`~flightcheck.checks.explore.counterexample.Counterexample` into a
:class:`SequenceDiagram`, the model the SVG writer (:mod:`flightcheck.checks.report.svg_sequence`) draws.
Each step's arrows come from :mod:`flightcheck.checks.report.lifelines` (which lifelines an action
runs between) and are labelled from the states before and after it, in the design's words: whom an
arrival leads or follows, what a lookup recovered, which pages a publication made visible, which
followers a release sent to admission, and the coordinator's verdict on every termination (accepted,
or rejected as unknown). The step where the property breaks is marked, with the property named and its
story; a deadlock ends in a note that nothing can move, a liveness lasso marks the loop that repeats.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.checks.explore.counterexample import Counterexample
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> cx = Counterexample.from_actions(spec, ["arrive(0)", "arrive(1)", "admit(0)"])
    >>> d = diagram_of(spec, cx)
    >>> [l.key for l in d.lifelines]
    ['r0', 'r1', 'scheduler', 'coordinator', 'cache']
    >>> [(a.source, a.target, a.label) for a in d.steps[1].arrows]
    [('r1', 'coordinator', 'arrives: follows f0, blocked')]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from flightcheck.checks.explore.counterexample import Counterexample, Step
from flightcheck.checks.explore.steps import is_misjudged, step_changes, termination_verdict, verdict_words
from flightcheck.checks.report.lifelines import (
    CACHE, COORDINATOR, REQUEST, SCHEDULER, SERVICES, acts_on_request, messages_for,
)
from flightcheck.spec.actions import ADMISSIONS, CACHE_PUBLICATIONS, FOLLOWER_RELEASES, SLOT_ACTIONS, Action
from flightcheck.spec.state import DECODE, PHASE_NAMES

VIOLATION, LOOP = "violation", "loop"


@dataclass(frozen=True)
class Lifeline:
    """One column: its key (``r0``, ``scheduler``...), the name drawn, and a second line (a role)."""

    key: str
    name: str
    role: str = ""


@dataclass
class Arrow:
    """One message: ``source`` to ``target`` (equal for a self-message); ``reply`` arrows are dashed;
    ``bad`` ones carry the misjudgement the property forbids."""

    source: str
    target: str
    label: str
    reply: bool = False
    bad: bool = False


@dataclass
class SeqStep:
    """One step: its number, action, arrows, what it changed, and a mark (``violation``, ``loop`` or '')."""

    number: int
    action: str
    arrows: list[Arrow]
    changes: str
    mark: str = ""


@dataclass
class SequenceDiagram:
    """Everything the writer needs: title, lifelines, steps, the property at stake and how the path ends."""

    title: str
    lifelines: list[Lifeline]
    steps: list[SeqStep]
    property_name: str | None = None
    story: str = ""
    ending: str = ""
    failed: bool = False  # the ending is a violation (drawn red) rather than a story's end
    notes: list[str] = field(default_factory=list)

    @property
    def num_arrows(self) -> int:
        """Arrows drawn in all."""
        return sum(len(s.arrows) for s in self.steps)


def _request_bits(before: dict[str, Any], after: dict[str, Any]) -> str:
    """A request's change in a few words: ``follows f0, blocked``; ``waiting, released, pinned=2``."""
    bits = []
    if after.get("role") and after.get("flight") != before.get("flight"):
        bits.append(("leads " if after["role"] == "leader" else "follows ") + after["flight"])
    if after["phase"] != before["phase"]:
        bits.append(after["phase"])
    if after.get("released") and not before.get("released"):
        bits.append("released")
    for key in ("pinned", "hit", "done", "decoded"):
        if after.get(key) and after.get(key) != before.get(key) and key in ("pinned", "hit"):
            bits.append(f"{key} {after[key]}")
    return ", ".join(bits)


def _lookup_words(spec: Any, i: int, after: dict[str, Any]) -> str:
    hit = after["requests"][f"r{i}"].get("hit", 0)
    total = spec.shareable(i)
    return f"hit {hit} of {total} shareable pages" if total else "nothing shareable"


def _arrow_label(spec: Any, msg: Any, act: Action, d0: dict, d1: dict) -> str:
    """The words on one arrow of ``act``, by its action's entry of :data:`LABELS`."""
    if msg.target == CACHE and act.name in ADMISSIONS:
        return "look up the prefix: " + _lookup_words(spec, act.arg, d1)
    return LABELS[act.name](spec, msg, act.arg, d0, d1)


def _label_arrive(spec: Any, msg: Any, i: int, d0: dict, d1: dict) -> str:
    bits = _request_bits(d0["requests"].get(f"r{i}", {}), d1["requests"].get(f"r{i}", {}))
    return f"{msg.verb}: {bits}" if bits else msg.verb


def _label_prefill(spec: Any, msg: Any, i: int, d0: dict, d1: dict) -> str:
    mine = d1["requests"].get(f"r{i}", {})
    units = spec.scenario.requests[i].num_units
    return f"prefill {mine.get('done', units)}/{units}" + (" (first token)" if mine.get("phase") == PHASE_NAMES[DECODE] else "")


def _label_decode(spec: Any, msg: Any, i: int, d0: dict, d1: dict) -> str:
    return f"decode {d1['requests'].get(f'r{i}', {}).get('decoded', 0)}/{spec.scenario.requests[i].num_decode}"


def _label_publish(spec: Any, msg: Any, i: int, d0: dict, d1: dict) -> str:
    ready = [p for p, v in d1["pages"].items() if v["state"] == "ready" and d0["pages"].get(p, {}).get("state") != "ready"]
    return "publish " + (", ".join(ready) if ready else "(already cached)")


def _label_release(spec: Any, msg: Any, i: int, d0: dict, d1: dict) -> str:
    return f"{msg.verb} f{i}"


def _label_evict(spec: Any, msg: Any, i: int, d0: dict, d1: dict) -> str:
    from flightcheck.spec.describe import page_name
    return f"{msg.verb}: {page_name(spec, i)}"


def _label_verb(spec: Any, msg: Any, i: int, d0: dict, d1: dict) -> str:
    return msg.verb


# The words on each action's arrows (beyond checks/report/lifelines.py's verbs), one entry per spec action
# (tests/test_registries.py holds the keys equal to the spec's action names).
LABELS: dict[str, Callable[[Any, Any, int, dict, dict], str]] = {
    "arrive": _label_arrive, "admit": _label_verb, "prefill": _label_prefill, "publish": _label_publish,
    "release": _label_release, "promote": _label_verb, "decode": _label_decode, "finish": _label_verb,
    "evict": _label_evict, "abort": _label_verb, "notify": _label_verb, "expire": _label_verb, "fail": _label_verb,
}


def _step_arrows(spec: Any, before: Any, act: Action, after: Any) -> list[Arrow]:
    d0, d1 = spec.describe(before), spec.describe(after)
    actor = f"r{act.arg}"
    has_pool = spec.scenario.has_pool
    where = {REQUEST: actor}
    arrows = []
    for msg in messages_for(act.name, has_pool=has_pool):
        src, dst = where.get(msg.source, msg.source), where.get(msg.target, msg.target)
        arrows.append(Arrow(src, dst, _arrow_label(spec, msg, act, d0, d1)))
    if act.name in ADMISSIONS and d1["requests"][actor].get("hit"):
        hit = d1["requests"][actor]["hit"]
        arrows.append(Arrow(CACHE, actor, f"{hit} page{'s' if hit != 1 else ''} recovered", reply=True))
    if act.name not in CACHE_PUBLICATIONS | SLOT_ACTIONS:
        moved = [f"{p} {v['state']}" for p, v in d1["pages"].items()
                 if v["state"] != d0["pages"].get(p, {}).get("state", "-")]
        if moved:  # pages made visible or reserved by another step (a variant's, or a finish's publication)
            arrows.append(Arrow(actor, CACHE, "pages " + ", ".join(moved)))
    verdict = termination_verdict(spec, before, act)
    if verdict is not None:
        arrows.append(Arrow(COORDINATOR, actor, verdict_words(act, verdict), reply=True, bad=is_misjudged(act, verdict)))
    # Everyone else this step moved (a release's followers, a promotion's flight): from where the step ended.
    origin = SCHEDULER if act.name in FOLLOWER_RELEASES else (arrows[-1].target if arrows else SCHEDULER)
    for r, info in d1["requests"].items():
        if r == actor and acts_on_request(act.name):
            continue
        old = d0["requests"][r]
        if info != old and info["phase"] != old["phase"]:
            arrows.append(Arrow(origin, r, _request_bits(old, info) or "changed"))
    return arrows


def _lifelines(spec: Any, steps: list[Step]) -> list[Lifeline]:
    n = spec.num_requests
    used = sorted({s.action.arg for s in steps if acts_on_request(s.action.name)} |
                  {i for s in steps for i, info in enumerate(spec.describe(s.state)["requests"].values())
                   if info["phase"] != "absent"})
    roles: dict[int, str] = {}
    for s in steps:
        for i, info in enumerate(spec.describe(s.state)["requests"].values()):
            if i not in roles and info["phase"] != "absent":
                roles[i] = info.get("role", "solo" if not spec.policy.single_flight else "")
    lines = [Lifeline(f"r{i}", f"r{i}", roles.get(i, "never submitted" if i >= n else "not submitted")) for i in used]
    return lines + [Lifeline(key, name) for key, name in SERVICES if key != "pool" or spec.scenario.has_pool]


def diagram_of(spec: Any, cx: Counterexample, *, property: str | None = None, story: str = "",
               kind: str = "always", title: str = "") -> SequenceDiagram:
    """The sequence diagram of ``cx`` on ``spec``; with ``property`` (of ``kind``: ``always``,
    ``deadlock_free``, ``eventually``) the step or loop where it breaks is marked and named."""
    rows: list[SeqStep] = []
    prev = spec.initial()
    for n, step in enumerate(cx.steps + cx.loop, 1):
        mark = LOOP if n > len(cx.steps) else ""
        rows.append(SeqStep(n, str(step.action), _step_arrows(spec, prev, step.action, step.state),
                            step_changes(spec, prev, step.action, step.state), mark))
        prev = step.state
    failed = property is not None
    if failed and kind == "always" and rows and not cx.loop:
        rows[-1].mark = VIOLATION
    if cx.loop:
        ending = "the steps marked loop repeat forever: a request stays live and never terminates"
    elif cx.stutters:
        ending = "then nothing: no engine step is enabled, and a live request never terminates"
        if rows:
            rows[-1].mark = VIOLATION
    elif failed:
        ending = f"after step {len(rows)}, {property} no longer holds"
    else:
        ending = ""
    if failed:
        ending = f"{property} violated: " + ending
    head = title or spec.title()
    return SequenceDiagram(head, _lifelines(spec, cx.steps + cx.loop), rows, property, story, ending, failed)
