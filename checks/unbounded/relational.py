"""The flight coordinator as a relational transition system, transcribed from the finite spec.

:class:`RelModel` has a guard ``g_<action>`` and an update ``u_<action>`` for every action of
:mod:`flightcheck.spec.model` and :mod:`flightcheck.spec.endings`, each parameterised by its argument (a
request, which also names a flight, or a page) and written with :mod:`flightcheck.spec.expr` over a
:mod:`~flightcheck.checks.unbounded.signature`, so the same code runs on finite tables (the drift check
against the explorer's graph) and builds z3 formulas over unbounded sorts (the proofs). The state's
components are listed in :mod:`flightcheck.checks.unbounded.state`.

What differs from the finite spec, and why (the drift check holds each reading equal on every reachable
state of the modelled default scenarios):

- a count of pages (``pubd``, ``done``) is the set of pages below it on the request's path (``hold``,
  ``comp``); ``published_upto`` is ``comp`` (``done`` counts the tail unit too, which the phase says);
- ``ref[k] == 0`` reads ``no request holds k``; ``num_running < capacity`` reads the ``running`` counter;
- eviction's leaf test asks that every later page of the path is uncached (the spec: the next one; the
  same on a prefix-closed cache);
- ``decode`` changes only ``dec``, which is not kept: it is a stutter step and has no transition here;
- prefix coordination's choice of the flight to wait via (most shared pages, earliest leader) reads the
  signature's ``prefer`` order, and "shares at least ``min_shared_pages`` pages" its ``shares``
  relation: the proofs hold for every such order and threshold;
- one prefill step computes one page (``chunk`` 1), and the page pool is not modelled
  (:func:`flightcheck.checks.unbounded.config.unmodelled`).

Variants override single methods, as in :mod:`flightcheck.spec.variants` (see
:mod:`flightcheck.checks.unbounded.variants`).

For example::

    >>> from flightcheck.checks.unbounded.config import Config
    >>> from flightcheck.checks.unbounded.signature import Finite
    >>> from flightcheck.checks.unbounded.state import initial_state
    >>> m = RelModel(Finite(2, (0, 0), (0, 0), 2), Config())
    >>> s = m.apply(initial_state(m.sig), "arrive", 0)
    >>> s.ph(0), s.fl(0), m.guard(s, "arrive", 1), m.apply(s, "arrive", 1).mem(1, 0)
    (2, True, True, True)
"""

from __future__ import annotations

from typing import Any

import z3

from flightcheck.checks.unbounded.config import Config
from flightcheck.checks.unbounded.state import RelState
from flightcheck.spec.expr import And, If, Implies, Not, Or
from flightcheck.spec.state import (
    ABORTED, ABSENT, BLOCKED, DECODE, FAILED, FINISHED, NOT_CACHED, PREFILL, READY, TERM_BOGUS_ACCEPTED,
    TERM_LEGIT_REJECTED, WAITING,
)

# Every action and the sort of its argument (None: no argument). ``notify_unknown`` is the spec's
# ``notify(N)``: a notice for an ID that was never submitted. ``decode`` is a stutter step (see above).
ACTIONS: tuple[tuple[str, str | None], ...] = (
    ("arrive", "R"), ("admit", "R"), ("prefill", "R"), ("publish", "R"), ("release", "R"), ("promote", "R"),
    ("finish", "R"), ("evict", "P"), ("abort", "R"), ("notify", "R"), ("notify_unknown", None),
    ("expire", "R"), ("fail", "R"),
)
_ARG_SORT = dict(ACTIONS)
ENGINE = frozenset({"admit", "prefill", "publish", "release", "promote", "finish"})


