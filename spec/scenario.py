"""Scenarios and policies: what may arrive, and how the engine is configured.

A :class:`Scenario` lists the requests that may arrive (each with a prompt class, its number of full
prompt pages, whether it has a partial tail page and how many tokens that tail holds, and how many
decode steps it may take) together with the environment's options: client aborts, unknown-ID
notifications, background eviction, follower wait expiry, forward-pass failures, and the size of the
page pool (when it is set, memory is modelled: admission reserves every page a request may need, and
the engine evicts unreferenced cached pages only when an allocation finds too few free ones). A
:class:`Policy` holds the engine's knobs, each declared once in :mod:`flightcheck.spec.knobs`.

Requests of the same class have identical input tokens, so they have the same pages. Only a prompt's
*shareable* pages are ever published: a hit covers at most the prompt length minus one token, so with a
tail the shareable pages are all full pages, and without one the last full page is recomputed. A prompt
shorter than one page has no shareable page at all.

For example::

    >>> scn = SCENARIOS["burst2"]
    >>> [r.cls for r in scn.requests]
    [0, 0]
    >>> scn.requests[0].num_shareable, scn.requests[0].num_lifetime_pages
    (2, 3)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from flightcheck.spec.knobs import check_all, choices, declare, label

# Each string knob's names, read from its one declaration (spec/knobs.py): the tuples that commands, checks
# and the validator read.
COORDINATIONS: tuple[str, ...] = choices("coordination")
RELEASES: tuple[str, ...] = choices("release")
PUBLICATIONS: tuple[str, ...] = choices("publication")
LEADER_LOSSES: tuple[str, ...] = choices("leader_loss")

# Tokens per KV page, as in the engine (impl/pages.py; tests/spec/test_spec_model.py holds them equal).
PAGE_TOKENS = 16


@dataclass(frozen=True)
class Request:
    """One request that may arrive: its prompt class and its size in pages and decode steps.

    ``num_pages`` counts full prompt pages, ``has_tail`` says whether a partial page of ``tail_tokens``
    tokens follows them, ``num_decode`` is the largest number of decode steps after the first token (the
    request may finish earlier, as on EOS or a stop string). The tail's length only matters for memory:
    it decides at which decode step a new page is needed.
    """

    cls: int
    num_pages: int
    has_tail: bool = True
    num_decode: int = 1
    tail_tokens: int = 5

    def __post_init__(self) -> None:
        if self.cls < 0:
            raise ValueError(f"request class must be >= 0, got {self.cls}")
        if self.num_pages < 0:
            raise ValueError(f"num_pages must be >= 0, got {self.num_pages}")
        if self.num_pages == 0 and not self.has_tail:
            raise ValueError("a request needs at least one token: num_pages=0 needs a tail")
        if self.num_decode < 0:
            raise ValueError(f"num_decode must be >= 0, got {self.num_decode}")
        if self.has_tail and not 1 <= self.tail_tokens < PAGE_TOKENS:
            raise ValueError(f"tail_tokens must be 1..{PAGE_TOKENS - 1}, got {self.tail_tokens}")

    @property
    def num_units(self) -> int:
        """Prefill units: each full page, plus the tail if there is one (each unit is one page)."""
        return self.num_pages + (1 if self.has_tail else 0)

    @property
    def num_shareable(self) -> int:
        """Pages a later identical request can recover (a hit covers at most length - 1 tokens)."""
        return self.num_pages if self.has_tail else self.num_pages - 1

    @property
    def num_tokens(self) -> int:
        """Prompt length in tokens."""
        return PAGE_TOKENS * self.num_pages + (self.tail_tokens if self.has_tail else 0)

    def pages_after(self, num_decoded: int) -> int:
        """Pages in the request's block table once its prompt and ``num_decoded`` decode steps are done
        (decode step d writes the K/V of position ``num_tokens + d - 1``)."""
        return -(-(self.num_tokens + num_decoded) // PAGE_TOKENS)

    @property
    def num_lifetime_pages(self) -> int:
        """Every page the request may ever hold: what admission reserves."""
        return self.pages_after(self.num_decode)


@dataclass(frozen=True)
@declare
class Policy:
    """The engine's configuration: every knob the spec is parameterised by.

    Its fields are the knobs of :data:`~flightcheck.spec.knobs.KNOBS`, one each, typed, defaulted and
    checked as declared there, where each knob's meaning is said; :mod:`flightcheck.spec.model` reads them.

    For example::

        >>> Policy(leader_loss="promote").label()
        'single-flight/after-prefill/incremental cap=2 chunk=1 promote'
    """

    def __post_init__(self) -> None:
        check_all(self.__dict__)
        if self.single_flight and not self.prefix_caching:
            raise ValueError(f"coordination {self.coordination} needs prefix caching: followers wait to reuse pages")

    @property
    def single_flight(self) -> bool:
        """True when identical inputs are coordinated (``single-flight`` and ``prefix``): there are flights."""
        return self.coordination != "none"

    @property
    def prefix_flights(self) -> bool:
        """True when a request may also wait via a flight of another prompt that shares its first pages."""
        return self.coordination == "prefix"

    def label(self) -> str:
        """A short human label, e.g. ``single-flight/after-prefill/incremental cap=2 chunk=1``."""
        return label(self.__dict__)


@dataclass(frozen=True)
class Scenario:
    """The requests that may arrive, the environment's options, and the default policy.

    ``aborts`` lets the client cancel any live request; ``notifications`` sends termination
    notifications for IDs that were never submitted or have already terminated; ``eviction`` lets the
    cache lose any unreferenced leaf page at any time (pressure from outside this engine: the strongest
    assumption a design can survive); ``num_pages`` sets the page pool (memory modelled: admission by
    reserved lifetime pages, eviction only when an allocation needs it); ``expiry`` lets a blocked
    follower's wait run out (it then computes for itself); ``failures`` lets a running request's forward
    pass fail (the engine fails that request and hands its flight to the leader-loss policy).

    ``prefixes`` makes the prompt classes a tree of pages: an entry ``(cls, parent, n)`` says that the
    first ``n`` shareable pages of class ``cls`` are those of the earlier class ``parent`` (two
    questions over one document, a conversation whose turn extends the last). Such a page is one page
    slot, cached once and referenced by every request whose prompt passes through it. Classes with no
    entry share nothing; the identical-prompt scenarios are trees of one path per class.
    """

    name: str
    requests: tuple[Request, ...]
    policy: Policy = field(default_factory=Policy)
    aborts: bool = False
    notifications: bool = False
    eviction: bool = False
    num_pages: int | None = None
    expiry: bool = False
    failures: bool = False
    prefixes: tuple[tuple[int, int, int], ...] = ()
    story: str = ""

    def __post_init__(self) -> None:
        if not self.requests:
            raise ValueError("a scenario needs at least one request")
        by_cls: dict[int, Request] = {}
        for r in self.requests:
            prev = by_cls.setdefault(r.cls, r)
            if (prev.num_pages, prev.has_tail, prev.tail_tokens if prev.has_tail else 0) != \
                    (r.num_pages, r.has_tail, r.tail_tokens if r.has_tail else 0):
                raise ValueError(f"requests of class {r.cls} must have identical prompts (pages and tail)")
        order = list(dict.fromkeys(r.cls for r in self.requests))
        seen: set[int] = set()
        for entry in self.prefixes:
            if len(entry) != 3:
                raise ValueError(f"a prefix entry is (cls, parent, num_shared_pages), got {entry!r}")
            c, parent, n = entry
            if c not in by_cls or parent not in by_cls:
                raise ValueError(f"prefix entry {entry!r} names a class no request has")
            if order.index(parent) >= order.index(c):
                raise ValueError(f"prefix entry {entry!r}: the parent class must appear before the child")
            if c in seen:
                raise ValueError(f"class {c} has two prefix entries; give it one parent")
            seen.add(c)
            most = min(by_cls[c].num_shareable, by_cls[parent].num_shareable)
            if not 1 <= n <= most:
                raise ValueError(f"prefix entry {entry!r}: classes {c} and {parent} can share 1..{most} shareable pages")
        if self.num_pages is not None and self.eviction:
            raise ValueError("a scenario models either the engine's own pool (num_pages: eviction under memory "
                             "pressure) or background eviction at any time (eviction=True), not both")
        if self.num_pages is not None:
            need = max(r.num_lifetime_pages for r in self.requests)
            if self.num_pages < need:
                raise ValueError(f"num_pages={self.num_pages} cannot hold a request that needs {need} pages "
                                 "(the engine refuses such a request at arrival)")

    @property
    def num_requests(self) -> int:
        """Number of requests that may arrive."""
        return len(self.requests)

    @property
    def classes(self) -> tuple[int, ...]:
        """The prompt classes, in order of first appearance."""
        return tuple(dict.fromkeys(r.cls for r in self.requests))

    def parent_of(self, cls: int) -> tuple[int, int] | None:
        """``(parent class, shared shareable pages)`` of a class in the prompt tree, or None."""
        return next(((p, n) for c, p, n in self.prefixes if c == cls), None)

    def class_request(self, cls: int) -> Request:
        """The first request of a class (all requests of a class share its prompt)."""
        return next(r for r in self.requests if r.cls == cls)

    @property
    def has_pool(self) -> bool:
        """Memory is modelled: the pool has ``num_pages`` pages."""
        return self.num_pages is not None

    def with_policy(self, **changes) -> "Scenario":
        """The same scenario under a changed policy, e.g. ``scn.with_policy(release="on-completion")``."""
        return replace(self, policy=replace(self.policy, **changes))

    def with_options(self, **changes) -> "Scenario":
        """The same scenario with changed environment options, e.g. ``scn.with_options(aborts=True)``."""
        return replace(self, **changes)


def burst(n: int, *, classes: int = 1, pages: int = 2, decode: int = 1, name: str | None = None, **options) -> Scenario:
    """A burst of ``n`` requests spread round-robin over ``classes`` prompt classes.

    For example::

        >>> burst(3, classes=2).requests[2].cls
        0
    """
    reqs = tuple(Request(cls=i % classes, num_pages=pages, num_decode=decode) for i in range(n))
    return Scenario(name=name or f"burst{n}" + (f"x{classes}" if classes > 1 else ""), requests=reqs, **options)


def tree(name: str, classes: tuple[int, ...], *, pages: int = 2, shared: int = 1, story: str = "",
         policy: Policy | None = None, **options) -> Scenario:
    """One document and questions over it: every class has ``pages`` full pages and a tail, and each
    class after the first shares its first ``shared`` pages with class 0 (prefix coordination).

    For example::

        >>> scn = tree("t", (0, 1))
        >>> scn.prefixes, scn.policy.coordination
        (((1, 0, 1),), 'prefix')
    """
    reqs = tuple(Request(cls=c, num_pages=pages) for c in classes)
    prefixes = tuple((c, 0, shared) for c in dict.fromkeys(classes) if c != 0)
    return Scenario(name=name, requests=reqs, prefixes=prefixes, policy=policy or Policy(coordination="prefix"),
                    story=story, **options)


def _numbered() -> dict[str, Scenario]:
    """The default scenarios, in the order docs/spec.md walks through them."""
    promote = Policy(leader_loss="promote")
    s = [
        burst(2, name="burst2", story="Two identical requests reach a cold cache: the seed's opening example."),
        burst(3, name="burst3", story="Three identical requests: one leader, two followers."),
        burst(2, name="burst2-abort", aborts=True, notifications=True,
              story="Two identical requests with client cancels (the leader's too) and bogus terminations."),
        burst(3, name="burst3-abort", aborts=True, notifications=True,
              story="Three identical requests with cancels and bogus terminations; the leader lost releases everyone."),
        burst(3, name="burst3-fail", failures=True, policy=promote,
              story="A forward pass fails for the leader: the engine fails it and promotes a follower."),
        burst(3, name="burst3-expire", expiry=True,
              story="A follower's wait runs out: it computes for itself; single_prefill holds only in its weakened form."),
        burst(3, classes=2, name="mixed3", story="Two classes: coordination only between identical inputs."),
        burst(2, name="burst2-cap1", policy=Policy(capacity=1), eviction=True,
              story="Capacity 1 with background eviction: released followers queue behind the leader."),
        burst(2, name="burst2-evict", eviction=True, aborts=True,
              story="Background eviction of unreferenced pages, with cancels."),
        burst(3, name="burst3-evict", eviction=True,
              story="Three identical requests and background eviction: released followers pin the leader's pages."),
        burst(3, classes=2, name="mixed3-pool", num_pages=4, decode=2,
              story="A pool of 4 pages for two classes: admission waits for memory, allocation evicts."),
        burst(4, name="burst4-abort", aborts=True, notifications=True,
              story="Four identical requests with cancels: the most requests of any default scenario."),
        Scenario(name="notail", requests=(Request(0, 2, has_tail=False), Request(0, 2, has_tail=False)),
                 story="Prompts of whole pages: the last full page is recomputed by every request."),
        Scenario(name="short", requests=(Request(0, 0), Request(0, 0), Request(1, 1)),
                 story="Prompts shorter than a page share nothing: their flights release at once."),
        burst(2, name="nocache", policy=Policy(coordination="none", prefix_caching=False), num_pages=3,
              story="Prefix caching off: nothing is looked up or published; a pool of 3 pages admits one at a time."),
        tree("doc2", (0, 1), story="Two questions over one document: the first page is shared, the second is each one's own."),
        tree("doc3", (0, 1, 1), story="One question, then two identical others over the same document."),
        tree("doc3-abort", (0, 1, 1), aborts=True, notifications=True, eviction=True,
             story="A document and two questions with cancels and eviction: a lost leader's wait passes to the "
                   "follower it promotes."),
        tree("doc3-evict", (0, 1, 0), eviction=True,
             story="Background eviction under a shared parent: leaves go first, a parent a child needs stays."),
        tree("doc3-pool", (0, 1, 1), pages=3, shared=2, num_pages=4,
             story="A pool of 4 pages for a three-page document with two questions: a shared page is counted once."),
        tree("doc3-expire", (0, 1, 1), expiry=True,
             story="A request waiting via another question's flight gives up and computes the document itself."),
        tree("tri-abort", (0, 1, 2), aborts=True, policy=Policy(coordination="prefix", leader_loss="promote"),
             story="A document and two different questions, its leader cancelled before computing it: nobody "
                   "can be promoted, so the first waiter takes over and the other waits via it."),
        Scenario(name="chat2", requests=(Request(0, 1), Request(1, 2), Request(1, 2)), prefixes=((1, 0, 1),),
                 policy=Policy(coordination="prefix"),
                 story="A conversation: the second turn extends the first, so its first page is the first turn's."),
    ]
    return {scn.name: scn for scn in s}


SCENARIOS: dict[str, Scenario] = _numbered()


# ---------------------------------------------------------------- scale scenarios (batched explorer)
# Larger scopes for the batched explorer, `flightcheck explore --scenario NAME` and
# scripts/bench_explore.py (the cross-check against SPIN). Kept apart from the numbered defaults,
# which stay small enough for the reference explorer and for pictures; each count is pinned in
# tests/explore/test_scale.py.
def _scale() -> dict[str, Scenario]:
    """The scale scenarios, smallest first."""
    s = [burst(n, name=f"burst{n}", story=f"{n} identical requests at a cold cache.") for n in range(4, 9)]
    s += [
        burst(4, classes=2, eviction=True, name="mixed4-evict",
              story="Two prompts, two requests each, with eviction of unreferenced pages."),
        burst(6, classes=2, eviction=True, name="mixed6-evict",
              story="Two prompts, three requests each, with eviction: released followers pin the leader's pages."),
        burst(8, decode=2, aborts=True, name="burst8-abort",
              story="Eight identical requests, two decode steps, capacity 2, client cancels."),
    ]
    return {scn.name: scn for scn in s}


SCALE_SCENARIOS: dict[str, Scenario] = _scale()


def policy_grid(scenario: Scenario) -> list[Scenario]:
    """The scenario under every policy it is checked with: both release points and both publications,
    both leader-loss policies where a leader can be lost (aborts or failures), and, on a prompt tree,
    every coordination (prefix, exact single-flight, none)."""
    coords = ("prefix", *(c for c in COORDINATIONS if c != "prefix")) if scenario.prefixes else (scenario.policy.coordination,)
    out = []
    for coord in coords:
        scn = scenario.with_policy(coordination=coord)
        losses = LEADER_LOSSES if (scn.aborts or scn.failures) and scn.policy.single_flight else (scn.policy.leader_loss,)
        out += [scn.with_policy(release=r, publication=p, leader_loss=ll)
                for ll in losses for r in RELEASES for p in PUBLICATIONS]
    return out
