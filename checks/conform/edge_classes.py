"""Abstract edge classes: what kinds of spec step the engine must be driven through, and a gate on them.

A spec edge (a state and the action taken from it) falls into one :class:`EdgeClass`: the action, the
policy combination it runs under (coordination, release point, publication, leader-loss policy), how many
requests wait blocked (0, 1, 2 or more: a release or hand-on with a choice among waiters needs two),
whether a released request holds pins it was given before admission, and whether any shareable page is
published yet. The classes read only the spec's state, so the explorer's graphs and the engine's
conformance runs (the spec actions its events took) are classified by the same function.

:func:`reachable_classes` collects the classes of every edge of the default scenarios under their policy
grids; :func:`gate` compares them with the classes the conformance drivers took on the engine. A class
reachable in the spec but never driven fails the gate by name, unless every edge of that class is out of
the engine's reach by design (:func:`flightcheck.checks.conform.reach.reason` names a step-loop rule
for each); those are listed with their rules, never hidden.

For example::

    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> sorted(str(c) for c in classes_of_path(spec, ["arrive(0)", "arrive(1)"]))[:1]
    ['arrive · single-flight/after-prefill/incremental/release-all · 0 waiting · no pins · before publication']
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from flightcheck.spec.state import BLOCKED, READY, WAITING


@dataclass(frozen=True, order=True)
class EdgeClass:
    """One kind of spec step: the action, the policy combination, the requests waiting blocked (``0``,
    ``1`` or ``2+``), whether some waiting request holds pins, and whether some page is published."""

    action: str
    policy: str
    waiters: str
    pins: bool
    published: bool

    def __str__(self) -> str:
        return (f"{self.action} · {self.policy} · {self.waiters} waiting · {'pins' if self.pins else 'no pins'} · "
                f"{'after' if self.published else 'before'} publication")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"action": self.action, "policy": self.policy, "waiters": self.waiters, "pins": self.pins,
                "published": self.published}


def policy_key(policy: Any) -> str:
    """The policy combination a class names: coordination, release point, publication and leader-loss
    policy (the last two knobs of a flight read ``-`` without coordination, where they change nothing)."""
    if not policy.single_flight:
        return f"{policy.coordination}/-/{policy.publication}/-"
    return f"{policy.coordination}/{policy.release}/{policy.publication}/{policy.leader_loss}"


def edge_class(spec: Any, state: Any, action_name: str) -> EdgeClass:
    """The class of the spec edge that takes ``action_name`` from ``state``."""
    s = spec.view(state)
    n = spec.num_requests
    blocked = sum(1 for i in range(n) if s.ph[i] == BLOCKED)
    pins = any(s.ph[i] == WAITING and s.pubd[i] > 0 for i in range(n))
    published = any(s.pg[k] == READY for k in range(len(spec.layout.page_slots)))
    return EdgeClass(action_name, policy_key(spec.policy), "2+" if blocked >= 2 else str(blocked), pins, published)


def classes_of_path(spec: Any, actions: Iterable[str]) -> set[EdgeClass]:
    """The classes of the edges a run of ``spec`` takes (its actions as the event log names them)."""
    from flightcheck.spec.model import parse_action

    out, s = set(), spec.initial()
    for text in actions:
        a = parse_action(text)
        out.add(edge_class(spec, s, a.name))
        s = spec.apply(s, a)
    return out


def classes_of_spec(spec: Any) -> dict[EdgeClass, list[tuple[Any, Any]]]:
    """Every class of ``spec``'s reachable edges, each with its edges ``(state, action)`` (breadth first)."""
    out: dict[EdgeClass, list[tuple[Any, Any]]] = {}
    start = spec.initial()
    seen, todo = {start}, deque([start])
    while todo:
        s = todo.popleft()
        for a, t in spec.successors(s):
            out.setdefault(edge_class(spec, s, a.name), []).append((s, a))
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return out


