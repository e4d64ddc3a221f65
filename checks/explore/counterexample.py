"""Counterexamples and readable states: the presentation shared by every checker.

A :class:`Counterexample` is a concrete path from the initial state: numbered steps, each an action and
the state it leads to, optionally followed by a loop (for liveness) that repeats forever. It prints as a
numbered list naming, for each step, only what changed, in the design's own words ("r1: blocked ->
waiting", "flight f0 closed", "page A0 ready refs=1"), so a person can follow it without the layout.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> cx = Counterexample.from_actions(spec, ["arrive(0)", "arrive(1)"])
    >>> print(cx.format(spec))
     1. arrive(0)   r0: waiting, leads f0; index A -> f0
     2. arrive(1)   r1: blocked, follows f0
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from flightcheck.spec.model import ACTION_NAMES, Action, FlightSpec
from flightcheck.spec.state import CLOSED, OPEN, PAGE_NAMES, PHASE_NAMES, State

_ACTION_RE = re.compile(r"^\s*([a-z]+)\((\d+)\)\s*$")


def parse_action(text: str) -> Action:
    """``"admit(0)"`` -> ``Action("admit", 0)``, with a clear error for anything else."""
    m = _ACTION_RE.match(text)
    if not m or m.group(1) not in ACTION_NAMES:
        raise ValueError(f"not an action: {text!r}; expected NAME(INDEX) with NAME one of {', '.join(ACTION_NAMES)}")
    return Action(m.group(1), int(m.group(2)))


def class_name(c: int) -> str:
    """Class slot 0 -> ``A``, 1 -> ``B``, ..."""
    return chr(ord("A") + c) if c < 26 else f"C{c}"


def page_name(spec: FlightSpec, k: int) -> str:
    """Page slot ``k`` -> ``A0`` (class A, page 0)."""
    c, p = spec.layout.page_slots[k]
    return f"{class_name(c)}{p}"


def describe(spec: FlightSpec, state: State) -> dict[str, Any]:
    """A readable dictionary of a state: requests, flights, index, released IDs, cached pages, ghosts."""
    s = spec.view(state)
    n = spec.num_requests
    reqs = {}
    for i in range(n):
        ph = PHASE_NAMES[s.ph[i]]
        d: dict[str, Any] = {"phase": ph}
        if s.mem[i]:
            f = s.mem[i] - 1
            d["flight"] = f"f{f}"
            d["role"] = "leader" if f == i else "follower"
        if s.rel[i]:
            d["released"] = True
        if ph in ("prefill", "decode"):
            d.update(hit=s.hit[i], done=s.done[i], published=s.pubd[i], decoded=s.dec[i])
        reqs[f"r{i}"] = d
    flights = {
        f"f{f}": ("open" if s.fl[f] == OPEN else "draining")
        for f in range(n) if s.fl[f] != CLOSED
    }
    index = {class_name(c): f"f{s.idx[c] - 1}" for c in range(len(spec.layout.classes)) if s.idx[c]}
    pages = {
        page_name(spec, k): {"state": PAGE_NAMES[s.pg[k]], "refs": s.ref[k]}
        for k in range(len(spec.layout.page_slots)) if s.pg[k] or s.ref[k]
    }
    ghosts = {g: getattr(s, g) for g in ("g_term", "g_early", "g_dup") if getattr(s, g)}
    return {"requests": reqs, "flights": flights, "index": index,
            "released": [f"r{i}" for i in range(n) if s.rel[i]], "pages": pages, "ghosts": ghosts}


def label(spec: FlightSpec, state: State) -> str:
    """A compact multi-line label for graph nodes, one fact per line.

    One line per request that has arrived (``r0 L prefill 1/3 pub1``: leader, prefill units done of
    the prompt's units, shareable pages published; ``F`` a follower, ``hit2`` pages recovered from the
    cache, ``decode 0/1`` decode steps taken), then the open flights with the index, the released set,
    the cached pages with their references (``A0 ref1``; ``A1 rsv`` a reserved page), and any ghost a
    property flags. For example::

        >>> from flightcheck.spec.scenario import SCENARIOS
        >>> from flightcheck.spec.model import FlightSpec, Action
        >>> spec = FlightSpec(SCENARIOS["burst2"])
        >>> print(label(spec, spec.apply(spec.initial(), Action("arrive", 0))))
        r0 L waiting
        flight f0 open; index A->f0
    """
    d = describe(spec, state)
    lines = []
    for i, (r, info) in enumerate(d["requests"].items()):
        ph = info["phase"]
        if ph == "absent":
            continue
        role = {"leader": " L", "follower": " F"}.get(info.get("role", ""), "")
        extra = ""
        if ph == "prefill":
            extra = f" {info['done']}/{spec.scenario.requests[i].num_units} pub{info['published']}"
        elif ph == "decode":
            extra = f" {info['decoded']}/{spec.scenario.requests[i].num_decode} pub{info['published']}"
        if info.get("hit"):
            extra += f" hit{info['hit']}"
        lines.append(f"{r}{role} {ph}{extra}")
    if d["flights"]:
        fl = ", ".join(f"{k} {v}" for k, v in d["flights"].items())
        idx = ", ".join(f"{c}->{f}" for c, f in d["index"].items())
        lines.append(("flights " if len(d["flights"]) > 1 else "flight ") + fl + (f"; index {idx}" if idx else ""))
    elif d["index"]:
        lines.append("index " + ", ".join(f"{c}->{f}" for c, f in d["index"].items()))
    if d["released"]:
        lines.append("released " + ",".join(d["released"]))
    if d["pages"]:
        lines.append("pages " + ", ".join(
            f"{k} ref{v['refs']}" if v["state"] == "ready" else f"{k} rsv{v['refs']}" if v["state"] == "reserved"
            else f"{k} gone ref{v['refs']}" for k, v in d["pages"].items()))
    for g in d["ghosts"]:
        lines.append("!! " + {"g_term": "termination misjudged", "g_early": "released early",
                              "g_dup": "page prefilled twice"}[g])
    return "\n".join(lines) or "nothing arrived"


def changes(spec: FlightSpec, before: State, after: State) -> str:
    """What changed between two states, in the design's words."""
    a, b = describe(spec, before), describe(spec, after)
    out = []
    for r, info in b["requests"].items():
        old = a["requests"][r]
        if info == old:
            continue
        bits = []
        if info["phase"] != old["phase"]:
            bits.append(info["phase"])
        if info.get("flight") != old.get("flight") and info.get("flight"):
            bits.append(("leads " if info.get("role") == "leader" else "follows ") + info["flight"])
        elif old.get("flight") and not info.get("flight"):
            bits.append(f"left {old['flight']}")
        if info.get("released") != old.get("released"):
            bits.append("released" if info.get("released") else "unreleased")
        for k in ("hit", "done", "published", "decoded"):
            if k in info and info[k] != old.get(k) and not (k == "hit" and info[k] == 0):
                bits.append(f"{k}={info[k]}")
        out.append(f"{r}: " + ", ".join(bits))
    for f in sorted(set(a["flights"]) | set(b["flights"])):
        if a["flights"].get(f) != b["flights"].get(f) and f in a["flights"]:
            out.append(f"flight {f} " + (b["flights"].get(f) or "closed"))
    for c in sorted(set(a["index"]) | set(b["index"])):
        if a["index"].get(c) != b["index"].get(c):
            out.append(f"index {c} -> {b['index'].get(c, '-')}")
    for pg in sorted(set(a["pages"]) | set(b["pages"])):
        if a["pages"].get(pg) != b["pages"].get(pg):
            v = b["pages"].get(pg)
            out.append(f"page {pg} " + (f"{v['state']} refs={v['refs']}" if v else "evicted"))
    for g, v in b["ghosts"].items():
        if a["ghosts"].get(g) != v:
            out.append({"g_term": "TERMINATION MISJUDGED", "g_early": "RELEASED EARLY",
                        "g_dup": "PAGE PREFILLED TWICE"}[g])
    return "; ".join(out) if out else "(state unchanged)"


