"""The safety properties in relational form, and the universally quantified lemmas that make them inductive.

Each :class:`Invariant` is a predicate over a :class:`~flightcheck.checks.unbounded.relational.RelModel` and
a state, named after the property of :mod:`flightcheck.spec.properties` or the lemma of
:mod:`flightcheck.spec.lemmas` it restates (a lemma new here says so in its story). The properties'
quantifier prefix is universal, except ``blocked_in_open_flight`` and ``live_is_known`` (``forall j.
exists f``: a request to its flight) and ``quiescent_clean`` (its antecedent negates every engine guard). A
property that is an implication carries its :class:`Antecedent`, which a proof must show satisfiable.

:data:`NOT_MODELLED` lists the safety properties the relational model does not prove, with the reason:
each needs an exact cardinality, or a part of the design the model leaves out.

For example::

    >>> [i.name for i in PROPERTIES][:3]
    ['one_flight_per_input', 'follower_waits_for_release', 'single_prefill']
    >>> 'refcounts_exact' in NOT_MODELLED
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from flightcheck.checks.unbounded.config import Config
from flightcheck.spec.expr import And, Implies, Not, Or
from flightcheck.spec.state import ABSENT, BLOCKED, DECODE, FAILED, FINISHED, NOT_CACHED, PREFILL, RESERVED, WAITING

Check = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Antecedent:
    """The left side of a property that is an implication, existentially closed (``some follower of an open
    flight``), with the configurations that can meet it: a proof of the property where no state of the
    invariant meets it is vacuous (:mod:`flightcheck.checks.unbounded.vacuity`)."""

    text: str
    check: Check
    applies: Callable[[Config], bool] = lambda c: True


@dataclass(frozen=True)
class Invariant:
    """A named predicate over a relational state: a property or a lemma, and the configs it applies to."""

    name: str
    kind: str  # "property" | "lemma"
    story: str
    check: Check
    applies: Callable[[Config], bool] = lambda c: True
    antecedent: Antecedent | None = None

    def holds(self, model: Any, s: Any) -> Any:
        """The predicate on ``s`` (a bool on a finite state, a z3 formula on a symbolic one)."""
        return self.check(model, s)


def _prop(story: str, applies: Callable[[Config], bool] = lambda c: True, antecedent: Antecedent | None = None):
    return lambda fn: Invariant(fn.__name__, "property", story, fn, applies, antecedent)


def _lemma(story: str, applies: Callable[[Config], bool] = lambda c: True):
    return lambda fn: Invariant(fn.__name__, "lemma", story, fn, applies)


def _sf(c: Config) -> bool:
    return c.single_flight


def _exact(c: Config) -> bool:
    """Exact single-flight (not prefix coordination): where one_busy_per_input and its kin are proved."""
    return c.single_flight and not c.prefix_flights


def _prefix(c: Config) -> bool:
    """Prefix coordination: where the per-page claims replace one_busy_per_input."""
    return c.prefix_flights


def _all(m: Any, sort: str, fn: Callable[..., Any], arity: int = 1) -> Any:
    """``forall`` over ``arity`` variables of one sort."""
    if arity == 1:
        return m.sig.forall(sort, fn)
    return m.sig.forall(sort, lambda a: _all(m, sort, lambda *rest: fn(a, *rest), arity - 1))


def _some(m: Any, sort: str, fn: Callable[[Any, Any], Any]) -> Any:
    """``exists`` over two variables of one sort."""
    return m.sig.exists(sort, lambda a: m.sig.exists(sort, lambda b: fn(a, b)))


# ---------------------------------------------------------------------------------------- properties
@_prop("At most one active flight per input, and the index names exactly the open flights.", antecedent=Antecedent(
    "a flight is open", lambda m, s: m.sig.exists("R", lambda f: s.fl(f)), _sf))
def one_flight_per_input(m: Any, s: Any) -> Any:
    sig = m.sig
    return And(
        _all(m, "R", lambda f, g: Implies(And(s.fl(f), s.fl(g), sig.cls(f) == sig.cls(g)), f == g), 2),
        sig.forall("C", lambda c: sig.forall("R", lambda f: Implies(s.idx(c, f), And(s.fl(f), sig.cls(f) == c)))),
        sig.forall("R", lambda f: Implies(s.fl(f), s.idx(sig.cls(f), f))),
    )


@_prop("A follower of an open flight is blocked: it never runs before its flight is released.", antecedent=Antecedent(
    "a follower of an open flight", lambda m, s: _some(m, "R", lambda i, f: And(i != f, s.mem(i, f), s.fl(f))), _sf))
def follower_waits_for_release(m: Any, s: Any) -> Any:
    return _all(m, "R", lambda i, f: Implies(And(i != f, s.mem(i, f), s.fl(f)), s.ph(i) == BLOCKED), 2)


@_prop("With single-flight, no shareable page is prefilled while a copy is cached or held by another live request, "
       "except by design (an expired wait, or a lost leader's followers all released).", _sf)
def single_prefill(m: Any, s: Any) -> Any:
    return Not(s.g_dup)


@_prop("A page is visible in the prefix cache only after its KV was computed.")
def visible_after_compute(m: Any, s: Any) -> Any:
    return m.sig.forall("P", lambda k: s.pg(k) != RESERVED)


@_prop("Every page a request references (hit, published or pinned) is still cached.", antecedent=Antecedent(
    "a request references a page", lambda m, s: m.sig.exists("R", lambda i: m.sig.exists(
        "P", lambda k: And(m.holds_pages(s, i), s.hold(i, k)))), lambda c: c.prefix_caching))
def in_use_never_evicted(m: Any, s: Any) -> Any:
    return m.sig.forall("R", lambda i: m.sig.forall(
        "P", lambda k: Implies(And(m.holds_pages(s, i), s.hold(i, k)), s.pg(k) != NOT_CACHED)))


@_prop("Every termination of a known live request is accepted once; every other one is rejected with the state unchanged.")
def termination_validated(m: Any, s: Any) -> Any:
    return s.g_term == 0


@_prop("After-prefill releases a live leader's flight only once every page of the leader's prompt is published (ready in the cache); a terminated leader's flight may go at once.",
       lambda c: c.single_flight and c.release == "after-prefill")
def release_after_publication(m: Any, s: Any) -> Any:
    return Not(s.g_early)


@_prop("On-completion releases only when the leader terminates.",
       lambda c: c.single_flight and c.release == "on-completion")
def release_on_completion(m: Any, s: Any) -> Any:
    return Not(s.g_early)


def is_quiescent(m: Any, s: Any) -> Any:
    """No live request and no engine step enabled (``decode`` needs a live request, so it is left out)."""
    from flightcheck.checks.unbounded.relational import ENGINE

    idle = m.sig.forall("R", lambda i: Not(m.live(s, i)))
    steps = [m.sig.forall(sort, lambda a, n=name: Not(m.guard(s, n, a)))
             for name, sort in m.actions if name in ENGINE]
    return And(idle, *steps)


@_prop("At quiescence (no live request, no step pending) no flight, index entry, released ID or page reference remains.",
       antecedent=Antecedent("quiescence (no live request, no engine step enabled)", lambda m, s: is_quiescent(m, s)))
def quiescent_clean(m: Any, s: Any) -> Any:
    sig = m.sig
    clean = And(
        sig.forall("R", lambda f: And(Not(s.fl(f)), Not(s.rel(f)))),
        _all(m, "R", lambda i, f: And(Not(s.mem(i, f)), Not(s.via(i, f))), 2),
        sig.forall("C", lambda c: sig.forall("R", lambda f: Not(s.idx(c, f)))),
        sig.forall("P", lambda k: m.unreferenced(s, k)),
    )
    return Implies(is_quiescent(m, s), clean)


@_prop("A blocked request follows an open flight (or, prefix coordination, waits via one): promotion or release "
       "never loses a follower.", _sf,
       Antecedent("a blocked request", lambda m, s: m.sig.exists("R", lambda j: s.ph(j) == BLOCKED)))
def blocked_in_open_flight(m: Any, s: Any) -> Any:
    return m.sig.forall("R", lambda j: Implies(
        s.ph(j) == BLOCKED, m.sig.exists("R", lambda f: And(f != j, Or(s.mem(j, f), s.via(j, f)), s.fl(f)))))


@_prop("Under prefix coordination, a request waits via another flight only while it leads its own open flight, is "
       "blocked (or, lost, hands its wait on in the same call), and the flight it waits via is open and its prompt "
       "shares at least min_shared_pages pages with the request's.", lambda c: c.prefix_flights,
       Antecedent("a request waits via a flight", lambda m, s: _some(m, "R", lambda j, f: s.via(j, f))))
def waits_for_shared_pages(m: Any, s: Any) -> Any:
    waiting = lambda j: And(s.ph(j) == BLOCKED, s.mem(j, j), s.fl(j))  # noqa: E731
    # the correct design's reading of "shares enough", not the model's (a variant may loosen that)
    shares = lambda j, f: And(m.sig.cls(f) != m.sig.cls(j), m.sig.shares(m.sig.cls(j), m.sig.cls(f)))  # noqa: E731
    return _all(m, "R", lambda j, f: Implies(s.via(j, f), And(
        shares(j, f), s.fl(f), Or(waiting(j), m.orphaned(s, j)))), 2)


@_prop("The coordinator knows a live request once: as a member of a flight or in the released set, never both.")
def known_once(m: Any, s: Any) -> Any:
    return _all(m, "R", lambda i, f: Not(And(s.mem(i, f), s.rel(i))), 2)


@_prop("A follower whose wait expired is never blocked again: it is in no flight.",
       lambda c: c.expiry and c.single_flight, Antecedent("an expired wait", lambda m, s: m.sig.exists("R", s.exp)))
def expired_never_blocked(m: Any, s: Any) -> Any:
    return m.sig.forall("R", lambda j: Implies(s.exp(j), And(
        s.ph(j) != BLOCKED, m.sig.forall("R", lambda g: Implies(s.mem(j, g), g == j)))))


PROPERTIES: tuple[Invariant, ...] = (
    one_flight_per_input, follower_waits_for_release, single_prefill, visible_after_compute, in_use_never_evicted,
    termination_validated, release_after_publication, release_on_completion, quiescent_clean,
    blocked_in_open_flight, waits_for_shared_pages, known_once, expired_never_blocked,
)

NOT_MODELLED: dict[str, str] = {
    "refcounts_exact": "needs an exact cardinality (a page's count equals the number of its holders); the model "
                       "reads a count through the relation it counts, so this property is what the model assumes "
                       "of the spec: proved per scenario by k-induction (`flightcheck prove`), and held on every "
                       "reachable state of the drift scenarios",
    "admission_has_room": "the page pool's free-page arithmetic (sums of reservations and private pages) needs "
                          "exact cardinalities; bounded (`flightcheck prove` per scenario)",
    "no_deadlock": "not a safety invariant of this model: admission reads the running count, which the model "
                   "keeps as an unconstrained counter; bounded (explorer and `flightcheck prove`)",
}


# -------------------------------------------------------------------------------------------- lemmas
@_lemma("Slot ranges: a phase is one of the eight, a page state one of the three, the ghost one of three.")
def in_bounds(m: Any, s: Any) -> Any:
    return And(m.sig.forall("R", lambda x: And(s.ph(x) >= ABSENT, s.ph(x) <= FAILED)),
               m.sig.forall("P", lambda k: And(s.pg(k) >= 0, s.pg(k) <= 2)), s.g_term >= 0, s.g_term <= 2)


@_lemma("New here (the finite encoding has it by construction): a request holds and computes only pages of its "
        "own path, each a prefix of it; held pages were computed while it runs.")
def pages_are_prefixes(m: Any, s: Any) -> Any:
    sig = m.sig

    def prefix(rel: Callable[[Any, Any], Any]) -> Any:
        return sig.forall("R", lambda x: sig.forall("P", lambda k: Implies(rel(x, k), And(
            m.on_path(x, k), sig.forall("P", lambda q: Implies(sig.lt(q, k), rel(x, q)))))))

    return And(prefix(s.hold), prefix(s.comp))


@_lemma("New here (implicit in the finite encoding): a request is a member of at most one flight.", _sf)
def one_flight_per_member(m: Any, s: Any) -> Any:
    return m.sig.forall("R", lambda x: _all(m, "R", lambda f, g: Implies(And(s.mem(x, f), s.mem(x, g)), f == g), 2))


@_lemma("A request that has not arrived holds nothing: no progress, no flight, not released, never expired.")
def absent_is_blank(m: Any, s: Any) -> Any:
    sig = m.sig
    return sig.forall("R", lambda i: Implies(s.ph(i) == ABSENT, And(
        sig.forall("P", lambda k: And(Not(s.hold(i, k)), Not(s.comp(i, k)))),
        sig.forall("R", lambda g: And(Not(s.mem(i, g)), Not(s.via(i, g)))), Not(s.rel(i)), Not(s.fl(i)),
        Not(s.exp(i)))))


@_lemma("A terminated request's progress is cleared and the coordinator has forgotten it; only a leader whose "
        "flight is still pending holds pages.")
def terminated_is_forgotten(m: Any, s: Any) -> Any:
    sig = m.sig
    return sig.forall("R", lambda i: Implies(m.terminated(s, i), And(
        sig.forall("P", lambda k: And(Not(s.comp(i, k)), Or(Not(s.hold(i, k)), s.fl(i)))),
        sig.forall("R", lambda g: And(Not(s.mem(i, g)), Or(Not(s.via(i, g)), s.fl(i)))), Not(s.rel(i)))))


@_lemma("Progress matches the phase: a queued request has computed nothing, a blocked one holds nothing, a "
        "decoding one has computed its prompt, a running one holds only what it computed (and, incremental, "
        "has at most one computed page unpublished).")
def progress_matches_phase(m: Any, s: Any) -> Any:
    sig, c = m.sig, m.config

    def per(i: Any) -> Any:
        queued = Or(s.ph(i) == BLOCKED, s.ph(i) == WAITING)
        conds = [
            Implies(queued, sig.forall("P", lambda k: Not(s.comp(i, k)))),
            Implies(s.ph(i) == BLOCKED, sig.forall("P", lambda k: Not(s.hold(i, k)))),
            Implies(s.ph(i) == DECODE, m.all_computed(s, i)),
            Implies(m.is_running(s, i), sig.forall("P", lambda k: Implies(s.hold(i, k), s.comp(i, k)))),
        ]
        if c.publication == "incremental" and c.prefix_caching:
            conds.append(Implies(m.is_running(s, i), _all(m, "P", lambda k, q: Implies(
                And(m.unpublished(s, i, k), m.unpublished(s, i, q)), k == q), 2)))
        if not c.prefix_caching:
            conds.append(sig.forall("P", lambda k: Not(s.hold(i, k))))
        return And(*conds)

    return sig.forall("R", per)


@_lemma("The prefix cache is prefix-closed: a cached page's predecessors on its path are cached.")
def cache_prefix_closed(m: Any, s: Any) -> Any:
    return _all(m, "P", lambda k, q: Implies(And(m.sig.lt(k, q), s.pg(q) != NOT_CACHED), s.pg(k) != NOT_CACHED), 2)


@_lemma("Without prefix caching nothing is ever cached or referenced.", lambda c: not c.prefix_caching)
def nothing_cached_without_caching(m: Any, s: Any) -> Any:
    return m.sig.forall("P", lambda k: And(s.pg(k) == NOT_CACHED, m.unreferenced(s, k)))


@_lemma("A held page is cached (the unconditional form of in_use_never_evicted: a request that holds no "
        "pages after it terminates holds none at all).")
def held_is_cached(m: Any, s: Any) -> Any:
    return _all_rp(m, lambda i, k: Implies(s.hold(i, k), s.pg(k) != NOT_CACHED))


def _all_rp(m: Any, fn: Callable[[Any, Any], Any]) -> Any:
    return m.sig.forall("R", lambda i: m.sig.forall("P", lambda k: fn(i, k)))


@_lemma("Every live request is known to the coordinator: a member of a flight, or released (never both).")
def live_is_known(m: Any, s: Any) -> Any:
    return m.sig.forall("R", lambda i: Implies(m.live(s, i), Or(m.in_flight(s, i), s.rel(i))))


@_lemma("Members belong to an open flight of their own class; only an open flight's leader runs, the others are "
        "blocked (and a leader only while it waits via another prompt's flight); an open flight's slot is its live "
        "leader's, or a terminated leader's whose flight is pending.", _sf)
def members_of_open_flights(m: Any, s: Any) -> Any:
    sig = m.sig
    return And(
        _all(m, "R", lambda i, f: Implies(s.mem(i, f), And(s.fl(f), sig.cls(f) == sig.cls(i))), 2),
        sig.forall("R", lambda i: Implies(s.ph(i) == BLOCKED, Or(
            sig.exists("R", lambda f: And(f != i, s.mem(i, f))), And(s.mem(i, i), m.waits_via(s, i))))),
        _all(m, "R", lambda i, f: Implies(And(f != i, s.mem(i, f)), And(s.ph(i) == BLOCKED, Not(s.via(i, f)))), 2),
        sig.forall("R", lambda f: Implies(s.fl(f), And(s.ph(f) != ABSENT, Or(s.ph(f) != BLOCKED, m.waits_via(s, f)),
                                                       Or(s.mem(f, f), m.terminated(s, f))))),
        sig.forall("R", lambda f: Implies(s.mem(f, f), s.fl(f))),
    )


@_lemma("New here (a single slot in the finite encoding): a request waits via at most one flight, and only one it "
        "can wait via, as the blocked leader of its own flight (or its lost leader, until the flight is settled), "
        "holding no page (it was never admitted); two flights never wait via each other.", lambda c: c.prefix_flights)
def one_wait_per_request(m: Any, s: Any) -> Any:
    sig = m.sig
    return And(
        sig.forall("R", lambda j: _all(m, "R", lambda f, g: Implies(And(s.via(j, f), s.via(j, g)), f == g), 2)),
        _all(m, "R", lambda j, f: Implies(s.via(j, f), And(m.can_wait_via(j, f), Or(
            And(s.ph(j) == BLOCKED, s.mem(j, j)), And(m.lost(s, j), s.fl(j))))), 2),
        _all(m, "R", lambda j, f: Implies(s.via(j, f), sig.forall("P", lambda k: Not(s.hold(j, k)))), 2),
        _all(m, "R", lambda j, f: Implies(s.via(j, f), Not(s.via(f, j))), 2),
    )


@_lemma("New here (a ghost order of the proofs, see checks/unbounded/state.py): waits are acyclic: the ghost order "
        "is strict, and the flight a request waits via comes before it. Needed once a lost leader's waiters are "
        "handed on: the heir inherits the flight's own wait and the others wait via the heir.",
        lambda c: c.prefix_flights)
def waits_are_ordered(m: Any, s: Any) -> Any:
    sig = m.sig
    return And(
        sig.forall("R", lambda x: Not(s.ord(x, x))),
        _all(m, "R", lambda x, y, z: Implies(And(s.ord(x, y), s.ord(y, z)), s.ord(x, z)), 3),
        _all(m, "R", lambda j, f: Implies(s.via(j, f), s.ord(f, j)), 2),
    )


@_lemma("Without prefix coordination nobody waits via another flight.", lambda c: not c.prefix_flights)
def no_waits_via(m: Any, s: Any) -> Any:
    return _all(m, "R", lambda j, f: Not(s.via(j, f)), 2)


@_lemma("At most one flight is pending (its leader terminated, its release or hand-over due).", _sf)
def one_pending_flight(m: Any, s: Any) -> Any:
    return _all(m, "R", lambda f, g: Implies(And(m.orphaned(s, f), m.orphaned(s, g)), f == g), 2)


@_lemma("Without coordination there are no flights: no flight slot, membership or index entry is ever set.",
        lambda c: not c.single_flight)
def uncoordinated_has_no_flights(m: Any, s: Any) -> Any:
    sig = m.sig
    return And(sig.forall("R", lambda f: Not(s.fl(f))), _all(m, "R", lambda i, f: Not(s.mem(i, f)), 2),
               sig.forall("C", lambda c: sig.forall("R", lambda f: Not(s.idx(c, f)))))


def is_busy(m: Any, s: Any, j: Any) -> Any:
    """``j`` may still compute a shareable page, or holds one it has not published (spec/lemmas.py's)."""
    return Or(
        And(s.ph(j) == WAITING, Not(m.all_held(s, j)), Not(m.all_cached(s, m.sig.cls(j)))),
        And(s.ph(j) == PREFILL, Not(m.all_computed(s, j))),
        And(m.live(s, j), m.pending_publication(s, j)),
    )


def _strict(m: Any, s: Any, c: Any, k: Any = None) -> Any:
    """The runs single_prefill speaks of strictly for class ``c`` (on page ``k``, or on every page): no request
    coordinated with ``c`` (whose prompt has ``k``) excuses a duplicate (spec/derived.py's ``excuses``)."""
    sig = m.sig
    on = (lambda j: True) if k is None else (lambda j: sig.onp(sig.cls(j), k))  # noqa: E731
    return sig.forall("R", lambda j: Implies(And(on(j), m.coordinated_class(c, sig.cls(j))), Not(m.excuses(s, j))))


@_lemma("Single-flight, strict runs: at most one request per input is busy computing or holding unpublished "
        "shareable pages.", _exact)
def one_busy_per_input(m: Any, s: Any) -> Any:
    return _all(m, "R", lambda a, b: Implies(
        And(m.sig.cls(a) == m.sig.cls(b), _strict(m, s, m.sig.cls(a)), is_busy(m, s, a), is_busy(m, s, b)), a == b), 2)


def claims(m: Any, s: Any, j: Any, k: Any) -> Any:
    """``j`` will compute page ``k`` of its prompt, or holds it unpublished: waiting without holding it,
    prefilling short of it, holding a private copy, or blocked waiting via a flight whose prompt does not
    have it (its release will not pin it). Where a lost leader's waiters are handed on, a lost leader whose
    flight is pending keeps its claim on a page it does not hold and waits for from nobody: its release
    passes it to the heir."""
    sig = m.sig
    via_misses = sig.exists("R", lambda f: And(s.via(j, f), Not(sig.onp(sig.cls(f), k))))
    ways = [
        And(s.ph(j) == WAITING, Not(s.hold(j, k))),
        And(s.ph(j) == PREFILL, Not(s.comp(j, k))),
        And(m.live(s, j), m.unpublished(s, j, k)),
        And(s.ph(j) == BLOCKED, via_misses),
    ]
    if m.hands_on_waiters():
        via_has = sig.exists("R", lambda f: And(s.via(j, f), sig.onp(sig.cls(f), k)))
        ways.append(And(m.lost(s, j), s.fl(j), Not(s.hold(j, k)), Not(via_has)))
    return And(m.on_path(j, k), Or(*ways))


@_lemma("New here (prefix coordination's form of one_busy_per_input): in strict runs, of two coordinated requests "
        "(the same prompt, or prompts sharing under prefix coordination) at most one claims a page both have.",
        _prefix)
def one_claim_per_page(m: Any, s: Any) -> Any:
    sig = m.sig
    return sig.forall("P", lambda k: _all(m, "R", lambda a, b: Not(And(
        a != b, m.coordinated_class(sig.cls(a), sig.cls(b)), _strict(m, s, sig.cls(a), k),
        claims(m, s, a, k), claims(m, s, b, k))), 2))


@_lemma("New here: in strict runs under prefix coordination, a request that claims a page leads an open flight (or "
        "is the lost leader of a pending one), so a newcomer sharing that page waits via it (or via one sharing more).",
        _prefix)
def claimants_lead(m: Any, s: Any) -> Any:
    return _all_rp(m, lambda j, k: Implies(And(_strict(m, s, m.sig.cls(j), k), claims(m, s, j, k)), And(
        s.fl(j), Or(s.mem(j, j), m.lost(s, j)))))


def exclusive(m: Any, i: Any, k: Any) -> Any:
    """Every prompt whose path has page ``k`` is coordinated with ``i``'s (its own, or one it shares with
    under prefix coordination): nobody else computes ``k`` by design."""
    sig = m.sig
    return sig.forall("C", lambda d: Implies(sig.onp(d, k), m.coordinated_class(sig.cls(i), d)))


@_lemma("Single-flight, strict runs: no page a prefilling request has yet to compute is cached, unless a prompt "
        "it is not coordinated with has that page too (spec/lemmas.py says the next one; on a prefix-closed cache "
        "that is the same, and this form needs no alternation).", _sf)
def next_page_uncached(m: Any, s: Any) -> Any:
    return _all_rp(m, lambda i, k: Implies(
        And(_strict(m, s, m.sig.cls(i), k), s.ph(i) == PREFILL, m.on_path(i, k), Not(s.comp(i, k)), exclusive(m, i, k)),
        s.pg(k) == NOT_CACHED))


@_lemma("Single-flight, strict runs: a released request holds every shareable page of its input, so it never "
        "computes one.", _sf)
def released_hold_all(m: Any, s: Any) -> Any:
    return _all_rp(m, lambda j, k: Implies(
        And(_strict(m, s, m.sig.cls(j), k), s.rel(j), s.ph(j) >= WAITING, s.ph(j) <= DECODE, m.on_path(j, k)),
        s.hold(j, k)))


@_lemma("Single-flight: a waiting leader holds pins only after a hand-over; a fresh one holds nothing, except "
        "(prefix coordination) pages of a prompt it waited via.",
        lambda c: c.single_flight and c.leader_loss != "promote")
def waiting_leader_pins(m: Any, s: Any) -> Any:
    sig = m.sig

    def shared(j: Any, k: Any) -> Any:
        if not m.config.prefix_flights:
            return False
        cj = sig.cls(j)
        return sig.exists("C", lambda d: And(d != cj, sig.shares(cj, d), sig.onp(d, k)))

    return _all_rp(m, lambda j, k: Implies(And(s.ph(j) == WAITING, s.mem(j, j), s.hold(j, k)), shared(j, k)))


@_lemma("New here (found as a counterexample to induction of released_hold_all): a finished leader whose flight "
        "is still pending holds every shareable page of its prompt (finishing published them, and a leader keeps "
        "its references until its flight is settled), so the followers its release pins hold them all.", _sf)
def pending_leader_holds_all(m: Any, s: Any) -> Any:
    return m.sig.forall("R", lambda f: Implies(And(s.fl(f), s.ph(f) == FINISHED), m.all_held(s, f)))


@_lemma("New here: without the expiry action no wait has expired.", lambda c: not (c.expiry and c.single_flight))
def nothing_expired(m: Any, s: Any) -> Any:
    return m.sig.forall("R", lambda j: Not(s.exp(j)))


LEMMAS: tuple[Invariant, ...] = (
    in_bounds, pages_are_prefixes, one_flight_per_member, absent_is_blank, terminated_is_forgotten,
    progress_matches_phase, cache_prefix_closed, nothing_cached_without_caching, held_is_cached, live_is_known,
    members_of_open_flights, one_wait_per_request, waits_are_ordered, no_waits_via, one_pending_flight,
    uncoordinated_has_no_flights, one_busy_per_input,
    one_claim_per_page, claimants_lead, next_page_uncached, released_hold_all, waiting_leader_pins, pending_leader_holds_all,
    nothing_expired,
)


def properties_for(config: Config) -> list[Invariant]:
    """The modelled properties that apply under ``config``, in order."""
    return [p for p in PROPERTIES if p.applies(config)]


def lemmas_for(config: Config) -> list[Invariant]:
    """The lemmas that apply under ``config``, in order."""
    return [x for x in LEMMAS if x.applies(config)]