def _queue_after(spec: Any, s: Any, t: Any, queue: tuple[frozenset, ...]) -> tuple[frozenset, ...]:
    """The engine's admission queue after the step ``s`` -> ``t``: those that left the waiting phase
    removed, those that entered it appended as one group (requests that enter together, as the followers
    of one release do, may stand in any order among themselves: a sound over-approximation)."""
    vs, vt = spec.view(s), spec.view(t)
    n = spec.num_requests
    left = {i for i in range(n) if vs.ph[i] == WAITING and vt.ph[i] != WAITING}
    came = frozenset(i for i in range(n) if vt.ph[i] == WAITING and vs.ph[i] != WAITING)
    out = tuple(g - left for g in queue if g - left)
    return out + (came,) if came else out


def _admits_in_order(spec: Any, s: Any, queue: tuple[frozenset, ...], i: int) -> bool:
    """Whether the engine can admit request ``i`` here: it admits the first queued request that fits, so
    no request of an earlier group of the queue may fit (the spec's admission guard says which fit). Only
    while the queue is at most two turnovers deep, as every default scenario's is; a scenario that may
    queue deeper is not filtered."""
    from flightcheck.spec.actions import ADMISSIONS, Action

    if spec.num_requests > 2 * spec.policy.capacity:
        # A queue deeper than two turnovers alternates with the longest prompt (impl/scheduler.py,
        # admission_order), which this order does not model: allow every admission (over-approximate).
        return True
    for group in queue:
        if i in group:
            return True
        if any(spec.guard(s, Action(a, j)) for a in ADMISSIONS for j in group):
            return False
    return False


def class_paths(spec: Any, wanted: set[EdgeClass], tries: int = 8) -> dict[EdgeClass, list[list[str]]]:
    """For each class of ``wanted``, up to ``tries`` shortest runs of ``spec`` (their actions) whose last
    edge is of that class and within the engine's reach, shortest first: what a directed replay drives
    through the engine's guard/command pairs when no client program was found to make the engine's own
    scheduling take the class. A class with no such run is out of the engine's reach.

    Within reach means: no step-loop rule of :mod:`~flightcheck.checks.conform.reach` excludes the last
    edge, and every admission on the way is one the engine's queue allows. The spec admits any waiting
    request that fits; the engine admits the first that fits in the order they started waiting, so the
    search carries that order beside each spec state (:func:`_queue_after`) and takes an admission only
    when no request queued before it fits (:func:`_admits_in_order`)."""
    from flightcheck.checks.conform.reach import reason
    from flightcheck.spec.actions import ADMISSIONS

    out: dict[EdgeClass, list[list[str]]] = {}
    todo = set(wanted)
    start = (spec.initial(), ())
    parent: dict[Any, tuple[Any, Any] | None] = {start: None}
    queue = deque([start])

    def path(node: Any) -> list[str]:
        acts = []
        while parent[node] is not None:
            node, a = parent[node]
            acts.append(str(a))
        return acts[::-1]

    while queue and todo:
        node = queue.popleft()
        s, order = node
        for a, t in spec.successors(s):
            if a.name in ADMISSIONS and not _admits_in_order(spec, s, order, a.arg):
                continue
            cls = edge_class(spec, s, a.name)
            if cls in todo and reason(spec, s, a) == "unexplained":
                out.setdefault(cls, []).append(path(node) + [str(a)])
                if len(out[cls]) >= tries:
                    todo.discard(cls)
            nxt = (t, _queue_after(spec, s, t, order))
            if nxt not in parent:
                parent[nxt] = (node, a)
                queue.append(nxt)
    return out