@dataclass(frozen=True)
class Step:
    """One step of a path: the action taken and the state it led to."""

    action: Action
    state: State


@dataclass
class Counterexample:
    """A concrete path from the initial state, with an optional loop that repeats forever."""

    steps: list[Step]
    loop: list[Step] = field(default_factory=list)
    stutters: bool = False  # the path ends in a state where no engine step is enabled

    @property
    def actions(self) -> list[str]:
        """The actions of the path as strings, e.g. ``["arrive(0)", "admit(0)"]``."""
        return [str(s.action) for s in self.steps]

    def __len__(self) -> int:
        return len(self.steps)

    @classmethod
    def from_actions(cls, spec: FlightSpec, actions: Iterable[str | Action]) -> "Counterexample":
        """Replay actions from the initial state; raises ValueError at the first disabled one."""
        state = spec.initial()
        steps = []
        for n, a in enumerate(actions, 1):
            act = parse_action(a) if isinstance(a, str) else a
            if act not in spec.actions:
                raise ValueError(f"step {n}: {act} is not an action of this scenario")
            if not spec.guard(state, act):
                raise ValueError(f"step {n}: {act} is not enabled here")
            state = spec.apply(state, act)
            steps.append(Step(act, state))
        return cls(steps)

    def final_state(self, spec: FlightSpec) -> State:
        """The last state of the path (the initial state for an empty path)."""
        return self.steps[-1].state if self.steps else spec.initial()

    def format(self, spec: FlightSpec) -> str:
        """A numbered list of actions, each with what it changed."""
        lines = []
        prev = spec.initial()
        width = max((len(str(s.action)) for s in self.steps + self.loop), default=0) + 2
        for n, step in enumerate(self.steps, 1):
            lines.append(f"{n:2d}. {str(step.action):<{width}}{changes(spec, prev, step.state)}")
            prev = step.state
        if self.loop:
            lines.append("    then forever:")
            for step in self.loop:
                lines.append(f"    - {str(step.action):<{width}}{changes(spec, prev, step.state)}")
                prev = step.state
        if self.stutters:
            lines.append("    then nothing: no engine step is enabled, and a live request never terminates")
        return "\n".join(lines)

    def to_json(self, spec: FlightSpec) -> dict[str, Any]:
        """A JSON-ready form: the actions, the loop, and the final state described."""
        return {
            "length": len(self.steps),
            "actions": self.actions,
            "loop": [str(s.action) for s in self.loop],
            "stutters": self.stutters,
            "final_state": describe(spec, self.steps[-1].state if self.steps else spec.initial()),
        }
