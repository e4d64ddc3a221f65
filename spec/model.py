"""The flight coordinator and the scheduler around it, as a pure transition system.

:class:`FlightSpec` is the design: flights named by their current leader, an index from input (prompt
class) to the open flight, and the set of released-but-not-terminated request IDs; released followers
pin their leader's pages; a lost leader's flight is released or handed on; memory is the page pool of
:mod:`flightcheck.spec.pool`. Every action is a guard and an update written once in
:mod:`flightcheck.spec.expr`, so the explorer runs them on concrete tuples and the z3 checks read them
as formulas.

The actions, in their fixed order (the engine's event log speaks the same names):

- ``arrive(i)``: request ``i`` arrives; under single-flight it opens a flight for its input and leads
  it, or follows the open flight for that input (blocked, holding no pages); without coordination it is
  solo and tracked in the released set so that its termination is validated like any other. Under
  prefix coordination a request that opens a flight first waits *via* another prompt's open flight
  that shares at least ``min_shared_pages`` pages with its prompt (the most shared; the earliest
  leader on a tie): blocked, until that flight's release pins it the shared pages.
- ``admit(i)``: a waiting request is admitted while fewer than ``capacity`` requests run and (with a
  pool) everything it may need can be reserved, and looks up the prefix cache: a contiguous walk over
  its shareable pages; its pins become hits and every further hit takes a reference.
- ``prefill(i)``: computes the next ``chunk`` prompt units (allocating a page for each); the last one
  yields the first token. Under incremental publication a request publishes before its next prefill.
- ``publish(i)``: its computed shareable pages become visible (a page already cached is deduplicated).
  Incremental: after every forward pass. On completion: at ``finish``, except that a flight leader under
  the after-prefill release point publishes its prefill pages when its prefill completes.
- ``release(f)``: flight ``f`` ends: it leaves the index, its followers go to admission holding
  references on the pages the leader holds (*pinned*, so nothing can evict them before they are
  admitted) and into the released set, as does a still live leader. Enabled at the release point
  (after-prefill: the leader's prefill done and its shareable pages published) or once the leader has
  terminated: a finished leader's followers are released; a lost one's (aborted, failed) too under the
  ``release-all`` leader-loss policy, or when nobody is left to promote. Such a lost leader's flight
  under ``promote`` hands the requests waiting via it on: the one sharing the most pages with it (the
  earliest arrived on a tie) inherits the lost leader's own wait (or goes to admission), and the others
  wait via that one's flight.
- ``promote(j)``: under ``promote``, a lost leader's flight is handed to a waiting follower ``j``: the
  flight is renamed after ``j``, which goes to admission with the old leader's pins (or, if the old
  leader was waiting via another flight, takes over that wait); the others wait on.
- ``decode(i)``, ``finish(i)``: a decode step (allocating a page when its position starts one);
  finishing (any time after the first token, as on EOS) publishes what remains, drops the request's
  references and terminates it in the coordinator. A flight leader keeps its references until its
  flight is released or handed on.
- ``evict(k)``: an unreferenced cached page is evicted, leaf first (never before its chain successor):
  when an allocation finds too few free pages (with a pool), or at any time (background eviction).
- ``abort(i)``: a client cancel in any live phase, the leader's included; ``fail(i)``: a running
  request's forward pass fails; both hand a leader's flight to the leader-loss policy.
- ``notify(i)``: a termination notification for an ID that was never submitted (``i == N``) or has
  already terminated; the coordinator must reject it and leave the state unchanged.
- ``expire(j)``: a blocked follower's wait runs out: it leaves its flight, pins what its leader holds and
  goes to admission to compute the rest itself (it stays in the released set until it terminates).

When a flight leader terminates, the engine releases or hands on its flight in the same call, so
nothing else happens in between: every other action waits while such a flight is pending.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> s = spec.initial()
    >>> [str(a) for a, _ in spec.successors(s)]
    ['arrive(0)', 'arrive(1)']
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from flightcheck.spec import pool
from flightcheck.spec.derived import DerivedFacts
from flightcheck.spec.endings import FlightEndings
from flightcheck.spec.actions import ACTION_NAMES, ENGINE_ACTIONS, Action, parse_action  # noqa: F401
from flightcheck.spec.expr import And, If, Min, Not, Or, Sum
from flightcheck.spec.scenario import Policy, Scenario
from flightcheck.spec.state import (
    ABSENT, BLOCKED, DECODE, FINISHED, NOT_CACHED, OPEN, PREFILL, READY, WAITING, Edit, Layout, State, View,
)


class FlightSpec(FlightEndings, DerivedFacts):
    """The correct design. Variants (see :mod:`flightcheck.spec.variants`) override single methods.

    ``policy`` defaults to the scenario's own.
    """

    variant_name = "correct"

    def __init__(self, scenario: Scenario, policy: Policy | None = None) -> None:
        self.scenario = scenario
        self.policy = policy or scenario.policy
        self.layout = Layout(scenario, self.policy)
        self.num_requests = self.layout.num_requests
        self.actions: tuple[Action, ...] = tuple(self._action_instances())
        self._guards: list[Callable[[View, int], Any]] = [getattr(self, "g_" + a.name) for a in self.actions]
        self._updates: list[Callable[[View, int], Any]] = [getattr(self, "u_" + a.name) for a in self.actions]
        self._holders: dict[tuple[int, int, int], tuple[tuple[int, ...], bool]] = {}

    def _action_instances(self) -> Iterator[Action]:
        scn, pol, n = self.scenario, self.policy, self.num_requests
        present = {
            "evict": pol.prefix_caching and (scn.eviction or scn.has_pool),
            "abort": scn.aborts, "notify": scn.notifications, "fail": scn.failures,
            "expire": scn.expiry and pol.single_flight,
            "promote": pol.single_flight and pol.leader_loss == "promote" and (scn.aborts or scn.failures),
        }
        for name in ACTION_NAMES:
            if not present.get(name, True):
                continue
            if name == "evict":
                yield from (Action(name, k) for k in range(len(self.layout.page_slots)))
            else:
                yield from (Action(name, i) for i in range(n + (1 if name == "notify" else 0)))

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

    def is_engine(self, action: Action) -> bool:
        """The engine's own steps, to which weak fairness applies. Eviction is one only under the
        pool's pressure; background eviction is the environment's."""
        if action.name == "evict":
            return self.scenario.has_pool
        return action.name in ENGINE_ACTIONS

    def is_progress(self, action: Action) -> bool:
        """Steps that move a live request on (what ``no_deadlock`` asks for): the engine's own."""
        return self.is_engine(action)

    # ------------------------------------------------------------------ arrive
    def g_arrive(self, s: View, i: int) -> Any:
        return And(s.ph[i] == ABSENT, self.calm(s))

    def u_arrive(self, s: View, i: int) -> Any:
        e = s.edit()
        if not self.policy.single_flight:
            e.ph[i] = WAITING
            e.rel[i] = 1
            return e.build()
        c = self.cls(i)
        follows = s.idx[c] != 0
        via = self.via_choice(s, i)
        e.ph[i] = If(follows, BLOCKED, If(via != 0, BLOCKED, WAITING))
        e.mem[i] = If(follows, s.idx[c], i + 1)
        e.fl[i] = If(follows, s.fl[i], OPEN)
        e.idx[c] = If(follows, s.idx[c], i + 1)
        if self.layout.has_via_ties:
            e.seq[i] = 1 + Sum(s.ph[j] != ABSENT for j in range(self.num_requests))
        if self.policy.prefix_flights:
            e.via[i] = If(follows, 0, via)
        return e.build()

    def via_choice(self, s: View, i: int) -> Any:
        """Under prefix coordination, the open flight (``f + 1``, or 0 for none) that a request opening a
        flight of its own waits via: the one whose prompt shares the most pages with ``i``'s, the leader that
        arrived first on a tie (as the engine does)."""
        ranked = [(-self.num_shared(i, f), f) for f in range(self.num_requests) if self.can_wait_via(i, f)]
        return self.first_of(s, ranked, lambda f: s.fl[f] == OPEN)

    # ------------------------------------------------------------------ admit
    def g_admit(self, s: View, i: int) -> Any:
        return And(s.ph[i] == WAITING, self.num_running(s) < self.policy.capacity, self.calm(s), self.fits(s, i))

    def num_hits(self, s: View, i: int) -> Any:
        """Length of the contiguous run of visible pages from page 0 (the prefix lookup)."""
        if not self.policy.prefix_caching:
            return 0
        slots = list(self.pages_of(i))
        return Sum(If(And(*[s.pg[q] != NOT_CACHED for q in slots[: p + 1]]), 1, 0) for p in range(len(slots)))

    def fits(self, s: View, i: int) -> Any:
        """With a pool: everything ``i`` may still need can be reserved against the free and evictable
        pages, its own unreferenced hits (which it is about to take) and the others' reservations aside."""
        if not self.scenario.has_pool:
            return True
        h = self.num_hits(s, i)
        unreferenced = Sum(And(s.pubd[i] <= p, p < h, s.ref[k] == 0) for p, k in enumerate(self.pages_of(i)))
        room = pool.free_pages(self, s) + pool.num_evictable(self, s) - unreferenced - pool.total_reserved(self, s)
        return room >= self.scenario.requests[i].num_lifetime_pages - h

    def u_admit(self, s: View, i: int) -> Any:
        e = s.edit()
        h = self.num_hits(s, i)
        e.ph[i] = PREFILL
        e.hit[i] = h
        e.done[i] = h
        e.pubd[i] = h
        for p, k in enumerate(self.pages_of(i)):
            e.ref[k] = s.ref[k] + If(And(s.pubd[i] <= p, p < h), 1, 0)
        self.admit_extra(s, e, i, h)
        return e.build()

    def admit_extra(self, s: View, e: Edit, i: int, h: Any) -> None:
        """Hook for variants that change what admission does to the cache (none in the correct design)."""

    # ------------------------------------------------------------------ prefill
    def g_prefill(self, s: View, i: int) -> Any:
        conds = [s.ph[i] == PREFILL, self.calm(s)]
        if self.policy.publication == "incremental":
            conds.append(s.pubd[i] >= self.published_upto(s, i))
        if self.scenario.has_pool:
            conds.append(pool.prefill_need(self, s, i) <= pool.free_pages(self, s))
        return And(*conds)

    def u_prefill(self, s: View, i: int) -> Any:
        e = s.edit()
        units = self.scenario.requests[i].num_units
        new_done = s.done[i] + Min(self.policy.chunk, units - s.done[i])
        if self.policy.single_flight:
            duplicated = Or(*[
                And(s.done[i] <= p, p < new_done, self.page_held_elsewhere(s, i, p, k),
                    Not(self.duplicate_excused(s, i, p, k)))
                for p, k in enumerate(self.pages_of(i))
            ])
            e.set("g_dup", If(duplicated, 1, s.g_dup))
        e.done[i] = new_done
        e.ph[i] = If(new_done == units, DECODE, PREFILL)
        self.prefill_extra(s, e, i, new_done)
        return e.build()

    def duplicate_excused(self, s: View, i: int, p: int, k: int) -> Any:
        """``i`` computing page ``p`` (slot ``k``) of its prompt while a copy exists is by design: ``i`` or
        a request coordinated with ``i`` on that page (its own prompt, or one sharing the page under prefix
        coordination) excuses it (:meth:`excuses`). A wait expired or a leader lost elsewhere excuses
        nothing here: the scope of ``single_prefill``'s exception is the requests and pages concerned."""
        peers, _ = self._copy_holders(i, p, k)
        return Or(s.exp[i] == 1, *[self.excuses(s, j) for j in peers])

    def page_held_elsewhere(self, s: View, i: int, p: int, k: int) -> Any:
        """Page ``p`` of ``i``'s prompt is cached, or another live request that ``i`` is coordinated with
        holds a private copy: one of the same prompt, or (prefix coordination) one whose prompt shares at
        least ``min_shared_pages`` pages with ``i``'s, this one among them. A copy cached by a prompt that
        ``i`` is not coordinated with (a sibling under exact single-flight) is no duplicate of the design's."""
        peers, outsiders = self._copy_holders(i, p, k)
        others = [And(self.is_live(s, j), s.pubd[j] <= p, p < s.done[j]) for j in peers]
        cached = [] if outsiders else [s.pg[k] == READY]
        return Or(*cached, *others)

    def _copy_holders(self, i: int, p: int, k: int) -> tuple[tuple[int, ...], bool]:
        """What :meth:`page_held_elsewhere` reads of the scenario alone, worked out once per ``(i, p, k)``
        (it runs on every prefill step): the requests coordinated with ``i`` on page ``p``, and whether
        a prompt ``i`` is not coordinated with shares page slot ``k``."""
        found = self._holders.get((i, p, k))
        if found is None:
            peers = tuple(j for j in range(self.num_requests) if j != i and self.coordinated(i, j, p))
            outsiders = any(k in self.layout.class_pages[d] and not self.coordinated_class(i, d, p)
                            for d in range(len(self.layout.classes)))
            found = self._holders[(i, p, k)] = (peers, outsiders)
        return found

    def coordinated_class(self, i: int, d: int, p: int) -> bool:
        """Requests of class slot ``d`` and ``i`` must not both compute ``i``'s page ``p``."""
        c = self.cls(i)
        if d == c:
            return True
        shared = self.layout.shared[c][d]
        return self.policy.prefix_flights and shared >= self.policy.min_shared_pages and p < shared

    def coordinated(self, i: int, j: int, p: int) -> bool:
        """Requests ``i`` and ``j`` must not both compute ``i``'s page ``p`` (see :meth:`coordinated_class`)."""
        return self.coordinated_class(i, self.cls(j), p)

    def prefill_extra(self, s: View, e: Edit, i: int, new_done: Any) -> None:
        """Hook for variants that change what a computed page does (none in the correct design)."""

    # ------------------------------------------------------------------ publish
    def g_publish(self, s: View, i: int) -> Any:
        if not self.policy.prefix_caching:
            return False
        running = pool.is_running(s, i)
        pending = s.pubd[i] < self.published_upto(s, i)
        if self.policy.publication == "incremental":
            return And(running, pending, self.calm(s))
        if self.policy.single_flight and self.policy.release == "after-prefill":
            return And(running, pending, s.ph[i] == DECODE, self.leads_open_flight(s, i), self.calm(s))
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

    # ------------------------------------------------------------------ decode, finish
    def g_decode(self, s: View, i: int) -> Any:
        conds = [s.ph[i] == DECODE, s.dec[i] < self.scenario.requests[i].num_decode, self.calm(s)]
        if self.scenario.has_pool:
            conds.append(pool.decode_need(self, s, i) <= pool.free_pages(self, s))
        return And(*conds)

    def u_decode(self, s: View, i: int) -> Any:
        e = s.edit()
        e.dec[i] = s.dec[i] + 1
        return e.build()

    def g_finish(self, s: View, i: int) -> Any:
        return And(s.ph[i] == DECODE, self.calm(s))

    def u_finish(self, s: View, i: int) -> Any:
        e = s.edit()
        leading = self.leads_open_flight(s, i)
        self._publish_into(s, e, i)
        # The references it held (now every published page) are dropped, a flight leader's only once
        # its flight is released or handed on; freshly published pages stay cached with the count they
        # had (the +1 of publishing and the -1 of dropping cancel).
        upto = self.published_upto(s, i)
        for p, k in enumerate(self.pages_of(i)):
            e.ref[k] = e.ref[k] - If(And(Not(leading), p < upto), 1, 0)
        self._terminate(s, e, i, FINISHED, leading)
        return e.build()

    # ------------------------------------------------------------------ evict
    def g_evict(self, s: View, k: int) -> Any:
        leaf = And(*[s.pg[child] == NOT_CACHED for child in self.layout.page_children[k]])
        reason = [pool.under_pressure(self, s)] if self.scenario.has_pool else []
        if self.scenario.eviction:
            reason = [True]
        return And(s.pg[k] == READY, s.ref[k] == 0, leaf, self.calm(s), Or(*reason))

    def u_evict(self, s: View, k: int) -> Any:
        e = s.edit()
        e.pg[k] = NOT_CACHED
        return e.build()
