"""The flight coordinator and the scheduler around it, as a pure transition system.

:class:`FlightSpec` is the seed's final design: flights named by the request that opened them, an index
from input (prompt class) to the open flight, and the set of released-but-not-terminated request IDs.
Every action is a guard and an update written once in :mod:`flightcheck.spec.expr`, so the explorer runs
them on concrete tuples and the z3 checks read them as formulas.

The actions, in their fixed order (the engine's event log speaks the same names):

- ``arrive(i)``: request ``i`` arrives; under single-flight it opens a flight for its input and leads
  it, or follows the open flight for that input (blocked, holding no pages); without coordination it is
  solo and tracked in the released set so that its termination is validated like any other.
- ``admit(i)``: a waiting request is admitted while fewer than ``capacity`` requests run, and looks up
  the prefix cache: a contiguous walk over its shareable pages, taking a reference on each hit.
- ``prefill(i)``: computes the next ``chunk`` prompt units; the last one yields the first token.
  Under incremental publication a request publishes before its next prefill.
- ``publish(i)``: its computed shareable pages become visible (a page already cached is deduplicated).
  Incremental: after every forward pass. On completion: at ``finish``, except that a flight leader under
  the after-prefill release point publishes its prefill pages when its prefill completes.
- ``release(f)``: flight ``f`` ends: it leaves the index, its followers go to admission and, with a still
  live leader, into the released set. Enabled at the release point (after-prefill: the leader's prefill
  done and its shareable pages published) or once the leader has terminated, which is the rule for a
  leader that aborts before publishing: its followers are released and compute what is not cached.
- ``decode(i)``, ``finish(i)``: a decode step; finishing (any time after the first token, as on EOS)
  publishes what remains, drops the request's references and terminates it in the coordinator.
- ``evict(k)``: an unreferenced cached page is evicted, leaf first (never before its chain successor).
- ``abort(i)``: a client cancel in any live phase, the leader's included.
- ``notify(i)``: a termination notification for an ID that was never submitted (``i == N``) or has
  already terminated; the coordinator must reject it and leave the state unchanged.

``admit``, ``prefill``, ``publish``, ``release``, ``decode``, ``finish`` and ``evict`` are the engine's
own steps (weak fairness applies to them); ``arrive``, ``abort`` and ``notify`` are the environment's.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> s = spec.initial()
    >>> [str(a) for a, _ in spec.successors(s)]
    ['arrive(0)', 'arrive(1)']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from flightcheck.spec.expr import And, If, Min, Not, Or, Sum
from flightcheck.spec.scenario import Policy, Scenario
from flightcheck.spec.state import (
    ABORTED, ABSENT, BLOCKED, CLOSED, DECODE, FINISHED, NOT_CACHED, OPEN, PREFILL, READY,
    TERM_BOGUS_ACCEPTED, TERM_LEGIT_REJECTED, WAITING, Edit, Layout, State, View,
)

ACTION_NAMES = ("arrive", "admit", "prefill", "publish", "release", "decode", "finish", "evict", "abort", "notify")
ENGINE_ACTIONS = frozenset({"admit", "prefill", "publish", "release", "decode", "finish", "evict"})
PROGRESS_ACTIONS = ENGINE_ACTIONS - {"evict"}
ENVIRONMENT_ACTIONS = frozenset({"arrive", "abort", "notify"})


_ACTION_RE = re.compile(r"^\s*([a-z]+)\((\d+)\)\s*$")


def parse_action(text: str) -> "Action":
    """``"admit(0)"`` -> ``Action("admit", 0)``, with a clear error for anything else.

    For example::

        >>> parse_action("release(1)")
        Action(name='release', arg=1)
    """
    m = _ACTION_RE.match(text)
    if not m or m.group(1) not in ACTION_NAMES:
        raise ValueError(f"not an action: {text!r}; expected NAME(INDEX) with NAME one of {', '.join(ACTION_NAMES)}")
    return Action(m.group(1), int(m.group(2)))


@dataclass(frozen=True, order=True)
class Action:
    """One action instance: a name from :data:`ACTION_NAMES` and its argument.

    The argument is a request index (a flight is named by its opener's index; ``notify(N)`` is the
    never-submitted ID) or, for ``evict``, a page slot.
    """

    name: str
    arg: int

    def __str__(self) -> str:
        return f"{self.name}({self.arg})"

    @property
    def is_engine(self) -> bool:
        """True for the engine's own steps, to which weak fairness applies."""
        return self.name in ENGINE_ACTIONS