class RelModel:
    """The correct design over a signature ``sig`` under a :class:`Config`."""

    variant_name = "correct"

    def __init__(self, sig: Any, config: Config) -> None:
        self.sig = sig
        self.config = config
        c = config
        present = {
            "evict": c.prefix_caching and c.eviction, "abort": c.aborts, "fail": c.failures,
            "notify": c.notifications, "notify_unknown": c.notifications,
            "expire": c.expiry and c.single_flight,
            "promote": c.single_flight and c.leader_loss == "promote" and (c.aborts or c.failures),
            "release": c.single_flight,
            # publish is never enabled under on-completion publication unless a leader publishes at its release point
            "publish": c.prefix_caching and (c.publication == "incremental" or (c.single_flight and c.release == "after-prefill")),
        }
        self.actions = tuple((n, a) for n, a in ACTIONS if present.get(n, True))
        self._picks: dict[tuple[str, int, int], Any] = {}  # the symbolic choices (see _choice)

    # ------------------------------------------------------------------ running the model
    def guard(self, s: RelState, name: str, arg: Any = None) -> Any:
        """Whether action ``name(arg)`` is enabled in ``s``."""
        fn = getattr(self, "g_" + name)
        return fn(s) if _ARG_SORT[name] is None else fn(s, arg)

    def apply(self, s: RelState, name: str, arg: Any = None) -> RelState:
        """The successor of ``s`` under ``name(arg)`` (whose guard must hold)."""
        fn = getattr(self, "u_" + name)
        return fn(s) if _ARG_SORT[name] is None else fn(s, arg)

    # ------------------------------------------------------------------ derived facts
    def live(self, s: RelState, x: Any) -> Any:
        """``x`` has arrived and not terminated."""
        return And(s.ph(x) >= BLOCKED, s.ph(x) <= DECODE)

    def terminated(self, s: RelState, x: Any) -> Any:
        """``x`` finished, was aborted or failed."""
        return s.ph(x) >= FINISHED

    def lost(self, s: RelState, x: Any) -> Any:
        """``x`` ended without finishing."""
        return s.ph(x) >= ABORTED

    def is_running(self, s: RelState, x: Any) -> Any:
        """``x`` is in prefill or decode."""
        return And(s.ph(x) >= PREFILL, s.ph(x) <= DECODE)

    def in_flight(self, s: RelState, x: Any) -> Any:
        """``x`` is a member of some flight (the spec's ``mem[x] != 0``)."""
        return self.sig.exists("R", lambda f: s.mem(x, f))

    def is_known(self, s: RelState, x: Any) -> Any:
        """The coordinator knows ``x``: a member of a flight, or released."""
        return Or(self.in_flight(s, x), s.rel(x))

    def accepts(self, s: RelState, x: Any) -> Any:
        """The verdict on a termination of ``x``: accept only known IDs."""
        return self.is_known(s, x)

    def accepts_unknown(self, s: RelState) -> Any:
        """The verdict on a termination of an ID never submitted: reject."""
        return False

    def leads_open_flight(self, s: RelState, x: Any) -> Any:
        """``x`` leads an open flight and is still its live leader."""
        return And(s.fl(x), s.mem(x, x))

    def orphaned(self, s: RelState, f: Any) -> Any:
        """Flight ``f`` is open but its leader has terminated."""
        return And(s.fl(f), self.terminated(s, f))

    def calm(self, s: RelState) -> Any:
        """No flight waits for its release or hand-over."""
        if not self.config.single_flight:
            return True
        return self.sig.forall("R", lambda f: Not(self.orphaned(s, f)))

    def on_path(self, x: Any, k: Any) -> Any:
        """Page ``k`` is one of ``x``'s shareable pages."""
        return self.sig.onp(self.sig.cls(x), k)

    def can_wait_via(self, j: Any, f: Any) -> Any:
        """Under prefix coordination, ``j`` could wait via a flight led by ``f``: another prompt sharing at
        least ``min_shared_pages`` pages with ``j``'s (static)."""
        if not self.config.prefix_flights:
            return False
        cj, cf = self.sig.cls(j), self.sig.cls(f)
        return And(cf != cj, self.sig.shares(cj, cf))

    def coordinated_class(self, c: Any, d: Any) -> Any:
        """Requests of classes ``c`` and ``d`` must not both compute a page on both their paths."""
        if not self.config.prefix_flights:
            return c == d
        return Or(c == d, self.sig.shares(c, d))

    def waits_via(self, s: RelState, j: Any) -> Any:
        """``j`` waits via some other prompt's flight."""
        if not self.config.prefix_flights:
            return False
        return self.sig.exists("R", lambda f: s.via(j, f))

    def all_computed(self, s: RelState, x: Any) -> Any:
        """``x`` has computed (or recovered) every shareable page of its prompt."""
        return self.sig.forall("P", lambda k: Implies(self.on_path(x, k), s.comp(x, k)))

    def all_held(self, s: RelState, x: Any) -> Any:
        """``x`` holds references on every shareable page of its prompt."""
        return self.sig.forall("P", lambda k: Implies(self.on_path(x, k), s.hold(x, k)))

    def all_cached(self, s: RelState, c: Any) -> Any:
        """Every shareable page of class ``c`` is cached."""
        return self.sig.forall("P", lambda k: Implies(self.sig.onp(c, k), s.pg(k) != NOT_CACHED))

    def unpublished(self, s: RelState, x: Any, k: Any) -> Any:
        """``x`` computed page ``k`` and does not hold it yet: publishing makes it visible."""
        return And(s.comp(x, k), Not(s.hold(x, k)))

    def pending_publication(self, s: RelState, x: Any) -> Any:
        """``pubd[x] < published_upto(x)``."""
        if not self.config.prefix_caching:
            return False
        return self.sig.exists("P", lambda k: self.unpublished(s, x, k))

    def hit(self, s: RelState, x: Any, k: Any) -> Any:
        """Page ``k`` is among ``x``'s prefix hits: it and every page before it on the path are cached."""
        if not self.config.prefix_caching:
            return False
        before = lambda q: And(self.on_path(x, q), Or(self.sig.lt(q, k), q == k))  # noqa: E731
        return And(self.on_path(x, k), self.sig.forall("P", lambda q: Implies(before(q), s.pg(q) != NOT_CACHED)))

    def next_page(self, s: RelState, x: Any, k: Any) -> Any:
        """Page ``k`` is the next one ``x`` computes: the first of its path it has not computed."""
        return And(self.on_path(x, k), Not(s.comp(x, k)), self.sig.forall(
            "P", lambda q: Implies(And(self.on_path(x, q), self.sig.lt(q, k)), s.comp(x, q))))

    def holds_pages(self, s: RelState, x: Any) -> Any:
        """``x`` holds references: it is live, or a terminated leader whose flight is pending."""
        return Or(self.live(s, x), And(self.terminated(s, x), s.fl(x)))

    def unreferenced(self, s: RelState, k: Any) -> Any:
        """The spec's ``ref[k] == 0``, read through the relation it counts."""
        return self.sig.forall("R", lambda x: Not(s.hold(x, k)))

    def at_release_point(self, s: RelState, f: Any) -> Any:
        """The flight's leader reached the release point, or terminated."""
        if self.config.release == "after-prefill":
            return Or(self.terminated(s, f), And(s.ph(f) == DECODE, self.all_held(s, f)))
        return self.terminated(s, f)

    def waiting_follower(self, s: RelState, f: Any, j: Any) -> Any:
        """``j`` is a blocked member of flight ``f`` (a candidate for promotion)."""
        return And(j != f, self.sig.cls(j) == self.sig.cls(f), s.mem(j, f), s.ph(j) == BLOCKED)

    def releases_everyone(self, s: RelState, f: Any) -> Any:
        """A terminated leader's flight is released, not handed on."""
        if self.config.leader_loss != "promote":
            return True
        return Or(s.ph(f) == FINISHED, Not(self.sig.exists("R", lambda j: self.waiting_follower(s, f, j))))

    def excuses(self, s: RelState, j: Any) -> Any:
        """``j`` makes a duplicate of the pages it is coordinated on one by design: its wait expired, or
        (release-all) it was lost."""
        return Or(s.exp(j), And(self.config.leader_loss == "release-all", self.lost(s, j)))

    def duplicate_excused(self, s: RelState, i: Any, k: Any) -> Any:
        """``i`` computing page ``k`` while a copy exists is by design: ``i`` or a request coordinated with
        ``i`` whose prompt has ``k`` excuses it (the spec's ``duplicate_excused``)."""
        sig, ci = self.sig, self.sig.cls(i)
        return Or(s.exp(i), sig.exists("R", lambda j: And(
            j != i, sig.onp(sig.cls(j), k), self.coordinated_class(ci, sig.cls(j)), self.excuses(s, j))))

    def duplicates_excused(self, s: RelState) -> Any:
        """Some request excuses a duplicate somewhere."""
        return self.sig.exists("R", lambda j: self.excuses(s, j))

    def held_elsewhere(self, s: RelState, i: Any, k: Any) -> Any:
        """Page ``k`` of ``i``'s prompt is cached, or another live request coordinated with ``i`` holds a
        private copy: one of the same prompt, or (prefix coordination) one sharing the page. A copy cached
        while a prompt ``i`` is not coordinated with also has the page is no duplicate of the design's."""
        sig, ci = self.sig, self.sig.cls(i)
        other = lambda j: And(j != i, sig.onp(sig.cls(j), k), self.coordinated_class(ci, sig.cls(j)),  # noqa: E731
                              self.live(s, j), self.unpublished(s, j, k))
        no_outsider = sig.forall("C", lambda d: Implies(sig.onp(d, k), self.coordinated_class(ci, d)))
        return Or(And(s.pg(k) == READY, no_outsider), sig.exists("R", other))

    # ------------------------------------------------------------------ arrive, admit
    def g_arrive(self, s: RelState, i: Any) -> Any:
        return And(s.ph(i) == ABSENT, self.calm(s))

    def u_arrive(self, s: RelState, i: Any) -> RelState:
        if not self.config.single_flight:
            return s.update(ph=lambda x: If(x == i, WAITING, s.ph(x)), rel=lambda x: Or(x == i, s.rel(x)))
        c = self.sig.cls(i)
        follows = self.sig.exists("R", lambda f: s.idx(c, f))
        waits, chosen = self._via_pick(s, i)
        return s.update(
            ph=lambda x: If(x == i, If(follows, BLOCKED, If(waits, BLOCKED, WAITING)), s.ph(x)),
            mem=lambda x, g: If(x == i, If(follows, s.idx(c, g), g == i), s.mem(x, g)),
            fl=lambda g: If(g == i, If(follows, s.fl(g), True), s.fl(g)),
            idx=lambda d, g: If(d == c, If(follows, s.idx(d, g), g == i), s.idx(d, g)),
            via=lambda x, g: If(x == i, And(Not(follows), chosen(g)), s.via(x, g)),
            ord=lambda x, y: If(x == i, False, If(y == i, True, s.ord(x, y))),  # the newcomer goes last
        )

    def takes_place(self, s: RelState, new: Any, old: Any) -> Any:
        """The proofs' ghost order after request ``new`` (a predicate naming it) takes the place of ``old``
        (a predicate naming one request): ``new`` comes after and before what ``old`` did, and nowhere
        else; the rest of the order is kept (a strict order stays one)."""
        before = lambda y: self.sig.exists("R", lambda g: And(old(g), s.ord(g, y)))  # noqa: E731  old < y
        after = lambda x: self.sig.exists("R", lambda g: And(old(g), s.ord(x, g)))  # noqa: E731  x < old
        return lambda x, y: If(new(x), And(Not(new(y)), before(y)), If(new(y), after(x), s.ord(x, y)))

    def via_choice(self, s: RelState, i: Any, f: Any) -> Any:
        """Under prefix coordination, ``i`` (opening a flight of its own) waits via open flight ``f``: the one
        it prefers among those it can wait via (the spec: most shared pages, earliest leader)."""
        if not self.config.prefix_flights:
            return False
        ok = lambda g: self.via_candidate(s, i, g)  # noqa: E731
        return And(ok(f), self.sig.forall("R", lambda g: Implies(And(ok(g), g != f), self.sig.prefer(i, f, g))))

    def via_candidate(self, s: RelState, i: Any, g: Any) -> Any:
        """An open flight ``i`` may wait via on arrival (variants loosen it)."""
        return And(self.can_wait_via(i, g), s.fl(g))

    def _via_pick(self, s: RelState, i: Any) -> tuple[Any, Any]:
        """Whether ``i`` waits via a flight on arrival, and which one (a predicate over flights)."""
        if not self.config.prefix_flights:
            return False, (lambda g: False)
        return self._choice("via", s, i, lambda g: self.via_candidate(s, i, g), lambda f: self.via_choice(s, i, f))

    def _choice(self, kind: str, s: RelState, arg: Any, candidate: Any, best: Any) -> tuple[Any, Any]:
        """A choice among ``candidate`` elements of ``R`` (``best(x)``: ``x`` is the one chosen): whether
        there is one, and a predicate naming it. Finite: computed. Symbolic: two fresh constants (the
        choice Skolemized) whose meaning :meth:`definitions` gives, so that no successor holds a
        ``forall``-``exists`` alternation."""
        if not self.sig.symbolic:
            picks = [x for x in self.sig.domain["R"] if best(x)]
            return bool(picks), (lambda g: g in picks)
        key = (kind, id(s), arg.get_id())
        if key not in self._picks:
            n = len(self._picks)
            some, pick = z3.Bool(f"{kind}_some{n}"), self.sig.var("R", f"{kind}_pick{n}_")
            defined = And(Implies(some, best(pick)), Implies(Not(some), self.sig.forall("R", lambda g: Not(candidate(g)))))
            self._picks[key] = (s, some, (lambda g: And(some, g == pick)), defined)
        _s, some, chosen, _defined = self._picks[key]
        return some, chosen

    def definitions(self, s: RelState, arg: Any) -> list[Any]:
        """What the symbolic choice constants of an action on ``arg`` from ``s`` mean (asserted beside its
        guard by the checker; an action without a choice has none)."""
        if arg is None:
            return []
        return [d for (_kind, sid, aid), (_s, _some, _chosen, d) in self._picks.items()
                if sid == id(s) and aid == arg.get_id()]

    def g_admit(self, s: RelState, i: Any) -> Any:
        return And(s.ph(i) == WAITING, s.running < self.sig.capacity, self.calm(s))

    def u_admit(self, s: RelState, i: Any) -> RelState:
        hit = lambda k: self.hit(s, i, k)  # noqa: E731
        t = s.update(
            ph=lambda x: If(x == i, PREFILL, s.ph(x)),
            comp=lambda x, k: If(x == i, hit(k), s.comp(x, k)),
            hold=lambda x, k: If(x == i, hit(k), s.hold(x, k)),
            running=s.running + 1,
        )
        return self.admit_extra(s, t, i)

    def admit_extra(self, s: RelState, t: RelState, i: Any) -> RelState:
        """Hook for variants that change what admission does to the cache (none in the correct design)."""
        return t

    # ------------------------------------------------------------------ prefill, publish
    def g_prefill(self, s: RelState, i: Any) -> Any:
        conds = [s.ph(i) == PREFILL, self.calm(s)]
        if self.config.publication == "incremental":
            conds.append(Not(self.pending_publication(s, i)))
        return And(*conds)

    def u_prefill(self, s: RelState, i: Any) -> RelState:
        nxt = lambda k: self.next_page(s, i, k)  # noqa: E731
        prompt_done = self.all_computed(s, i)
        changes: dict[str, Any] = dict(
            ph=lambda x: If(x == i, If(prompt_done, DECODE, PREFILL), s.ph(x)),
            comp=lambda x, k: Or(s.comp(x, k), And(x == i, nxt(k))),
        )
        if self.config.single_flight:
            duplicated = self.sig.exists("P", lambda k: And(nxt(k), self.held_elsewhere(s, i, k),
                                                            Not(self.duplicate_excused(s, i, k))))
            changes["g_dup"] = Or(s.g_dup, duplicated)
        return self.prefill_extra(s, s.update(**changes), i)

    def prefill_extra(self, s: RelState, t: RelState, i: Any) -> RelState:
        """Hook for variants that change what a computed page does (none in the correct design)."""
        return t

    def g_publish(self, s: RelState, i: Any) -> Any:
        if not self.config.prefix_caching:
            return False
        running, pending = self.is_running(s, i), self.pending_publication(s, i)
        if self.config.publication == "incremental":
            return And(running, pending, self.calm(s))
        if self.config.single_flight and self.config.release == "after-prefill":
            return And(running, pending, s.ph(i) == DECODE, self.leads_open_flight(s, i), self.calm(s))
        return False

    def publish_pages(self, s: RelState, i: Any) -> dict[str, Any]:
        """The spec's ``_publish_into``: ``i``'s computed pages become visible, and it holds them."""
        return dict(
            pg=lambda k: If(self.unpublished(s, i, k), READY, s.pg(k)),
            hold=lambda x, k: If(x == i, Or(s.hold(i, k), s.comp(i, k)), s.hold(x, k)),
        )

    def u_publish(self, s: RelState, i: Any) -> RelState:
        if not self.config.prefix_caching:
            return s
        return s.update(**self.publish_pages(s, i))

    # ------------------------------------------------------------------ release, promote
    def g_release(self, s: RelState, f: Any) -> Any:
        if not self.config.single_flight:
            return False
        return And(s.fl(f), self.release_guard(s, f))

    def release_guard(self, s: RelState, f: Any) -> Any:
        """At the release point; at once after the leader's termination unless handed on."""
        pending = If(self.terminated(s, f), self.releases_everyone(s, f), self.calm(s))
        return And(self.at_release_point(s, f), pending)

    def pins(self, s: RelState, f: Any, k: Any) -> Any:
        """A follower released from flight ``f`` pins page ``k``: every page its leader holds."""
        return s.hold(f, k)

    def waiter_pins(self, s: RelState, f: Any, j: Any, k: Any) -> Any:
        """A request waiting via flight ``f`` pins, at its release, what the leader holds of the pages their
        prompts share."""
        return And(self.pins(s, f, k), self.on_path(j, k))

    def released_early(self, s: RelState, f: Any) -> Any:
        """Releasing ``f`` now is early (the spec's ``released_early``): its leader is live and, after
        prefill, some page on its prompt's path is not ready in the cache."""
        live = Not(self.terminated(s, f))
        if self.config.release == "after-prefill":
            return And(live, self.sig.exists("P", lambda k: And(self.on_path(f, k), s.pg(k) != READY)))
        return live

    def u_release(self, s: RelState, f: Any) -> RelState:
        cf = self.sig.cls(f)
        freed = lambda j: And(j != f, self.sig.cls(j) == cf, s.mem(j, f), s.ph(j) == BLOCKED)  # noqa: E731
        waiting = lambda j: And(self.can_wait_via(j, f), s.via(j, f), s.ph(j) == BLOCKED)  # noqa: E731
        lost = self.terminated(s, f)
        stays, rewait, order = self.rewait_at_release(s, f, waiting, self.lost(s, f))
        waiter = lambda j: And(waiting(j), Not(stays(j)))  # noqa: E731  freed: goes to admission
        pinned = lambda j, k: If(freed(j), self.pins(s, f, k), If(waiter(j), self.waiter_pins(s, f, j, k), s.hold(j, k)))  # noqa: E731
        return s.update(
            g_early=Or(s.g_early, self.released_early(s, f)),
            fl=lambda g: And(g != f, s.fl(g)),
            idx=lambda c, g: And(c != cf, s.idx(c, g)),
            ph=lambda j: If(Or(freed(j), waiter(j)), WAITING, s.ph(j)),
            hold=lambda j, k: If(j == f, And(Not(lost), s.hold(f, k)), pinned(j, k)),
            via=lambda j, g: And(j != f, Not(waiter(j)), If(stays(j), rewait(j, g), s.via(j, g))),
            **self.release_members(s, f),
            **order,
        )

    def heir_choice(self, s: RelState, f: Any, waiting: Any, h: Any) -> Any:
        """``h`` is the waiter of ``f`` that ``f`` prefers (as a request prefers the flight it waits via)."""
        return And(waiting(h), self.sig.forall("R", lambda w: Implies(And(waiting(w), w != h), self.sig.prefer(f, h, w))))

    def hands_on_waiters(self) -> bool:
        """The spec's: prefix coordination under ``promote`` hands a lost leader's waiters on."""
        return self.config.prefix_flights and self.config.leader_loss == "promote"

    def rewait_at_release(self, s: RelState, f: Any, waiting: Any, lost: Any) -> tuple[Any, Any, dict[str, Any]]:
        """Which waiters of flight ``f`` keep waiting at its release, via what (``rewait(j, g)``), and the
        proofs' ghost order after it: the heir (the waiter ``f`` prefers, as a request prefers the flight it
        waits via: most shared pages, earliest arrived) inherits ``f``'s own wait, if any, the other waiters
        wait via the heir, and the heir takes ``f``'s place in the order."""
        if not self.hands_on_waiters():
            return (lambda j: False), (lambda j, g: False), {}
        _some, heir = self._choice("heir", s, f, waiting, lambda h: self.heir_choice(s, f, waiting, h))
        inherited = self.sig.exists("R", lambda g: s.via(f, g))
        stays = lambda j: And(waiting(j), lost, Or(Not(heir(j)), inherited))  # noqa: E731
        rewait = lambda j, g: If(heir(j), s.via(f, g), heir(g))  # noqa: E731
        return stays, rewait, dict(ord=self.takes_place(s, heir, lambda g: g == f))

    def release_members(self, s: RelState, f: Any) -> dict[str, Any]:
        """What the coordinator keeps of a released member: its ID, in the released set."""
        return dict(mem=lambda j, g: And(Not(s.mem(j, f)), s.mem(j, g)), rel=lambda j: Or(s.mem(j, f), s.rel(j)))

    def g_promote(self, s: RelState, j: Any) -> Any:
        if not (self.config.single_flight and self.config.leader_loss == "promote"):
            return False
        lost = lambda f: And(f != j, self.sig.cls(f) == self.sig.cls(j), s.mem(j, f), self.orphaned(s, f),  # noqa: E731
                             s.ph(f) != FINISHED)
        return And(s.ph(j) == BLOCKED, self.sig.exists("R", lost))

    def u_promote(self, s: RelState, j: Any) -> RelState:
        cj = self.sig.cls(j)
        old = lambda g: And(g != j, self.sig.cls(g) == cj, s.mem(j, g))  # noqa: E731  j's flight
        held = lambda k: self.sig.exists("R", lambda g: And(old(g), s.hold(g, k)))  # noqa: E731
        return s.update(
            fl=lambda g: If(g == j, True, And(Not(old(g)), s.fl(g))),
            hold=lambda g, k: If(g == j, held(k), And(Not(old(g)), s.hold(g, k))),
            mem=self.promoted_members(s, j),
            idx=lambda c, g: If(c == cj, g == j, s.idx(c, g)),
            **self.promoted_wait(s, j, old),
        )

    def promoted_wait(self, s: RelState, j: Any, old: Any) -> dict[str, Any]:
        """The promoted follower goes to admission, or (prefix coordination) takes over the wait of the
        old leader; who waited via the old leader's flight waits via the new one's."""
        if not self.config.prefix_flights:
            return dict(ph=lambda x: If(x == j, WAITING, s.ph(x)))
        inherited = lambda g: self.sig.exists("R", lambda h: And(old(h), s.via(h, g)))  # noqa: E731
        redirected = lambda m: And(self.can_wait_via(m, j), self.sig.exists(  # noqa: E731
            "R", lambda h: And(old(h), s.via(m, h))))
        return dict(
            ph=lambda x: If(x == j, If(self.sig.exists("R", inherited), BLOCKED, WAITING), s.ph(x)),
            via=lambda m, g: If(m == j, inherited(g), If(old(m), False, If(redirected(m), g == j, s.via(m, g)))),
            ord=self.takes_place(s, lambda x: x == j, old),
        )

    def promoted_members(self, s: RelState, j: Any) -> Any:
        """Every member of ``j``'s flight follows ``j``'s, which ``j`` leads."""
        same = lambda m: self.sig.exists("R", lambda g: And(s.mem(m, g), s.mem(j, g)))  # noqa: E731
        return lambda m, g: If(m == j, g == j, If(same(m), g == j, s.mem(m, g)))

    # ------------------------------------------------------------------ finish, evict
    def g_finish(self, s: RelState, i: Any) -> Any:
        return And(s.ph(i) == DECODE, self.calm(s))

    def u_finish(self, s: RelState, i: Any) -> RelState:
        leading = self.leads_open_flight(s, i)
        published = self.publish_pages(s, i) if self.config.prefix_caching else {}
        after = s.update(**published)
        return self.terminate(s, i, FINISHED, leading, keep=lambda k: after.hold(i, k), pg=after.pg)

    def g_evict(self, s: RelState, k: Any) -> Any:
        return And(s.pg(k) == READY, self.unreferenced(s, k), self.is_leaf(s, k), self.calm(s))

    def is_leaf(self, s: RelState, k: Any) -> Any:
        """No later page of ``k``'s path is cached."""
        return self.sig.forall("P", lambda q: Implies(self.sig.lt(k, q), s.pg(q) == NOT_CACHED))

    def u_evict(self, s: RelState, k: Any) -> RelState:
        return s.update(pg=lambda q: If(q == k, NOT_CACHED, s.pg(q)))

    # ------------------------------------------------------------------ abort, fail, notify, expire
    def g_abort(self, s: RelState, i: Any) -> Any:
        return And(self.live(s, i), self.calm(s))

    def u_abort(self, s: RelState, i: Any) -> RelState:
        return self.terminate(s, i, ABORTED, self.leads_open_flight(s, i), keep=lambda k: s.hold(i, k))

    def g_fail(self, s: RelState, i: Any) -> Any:
        return And(self.is_running(s, i), self.calm(s))

    def u_fail(self, s: RelState, i: Any) -> RelState:
        return self.terminate(s, i, FAILED, self.leads_open_flight(s, i), keep=lambda k: s.hold(i, k))

    def terminate(self, s: RelState, i: Any, phase: int, leading: Any, keep: Any, pg: Any = None) -> RelState:
        """A live request ends: its progress is cleared, its references dropped (a leader's kept, as
        ``keep``, until its flight is settled), and the coordinator must accept its termination once."""
        accepted = self.accepts(s, i)
        return s.update(
            g_term=If(And(Not(accepted), s.g_term == 0), TERM_LEGIT_REJECTED, s.g_term),
            ph=lambda x: If(x == i, phase, s.ph(x)),
            comp=lambda x, k: And(x != i, s.comp(x, k)),
            hold=lambda x, k: If(x == i, And(leading, keep(k)), s.hold(x, k)),
            # a lost leader's wait passes to the follower it promotes
            via=lambda x, g: If(x == i, And(leading, s.via(i, g)), s.via(x, g)),
            running=s.running - If(self.is_running(s, i), 1, 0),
            pg=pg if pg is not None else s.pg,
            **self.forget(s, i, accepted),
        )

    def forget(self, s: RelState, i: Any, accepted: Any) -> dict[str, Any]:
        """An accepted termination removes ``i`` from its flight or from the released set."""
        return dict(mem=lambda x, g: And(Not(And(x == i, accepted)), s.mem(x, g)),
                    rel=lambda x: And(Not(And(x == i, accepted)), s.rel(x)))

    def g_notify(self, s: RelState, i: Any) -> Any:
        return And(Not(self.live(s, i)), self.calm(s))

    def u_notify(self, s: RelState, i: Any) -> RelState:
        accepted = self.accepts(s, i)
        return s.update(g_term=If(And(accepted, s.g_term == 0), TERM_BOGUS_ACCEPTED, s.g_term),
                        **self.forget(s, i, accepted))

    def g_notify_unknown(self, s: RelState) -> Any:
        return self.calm(s)

    def u_notify_unknown(self, s: RelState) -> RelState:
        accepted = self.accepts_unknown(s)
        return s.update(g_term=If(And(accepted, s.g_term == 0), TERM_BOGUS_ACCEPTED, s.g_term))

    def g_expire(self, s: RelState, j: Any) -> Any:
        return And(s.ph(j) == BLOCKED, self.calm(s))

    def u_expire(self, s: RelState, j: Any) -> RelState:
        cj = self.sig.cls(j)
        via = lambda f, k: And(self.can_wait_via(j, f), s.via(j, f), s.hold(f, k), self.on_path(j, k))  # noqa: E731
        held = lambda k: self.sig.exists(  # noqa: E731
            "R", lambda f: Or(And(f != j, self.sig.cls(f) == cj, s.mem(j, f), s.hold(f, k)), via(f, k)))
        # A leader waiting via another flight stops waiting, and still leads its own.
        waiting_via = self.waits_via(s, j)
        left = self.expire_member(s, j)
        return s.update(
            ph=lambda x: If(x == j, WAITING, s.ph(x)),
            hold=lambda x, k: If(x == j, held(k), s.hold(x, k)),
            exp=lambda x: Or(x == j, s.exp(x)),
            via=lambda x, g: And(x != j, s.via(x, g)),
            mem=lambda x, g: If(waiting_via, s.mem(x, g), left["mem"](x, g)),
            rel=lambda x: If(waiting_via, s.rel(x), left.get("rel", s.rel)(x)),
        )

    def expire_member(self, s: RelState, j: Any) -> dict[str, Any]:
        """An expired follower leaves its flight for the released set."""
        return dict(mem=lambda x, g: And(x != j, s.mem(x, g)), rel=lambda x: Or(x == j, s.rel(x)))
