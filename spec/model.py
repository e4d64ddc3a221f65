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
  solo and tracked in the released set so that its termination is validated like any other.
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
  ``release-all`` leader-loss policy, or when nobody is left to promote.
- ``promote(j)``: under ``promote``, a lost leader's flight is handed to a waiting follower ``j``: the
  flight is renamed after ``j``, which goes to admission with the old leader's pins; the others wait on.
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
from flightcheck.spec.actions import ACTION_NAMES, ENGINE_ACTIONS, Action, parse_action  # noqa: F401
from flightcheck.spec.expr import And, If, Min, Not, Or, Sum
from flightcheck.spec.scenario import Policy, Scenario
from flightcheck.spec.state import (
    ABORTED, ABSENT, BLOCKED, CLOSED, DECODE, FAILED, FINISHED, NOT_CACHED, OPEN, PREFILL, READY,
    TERM_BOGUS_ACCEPTED, TERM_LEGIT_REJECTED, WAITING, Edit, Layout, State, View,
)


class FlightSpec:
    """The correct design. Variants (see :mod:`flightcheck.spec.variants`) override single methods.

    ``policy`` defaults to the scenario's own.
    """

    variant_name = "correct"

    def __init__(self, scenario: Scenario, policy: Policy | None = None) -> None:
        self.scenario = scenario
        self.policy = policy or scenario.policy
        self.layout = Layout(scenario)
        self.num_requests = self.layout.num_requests
        self.actions: tuple[Action, ...] = tuple(self._action_instances())
        self._guards: list[Callable[[View, int], Any]] = [getattr(self, "g_" + a.name) for a in self.actions]
        self._updates: list[Callable[[View, int], Any]] = [getattr(self, "u_" + a.name) for a in self.actions]

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

    def is_terminated(self, s: View, i: int) -> Any:
        """Request ``i`` finished, was aborted or failed."""
        return s.ph[i] >= FINISHED

    def is_lost(self, s: View, i: int) -> Any:
        """Request ``i`` ended without finishing (aborted or failed)."""
        return s.ph[i] >= ABORTED

    def is_quiescent(self, s: View) -> Any:
        """Nothing in flight: no live request and no engine step pending (a release may trail a finish)."""
        idle = And(*[Not(self.is_live(s, i)) for i in range(self.num_requests)])
        if idle is False:
            return False  # the explorer's common case, decided without evaluating every guard
        pending = [getattr(self, "g_" + a.name)(s, a.arg) for a in self.actions if self.is_progress(a)]
        return And(idle, Not(Or(*pending)))

    def num_running(self, s: View) -> Any:
        """Requests in prefill or decode."""
        return Sum(If(pool.is_running(s, j), 1, 0) for j in range(self.num_requests))

    def is_known(self, s: View, i: int) -> Any:
        """The coordinator knows ID ``i``: a member of an open flight, or released and not terminated."""
        if i >= self.num_requests:
            return False
        return Or(s.mem[i] != 0, s.rel[i] == 1)

    def accepts(self, s: View, i: int) -> Any:
        """The coordinator's verdict on a termination of ID ``i``: accept only known IDs."""
        return self.is_known(s, i)

    def published_upto(self, s: View, i: int) -> Any:
        """How many of ``i``'s shareable pages it has computed (or recovered): what it can publish."""
        if not self.policy.prefix_caching:
            return 0
        return Min(s.done[i], self.shareable(i))

    def leads_open_flight(self, s: View, i: int) -> Any:
        """``i`` leads an open flight and is still its live leader."""
        return And(s.fl[i] == OPEN, s.mem[i] == i + 1)

    def is_orphaned(self, s: View, f: int) -> Any:
        """Flight ``f`` is open but its leader has terminated: its release or hand-over is due now."""
        return And(s.fl[f] == OPEN, self.is_terminated(s, f))

    def calm(self, s: View) -> Any:
        """No flight waits for its release or hand-over (the engine does that in the leader's own call)."""
        if not self.policy.single_flight:
            return True
        known = s.__dict__.get("_calm")  # every guard asks; a view answers once
        if known is None:
            known = s.__dict__["_calm"] = Not(Or(*[self.is_orphaned(s, f) for f in range(self.num_requests)]))
        return known

    def holds_pages(self, s: View, i: int) -> Any:
        """``i`` holds references on its first ``pubd`` pages: it is live, or a terminated leader whose
        flight is still pending."""
        return Or(self.is_live(s, i), And(self.is_terminated(s, i), s.fl[i] == OPEN))

    def at_release_point(self, s: View, f: int) -> Any:
        """The flight's leader reached the release point, or terminated."""
        terminated = self.is_terminated(s, f)
        if self.policy.release == "after-prefill":
            published = And(s.ph[f] == DECODE, s.pubd[f] >= self.shareable(f))
            return Or(terminated, published)
        return terminated

    def waiting_followers(self, s: View, f: int) -> list[Any]:
        """For each request that could be promoted in flight ``f``: it is a blocked member of it."""
        return [And(s.mem[j] == f + 1, s.ph[j] == BLOCKED) for j in range(self.num_requests)
                if j != f and self.cls(j) == self.cls(f)]

    def releases_everyone(self, s: View, f: int) -> Any:
        """A terminated leader's flight is released (not handed on): it finished, or the policy is
        ``release-all``, or no follower is left to promote."""
        if self.policy.leader_loss != "promote":
            return True
        return Or(s.ph[f] == FINISHED, Not(Or(*self.waiting_followers(s, f))))

    def duplicates_excused(self, s: View) -> Any:
        """Runs in which a duplicated prefill is by design: a follower's wait expired, or (release-all) a
        request was lost, so released followers compute what their lost leader had not published."""
        n = self.num_requests
        lost = [self.is_lost(s, j) for j in range(n)] if self.policy.leader_loss == "release-all" else []
        return Or(*[s.exp[j] == 1 for j in range(n)], *lost)

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
        e.ph[i] = If(follows, BLOCKED, WAITING)
        e.mem[i] = If(follows, s.idx[c], i + 1)
        e.fl[i] = If(follows, s.fl[i], OPEN)
        e.idx[c] = If(follows, s.idx[c], i + 1)
        return e.build()

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
            redundant = Or(*[
                And(s.done[i] <= p, p < new_done, self.page_held_elsewhere(s, i, p, k))
                for p, k in enumerate(self.pages_of(i))
            ])
            excused = Or(s.exp[i] == 1, self.duplicates_excused(s))
            e.set("g_dup", If(And(redundant, Not(excused)), 1, s.g_dup))
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

    # ------------------------------------------------------------------ release, promote
    def g_release(self, s: View, f: int) -> Any:
        if not self.policy.single_flight:
            return False
        return And(s.fl[f] == OPEN, self.release_guard(s, f))

    def release_guard(self, s: View, f: int) -> Any:
        """When the engine releases flight ``f`` (variants weaken it): at the release point, at once
        after the leader's termination (unless the flight is handed on), never while another is pending."""
        pending = If(self.is_terminated(s, f), self.releases_everyone(s, f), self.calm(s))
        return And(self.at_release_point(s, f), pending)

    def pins_at_release(self, s: View, f: int) -> Any:
        """How many pages each released follower pins: all its leader holds."""
        return s.pubd[f]

    def u_release(self, s: View, f: int) -> Any:
        e = s.edit()
        e.set("g_early", If(self.at_release_point(s, f), s.g_early, 1))
        e.fl[f] = CLOSED
        e.idx[self.cls(f)] = 0
        pins = self.pins_at_release(s, f)
        lost = self.is_terminated(s, f)
        released = Sum(And(s.mem[j] == f + 1, s.ph[j] == BLOCKED) for j in range(self.num_requests) if j != f)
        for j in range(self.num_requests):
            member = s.mem[j] == f + 1
            blocked = And(member, s.ph[j] == BLOCKED)
            e.ph[j] = If(blocked, WAITING, s.ph[j])
            if j != f:
                e.pubd[j] = If(blocked, pins, s.pubd[j])
            self.release_member(s, e, f, j, member)
        for p, k in enumerate(self.pages_of(f)):
            e.ref[k] = s.ref[k] + If(p < pins, released, 0) - If(And(lost, p < s.pubd[f]), 1, 0)
        e.pubd[f] = If(lost, 0, s.pubd[f])
        return e.build()

    def release_member(self, s: View, e: Edit, f: int, j: int, member: Any) -> None:
        """What the coordinator keeps of a released member: its ID, in the released set."""
        e.mem[j] = If(member, 0, s.mem[j])
        e.rel[j] = If(member, 1, s.rel[j])

    def g_promote(self, s: View, j: int) -> Any:
        if not (self.policy.single_flight and self.policy.leader_loss == "promote"):
            return False
        lost = [And(s.mem[j] == f + 1, self.is_orphaned(s, f), s.ph[f] != FINISHED)
                for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j)]
        return And(s.ph[j] == BLOCKED, Or(*lost))

    def u_promote(self, s: View, j: int) -> Any:
        e = s.edit()
        flights = [f for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j)]
        held = Sum(If(s.mem[j] == f + 1, s.pubd[f], 0) for f in flights)
        for f in flights:
            e.fl[f] = If(s.mem[j] == f + 1, CLOSED, s.fl[f])
            e.pubd[f] = If(s.mem[j] == f + 1, 0, s.pubd[f])
        for m in range(self.num_requests):
            if m != j:
                e.mem[m] = If(And(s.mem[m] != 0, s.mem[m] == s.mem[j]), j + 1, s.mem[m])
        e.mem[j] = j + 1
        e.fl[j] = OPEN
        e.idx[self.cls(j)] = j + 1
        e.ph[j] = WAITING
        e.pubd[j] = held  # the old leader's references are the new leader's pins: no count changes
        return e.build()

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
        c, p = self.layout.page_slots[k]
        leaf = True
        if p + 1 < self.layout.num_shareable[c]:
            leaf = s.pg[k + 1] == NOT_CACHED
        reason = [pool.under_pressure(self, s)] if self.scenario.has_pool else []
        if self.scenario.eviction:
            reason = [True]
        return And(s.pg[k] == READY, s.ref[k] == 0, leaf, self.calm(s), Or(*reason))

    def u_evict(self, s: View, k: int) -> Any:
        e = s.edit()
        e.pg[k] = NOT_CACHED
        return e.build()

    # ------------------------------------------------------------------ abort, fail, notify, expire
    def g_abort(self, s: View, i: int) -> Any:
        return And(self.is_live(s, i), self.calm(s))

    def u_abort(self, s: View, i: int) -> Any:
        return self._lose(s, i, ABORTED)

    def g_fail(self, s: View, i: int) -> Any:
        return And(pool.is_running(s, i), self.calm(s))

    def u_fail(self, s: View, i: int) -> Any:
        return self._lose(s, i, FAILED)

    def _lose(self, s: View, i: int, phase: int) -> Any:
        """A live request ends without finishing: its private pages are freed, its references dropped
        (a flight leader's once its flight is released or handed on)."""
        e = s.edit()
        leading = self.leads_open_flight(s, i)
        for p, k in enumerate(self.pages_of(i)):
            e.ref[k] = s.ref[k] - If(And(Not(leading), p < s.pubd[i]), 1, 0)
        self._terminate(s, e, i, phase, leading)
        return e.build()

    def g_notify(self, s: View, i: int) -> Any:
        if i >= self.num_requests:
            return self.calm(s)
        return And(Not(self.is_live(s, i)), self.calm(s))

    def u_notify(self, s: View, i: int) -> Any:
        accepted = self.accepts(s, i)
        e = s.edit()
        e.set("g_term", If(And(accepted, s.g_term == 0), TERM_BOGUS_ACCEPTED, s.g_term))
        if i < self.num_requests:
            self.forget(s, e, i, accepted)
        return e.build()

    def g_expire(self, s: View, j: int) -> Any:
        return And(s.ph[j] == BLOCKED, self.calm(s))

    def u_expire(self, s: View, j: int) -> Any:
        e = s.edit()
        held = Sum(If(s.mem[j] == f + 1, s.pubd[f], 0)
                   for f in range(self.num_requests) if f != j and self.cls(f) == self.cls(j))
        e.ph[j] = WAITING
        e.pubd[j] = held
        for p, k in enumerate(self.pages_of(j)):
            e.ref[k] = s.ref[k] + If(p < held, 1, 0)
        e.exp[j] = 1
        self.expire_member(s, e, j)
        return e.build()

    def expire_member(self, s: View, e: Edit, j: int) -> None:
        """An expired follower leaves its flight for the released set, so its termination is still known."""
        e.mem[j] = 0
        e.rel[j] = 1

    def _terminate(self, s: View, e: Edit, i: int, phase: int, keep_pages: Any = False) -> None:
        """A live request ends: the coordinator must accept its termination exactly once."""
        accepted = self.accepts(s, i)
        e.set("g_term", If(And(Not(accepted), s.g_term == 0), TERM_LEGIT_REJECTED, s.g_term))
        e.ph[i] = phase
        # A terminated request's history no longer matters (forgetting it keeps the graph small), but a
        # flight leader's references stay until its flight is released or handed on.
        e.hit[i] = 0
        e.done[i] = 0
        e.pubd[i] = If(keep_pages, e.pubd[i], 0)
        e.dec[i] = 0
        self.forget(s, e, i, accepted)

    def forget(self, s: View, e: Edit, i: int, accepted: Any) -> None:
        """An accepted termination removes ``i`` from its flight or from the released set."""
        e.mem[i] = If(accepted, 0, s.mem[i])
        e.rel[i] = If(accepted, 0, s.rel[i])