class FlightSpec:
    """The correct design. Variants (see :mod:`flightcheck.spec.variants`) override single methods.

    ``policy`` defaults to the scenario's own.
    """

    variant_name = "correct"

    def __init__(self, scenario: Scenario, policy: Policy | None = None) -> None:
        self.scenario = scenario
        self.policy = policy or scenario.policy
        self.layout = Layout(scenario)
        lay = self.layout
        self.num_requests = lay.num_requests
        n = self.num_requests
        acts: list[Action] = []
        acts += [Action("arrive", i) for i in range(n)]
        acts += [Action("admit", i) for i in range(n)]
        acts += [Action("prefill", i) for i in range(n)]
        acts += [Action("publish", i) for i in range(n)]
        acts += [Action("release", f) for f in range(n)]
        acts += [Action("decode", i) for i in range(n)]
        acts += [Action("finish", i) for i in range(n)]
        if scenario.eviction:
            acts += [Action("evict", k) for k in range(len(lay.page_slots))]
        if scenario.aborts:
            acts += [Action("abort", i) for i in range(n)]
        if scenario.notifications:
            acts += [Action("notify", i) for i in range(n + 1)]
        self.actions: tuple[Action, ...] = tuple(acts)
        self._guards: list[Callable[[View, int], Any]] = [getattr(self, "g_" + a.name) for a in acts]
        self._updates: list[Callable[[View, int], Any]] = [getattr(self, "u_" + a.name) for a in acts]

    # ------------------------------------------------------------------ running the spec
    def initial(self) -> State:
        """The initial state."""
        return self.layout.initial()

    def view(self, state: Any) -> View:
        """Named read access to a state."""
        return self.layout.view(state)

    def guard(self, state: Any, action: Action) -> Any:
        """Whether ``action`` is enabled in ``state`` (a bool, or a z3 Bool for symbolic states)."""
        return getattr(self, "g_" + action.name)(self.view(state), action.arg)

    def apply(self, state: Any, action: Action) -> Any:
        """The successor of ``state`` under ``action`` (whose guard must hold)."""
        return getattr(self, "u_" + action.name)(self.view(state), action.arg)

    def successors(self, state: State) -> list[tuple[Action, State]]:
        """Every enabled action and its successor, in the fixed action order."""
        s = self.view(state)
        out = []
        for a, g, u in zip(self.actions, self._guards, self._updates):
            if g(s, a.arg):
                out.append((a, u(s, a.arg)))
        return out

    def enabled(self, state: State) -> Iterator[Action]:
        """The enabled actions of ``state``, in order."""
        s = self.view(state)
        return (a for a, g in zip(self.actions, self._guards) if g(s, a.arg))

    # ------------------------------------------------------------------ what checkers and pictures ask
    def symmetry(self) -> Any:
        """The symmetry reduction over interchangeable requests (:class:`~flightcheck.spec.symmetry.Symmetry`)."""
        from flightcheck.spec.symmetry import Symmetry
        return Symmetry(self)

    def describe(self, state: Any) -> dict[str, Any]:
        """A readable dictionary of ``state`` (see :func:`flightcheck.spec.describe.describe`)."""
        from flightcheck.spec.describe import describe
        return describe(self, state)

    def label(self, state: Any) -> str:
        """The compact multi-line label of ``state`` drawn in graph nodes."""
        from flightcheck.spec.describe import label
        return label(self, state)

    def changes(self, before: Any, after: Any) -> str:
        """What one step changed, in the design's words."""
        from flightcheck.spec.describe import changes
        return changes(self, before, after)

    def title(self) -> str:
        """Scenario, policy and variant in one line, e.g. ``burst2 · single-flight/... · variant correct``."""
        return f"{self.scenario.name} · {self.policy.label()} · variant {self.variant_name}"

    def state_names(self) -> list[str]:
        """A name for every slot of a state (two models draw on one picture only if these agree)."""
        return self.layout.slot_names()

    # ------------------------------------------------------------------ derived facts
    def cls(self, i: int) -> int:
        """Class slot of request ``i``."""
        return self.layout.req_class[i]

    def shareable(self, i: int) -> int:
        """Shareable pages of request ``i``."""
        return self.layout.num_shareable[self.cls(i)]

    def pages_of(self, i: int) -> range:
        """Page slots of request ``i``'s shareable pages, in order."""
        base = self.layout.page_base[self.cls(i)]
        return range(base, base + self.shareable(i))

    def is_live(self, s: View, i: int) -> Any:
        """Request ``i`` has arrived and not terminated."""
        return And(s.ph[i] >= BLOCKED, s.ph[i] <= DECODE)

    def is_quiescent(self, s: View) -> Any:
        """Nothing in flight: no live request and no engine step pending (a release may trail a finish)."""
        pending = [
            getattr(self, "g_" + a.name)(s, a.arg) for a in self.actions if a.name in PROGRESS_ACTIONS
        ]
        return And(*[Not(self.is_live(s, i)) for i in range(self.num_requests)], Not(Or(*pending)))

    def is_terminated(self, s: View, i: int) -> Any:
        """Request ``i`` finished or was aborted."""
        return s.ph[i] >= FINISHED

    def num_running(self, s: View) -> Any:
        """Requests in prefill or decode."""
        return Sum(If(And(s.ph[j] >= PREFILL, s.ph[j] <= DECODE), 1, 0) for j in range(self.num_requests))

    def is_known(self, s: View, i: int) -> Any:
        """The coordinator knows ID ``i``: a member of an open flight, or released and not terminated."""
        if i >= self.num_requests:
            return False
        return Or(s.mem[i] != 0, s.rel[i] == 1)

    def accepts(self, s: View, i: int) -> Any:
        """The coordinator's verdict on a termination of ID ``i``: accept only known IDs."""
        return self.is_known(s, i)

    def published_upto(self, s: View, i: int) -> Any:
        """How many of ``i``'s shareable pages it has computed (or recovered)."""
        return Min(s.done[i], self.shareable(i))

    def leads_open_flight(self, s: View, i: int) -> Any:
        """``i`` opened a flight that is still open and still counts it as leader."""
        return And(s.fl[i] == OPEN, s.mem[i] == i + 1)

    def at_release_point(self, s: View, f: int) -> Any:
        """The flight's leader reached the release point, or terminated (the abort rule)."""
        terminated = self.is_terminated(s, f)
        if self.policy.release == "after-prefill":
            published = And(s.ph[f] == DECODE, s.pubd[f] >= self.shareable(f))
            return Or(terminated, published)
        return terminated

    # ------------------------------------------------------------------ arrive
    def g_arrive(self, s: View, i: int) -> Any:
        return s.ph[i] == ABSENT

    def u_arrive(self, s: View, i: int) -> Any:
        e = s.edit()
        if not self.policy.single_flight:
            e.ph[i] = WAITING
            e.rel[i] = 1
            return e.build()
        c = self.cls(i)
        follows = s.idx[c] != 0
        e.ph[i] = If(follows, BLOCKED, WAITING)
        e.mem[i] = If(follows, s.idx[c], i + 1)
        e.fl[i] = If(follows, s.fl[i], OPEN)
        e.idx[c] = If(follows, s.idx[c], i + 1)
        return e.build()

    # ------------------------------------------------------------------ admit
    def g_admit(self, s: View, i: int) -> Any:
        return And(s.ph[i] == WAITING, self.num_running(s) < self.policy.capacity)

    def num_hits(self, s: View, i: int) -> Any:
        """Length of the contiguous run of visible pages from page 0 (the prefix lookup)."""
        slots = list(self.pages_of(i))
        return Sum(If(And(*[s.pg[q] != NOT_CACHED for q in slots[: p + 1]]), 1, 0) for p in range(len(slots)))

    def u_admit(self, s: View, i: int) -> Any:
        e = s.edit()
        h = self.num_hits(s, i)
        e.ph[i] = PREFILL
        e.hit[i] = h
        e.done[i] = h
        e.pubd[i] = h
        for p, k in enumerate(self.pages_of(i)):
            e.ref[k] = s.ref[k] + If(p < h, 1, 0)
        self.admit_extra(s, e, i, h)
        return e.build()

    def admit_extra(self, s: View, e: Edit, i: int, h: Any) -> None:
        """Hook for variants that change what admission does to the cache (none in the correct design)."""

    # ------------------------------------------------------------------ prefill
    def g_prefill(self, s: View, i: int) -> Any:
        if self.policy.publication == "incremental":
            return And(s.ph[i] == PREFILL, s.pubd[i] >= self.published_upto(s, i))
        return s.ph[i] == PREFILL

    def u_prefill(self, s: View, i: int) -> Any:
        e = s.edit()
        units = self.scenario.requests[i].num_units
        new_done = s.done[i] + Min(self.policy.chunk, units - s.done[i])
        if self.policy.single_flight:
            # The property speaks of failure-free runs: once a request has aborted, the released
            # followers may legitimately compute what the aborted leader had not published.
            no_failure = And(*[s.ph[j] != ABORTED for j in range(self.num_requests)])
            redundant = Or(*[
                And(s.done[i] <= p, p < new_done, self.page_held_elsewhere(s, i, p, k))
                for p, k in enumerate(self.pages_of(i))
            ])
            e.set("g_dup", If(And(no_failure, redundant), 1, s.g_dup))
        e.done[i] = new_done
        e.ph[i] = If(new_done == units, DECODE, PREFILL)
        self.prefill_extra(s, e, i, new_done)
        return e.build()

    def page_held_elsewhere(self, s: View, i: int, p: int, k: int) -> Any:
        """Page ``p`` of ``i``'s class is cached, or another live request holds a private copy."""
        others = [
            And(self.is_live(s, j), s.pubd[j] <= p, p < s.done[j])
            for j in range(self.num_requests) if j != i and self.cls(j) == self.cls(i)
        ]
        return Or(s.pg[k] == READY, *others)

    def prefill_extra(self, s: View, e: Edit, i: int, new_done: Any) -> None:
        """Hook for variants that change what a computed page does (none in the correct design)."""

    # ------------------------------------------------------------------ publish
    def g_publish(self, s: View, i: int) -> Any:
        running = And(s.ph[i] >= PREFILL, s.ph[i] <= DECODE)
        pending = s.pubd[i] < self.published_upto(s, i)
        if self.policy.publication == "incremental":
            return And(running, pending)
        if self.policy.single_flight and self.policy.release == "after-prefill":
            return And(running, pending, s.ph[i] == DECODE, self.leads_open_flight(s, i))
        return False

    def u_publish(self, s: View, i: int) -> Any:
        e = s.edit()
        self._publish_into(s, e, i)
        return e.build()

    def _publish_into(self, s: View, e: Edit, i: int) -> None:
        upto = self.published_upto(s, i)
        for p, k in enumerate(self.pages_of(i)):
            newly = And(s.pubd[i] <= p, p < upto)
            e.pg[k] = If(newly, READY, s.pg[k])
            e.ref[k] = s.ref[k] + If(newly, 1, 0)
        e.pubd[i] = If(s.pubd[i] < upto, upto, s.pubd[i])

    # ------------------------------------------------------------------ release
    def g_release(self, s: View, f: int) -> Any:
        if not self.policy.single_flight:
            return False
        return And(s.fl[f] == OPEN, self.release_guard(s, f))

    def release_guard(self, s: View, f: int) -> Any:
        """When the engine releases flight ``f`` (variants weaken it)."""
        return self.at_release_point(s, f)

    def u_release(self, s: View, f: int) -> Any:
        e = s.edit()
        e.set("g_early", If(self.at_release_point(s, f), s.g_early, 1))
        e.fl[f] = CLOSED
        e.idx[self.cls(f)] = 0
        for j in range(self.num_requests):
            member = s.mem[j] == f + 1
            e.ph[j] = If(And(member, s.ph[j] == BLOCKED), WAITING, s.ph[j])
            self.release_member(s, e, f, j, member)
        return e.build()

    def release_member(self, s: View, e: Edit, f: int, j: int, member: Any) -> None:
        """What the coordinator keeps of a released member: its ID, in the released set."""
        e.mem[j] = If(member, 0, s.mem[j])
        e.rel[j] = If(member, 1, s.rel[j])

    # ------------------------------------------------------------------ decode, finish
    def g_decode(self, s: View, i: int) -> Any:
        return And(s.ph[i] == DECODE, s.dec[i] < self.scenario.requests[i].num_decode)

    def u_decode(self, s: View, i: int) -> Any:
        e = s.edit()
        e.dec[i] = s.dec[i] + 1
        return e.build()

    def g_finish(self, s: View, i: int) -> Any:
        return s.ph[i] == DECODE

    def u_finish(self, s: View, i: int) -> Any:
        e = s.edit()
        self._publish_into(s, e, i)
        # The references it held before publishing are dropped; freshly published pages stay cached
        # with the count they had (the +1 of publishing and the -1 of dropping cancel).
        for p, k in enumerate(self.pages_of(i)):
            e.ref[k] = e.ref[k] - If(p < s.done[i], 1, 0)
        self._terminate(s, e, i, FINISHED)
        return e.build()

    # ------------------------------------------------------------------ evict
    def g_evict(self, s: View, k: int) -> Any:
        c, p = self.layout.page_slots[k]
        leaf = True
        if p + 1 < self.layout.num_shareable[c]:
            leaf = s.pg[k + 1] == NOT_CACHED
        return And(s.pg[k] == READY, s.ref[k] == 0, leaf)

    def u_evict(self, s: View, k: int) -> Any:
        e = s.edit()
        e.pg[k] = NOT_CACHED
        return e.build()

    # ------------------------------------------------------------------ abort, notify
    def g_abort(self, s: View, i: int) -> Any:
        return self.is_live(s, i)

    def u_abort(self, s: View, i: int) -> Any:
        e = s.edit()
        for p, k in enumerate(self.pages_of(i)):
            e.ref[k] = s.ref[k] - If(p < s.pubd[i], 1, 0)
        self._terminate(s, e, i, ABORTED)
        return e.build()

    def g_notify(self, s: View, i: int) -> Any:
        if i >= self.num_requests:
            return True
        return Not(self.is_live(s, i))

    def u_notify(self, s: View, i: int) -> Any:
        accepted = self.accepts(s, i)
        e = s.edit()
        e.set("g_term", If(And(accepted, s.g_term == 0), TERM_BOGUS_ACCEPTED, s.g_term))
        if i < self.num_requests:
            self.forget(s, e, i, accepted)
        return e.build()

    def _terminate(self, s: View, e: Edit, i: int, phase: int) -> None:
        """A live request ends: the coordinator must accept its termination exactly once."""
        accepted = self.accepts(s, i)
        e.set("g_term", If(And(Not(accepted), s.g_term == 0), TERM_LEGIT_REJECTED, s.g_term))
        e.ph[i] = phase
        # A terminated request's history no longer matters; forgetting it keeps the graph small.
        e.hit[i] = 0
        e.done[i] = 0
        e.pubd[i] = 0
        e.dec[i] = 0
        self.forget(s, e, i, accepted)

    def forget(self, s: View, e: Edit, i: int, accepted: Any) -> None:
        """An accepted termination removes ``i`` from its flight or from the released set."""
        e.mem[i] = If(accepted, 0, s.mem[i])
        e.rel[i] = If(accepted, 0, s.rel[i])