@dataclass
class Reachable:
    """The classes reachable in the spec over some scenarios: for each, an example edge, whether some edge
    of it is within the engine's reach, and the step-loop rules that keep the engine from the others."""

    examples: dict[EdgeClass, str] = field(default_factory=dict)
    within: dict[EdgeClass, bool] = field(default_factory=dict)
    rules: dict[EdgeClass, set[str]] = field(default_factory=dict)

    def add(self, spec: Any) -> None:
        """Fold in every reachable edge class of ``spec``."""
        from flightcheck.checks.conform.reach import reason

        for cls, edges in classes_of_spec(spec).items():
            if self.within.get(cls):
                continue  # already known within reach: nothing this spec adds changes the verdict
            rules = self.rules.setdefault(cls, set())
            hit = None
            for s, a in edges:
                r = reason(spec, s, a)
                if r == "unexplained":  # no step-loop rule keeps the engine from this edge
                    hit = (s, a)
                    break
                rules.add(r)
            self.within[cls] = hit is not None
            if hit is not None or cls not in self.examples:
                s, a = hit or edges[0]
                self.examples[cls] = f"{spec.scenario.name}: {a} from {spec.label(s)}".replace("\n", " ")

    def merge(self, other: "Reachable") -> None:
        """Fold in ``other`` (the classes of other scenarios)."""
        for cls, ok in other.within.items():
            if ok and not self.within.get(cls) or cls not in self.examples:
                self.examples[cls] = other.examples[cls]
            self.within[cls] = self.within.get(cls, False) or ok
            self.rules.setdefault(cls, set()).update(other.rules.get(cls, ()))

    def exclude(self, classes: set[EdgeClass], rule: str) -> None:
        """Mark ``classes`` out of the engine's reach by ``rule`` (a reach the per-edge rules over-stated)."""
        for cls in classes:
            self.within[cls] = False
            self.rules.setdefault(cls, set()).add(rule)

    @property
    def engine_classes(self) -> set[EdgeClass]:
        """The classes the engine's own step loop can take (some edge of each is within its reach)."""
        return {c for c, ok in self.within.items() if ok}

    @property
    def out_of_reach(self) -> dict[EdgeClass, set[str]]:
        """The classes no edge of which the engine can take, with the rules that say why."""
        return {c: self.rules[c] for c, ok in self.within.items() if not ok}


def reachable_classes(scenarios: Iterable[Any]) -> Reachable:
    """The edge classes of ``scenarios`` (each a scenario with its policy), with their reach."""
    from flightcheck.spec.model import FlightSpec

    out = Reachable()
    for scn in scenarios:
        out.add(FlightSpec(scn))
    return out


def reachable_one(scenario: Any) -> Reachable:
    """:func:`reachable_classes` of one scenario (a unit of work a cluster can run)."""
    return reachable_classes([scenario])


def gate(reachable: Reachable, driven: set[EdgeClass]) -> list[EdgeClass]:
    """The classes the engine can take and the spec reaches that no driver took, in order."""
    return sorted(reachable.engine_classes - driven)


def gate_summary(reachable: Reachable, driven: set[EdgeClass]) -> tuple[bool, str, dict[str, Any]]:
    """The gate's verdict, a one-line detail naming the first missing classes, and the evidence (every
    missing class with an example edge, the out-of-reach classes by rule)."""
    missing = gate(reachable, driven)
    out = reachable.out_of_reach
    by_rule: dict[str, int] = {}
    for rules in out.values():
        for r in rules:
            by_rule[r] = by_rule.get(r, 0) + 1
    evidence = {"reachable": len(reachable.examples), "engine_reachable": len(reachable.engine_classes),
                "driven": len(driven & reachable.engine_classes), "out_of_reach": len(out),
                # the rules are per edge and over-cautious: the engine does take some classes they rule out
                "driven_though_ruled_out": len(driven & set(out)),
                "out_of_reach_by_rule": dict(sorted(by_rule.items())),
                "missing": [{"class": str(c), "example": reachable.examples[c]} for c in missing]}
    if missing:
        shown = "; ".join(str(c) for c in missing[:3]) + (f"; and {len(missing) - 3} more" if len(missing) > 3 else "")
        return False, (f"{len(missing)} edge class(es) the spec reaches and the engine can take were never driven: "
                       f"{shown} (e.g. {reachable.examples[missing[0]]})"), evidence
    return True, (f"every one of the {len(reachable.engine_classes)} edge classes within the engine's reach was "
                  f"driven ({len(out)} more out of its reach by its step loop)"), evidence
