"""Hand-written programs for shapes the generators reach rarely, replayed by ``check`` every run.

The corpus is bound to the default scenarios (its programs steer the engine onto spec edges), and the
seeded campaign draws free programs at random; neither is sure to build the few exact orders some
engine mistakes need. Each program here is one such order, written out with the mistake it pins, so
``flightcheck check`` replays it deterministically beside the corpus (the ``shapes`` row of the
conform stage) and a test can use it on a deliberately broken engine.

For example::

    >>> sorted(SHAPES)  # doctest: +NORMALIZE_WHITESPACE
    ['a-hit-does-not-make-room', 'a-hit-refreshes-recency', 'a-lost-leaders-waiters-are-handed-on',
     'a-tie-waits-via-the-earliest-flight', 'an-heir-inherits-the-lost-leaders-wait', 'eos-at-a-later-output',
     'eviction-skips-a-referenced-page', 'recency-follows-allocation-not-publication',
     'the-heir-shares-the-most-pages']
    >>> SHAPES["a-hit-refreshes-recency"].program().setup.config["num_pages"]
    6
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flightcheck.checks.conform.program import Program, Setup, Template
from flightcheck.checks.conform.prompts import class_tokens


@dataclass(frozen=True)
class Shape:
    """A named program and the mistake it pins."""

    name: str
    story: str
    program: Callable[[], Program]


def _a_hit_refreshes_recency() -> Program:
    x = Template(tuple(class_tokens(0, 37, 256)), 1, "X")
    y = Template(tuple(class_tokens(1, 37, 256)), 1, "Y")
    z = Template(tuple(class_tokens(2, 53, 256)), 1, "Z")
    setup = Setup({"coordination": "none", "max_running": 1, "prefill_chunk_pages": 64, "num_pages": 6}, (x, y, z))
    return Program(setup, (("arrive", 0, 0.0, 0), ("step", 3), ("arrive", 1, 0.0, 0), ("step", 3),
                           ("arrive", 0, 0.0, 0), ("step", 3), ("arrive", 2, 0.0, 0), ("step", 4)))


def _eviction_skips_a_referenced_page() -> Program:
    y = Template(tuple(class_tokens(0, 37, 256)), 30, "Y")
    x = Template(tuple(class_tokens(1, 37, 256)), 1, "X")
    z = Template(tuple(class_tokens(2, 53, 256)), 1, "Z")
    setup = Setup({"coordination": "none", "max_running": 2, "prefill_chunk_pages": 1, "num_pages": 9}, (y, x, z))
    return Program(setup, (("arrive", 0, 0.0, 0), ("step", 3), ("arrive", 1, 0.0, 0), ("step", 5),
                           ("arrive", 2, 0.0, 0), ("step", 6)))


def _a_tie_waits_via_the_earliest_flight() -> Program:
    doc = class_tokens(0, 32, 256)
    q1, q2, q3 = (Template(tuple(doc + class_tokens(q, n, 256)), 2, f"Q{q}") for q, n in ((1, 5), (2, 21), (3, 9)))
    setup = Setup({"coordination": "prefix", "release": "on-completion", "publication": "incremental",
                   "max_running": 2, "prefill_chunk_pages": 1, "num_pages": 24}, (q1, q2, q3))
    return Program(setup, (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("arrive", 2, 0.0, 0), ("step", 6)))


def _a_hit_does_not_make_room() -> Program:
    x = Template(tuple(class_tokens(0, 37, 256)), 1, "X")
    z = Template(tuple(class_tokens(1, 16, 256)), 60, "Z")
    setup = Setup({"coordination": "none", "max_running": 2, "prefill_chunk_pages": 64, "num_pages": 7}, (x, z))
    return Program(setup, (("arrive", 0, 0.0, 0), ("step", 3), ("arrive", 1, 0.0, 0), ("step", 1),
                           ("arrive", 0, 0.0, 0), ("step", 3)))


def _recency_follows_allocation_not_publication() -> Program:
    a = Template(tuple(class_tokens(0, 33, 256)), 20, "A")
    b = Template(tuple(class_tokens(1, 33, 256)), 1, "B")
    c = Template(tuple(class_tokens(2, 49, 256)), 1, "C")
    setup = Setup({"coordination": "none", "publication": "on-completion", "max_running": 2,
                   "prefill_chunk_pages": 1, "num_pages": 7}, (a, b, c))
    return Program(setup, (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("step", 30), ("arrive", 2, 0.0, 0),
                           ("step", 5)))


def _eos_at_a_later_output() -> Program:
    # The tiny model repeats its first token when greedy, so an EOS token set from a template's first
    # output ends requests at their first output only; a hot draw (temperature 2, seed 11) gives S the
    # outputs 150, 150, 150, 36, ... and 36 is the first token the model gives T's prompt.
    s = Template(tuple(class_tokens(0, 20, 256)), 6, "S")
    t = Template(tuple(class_tokens(35, 20, 256)), 1, "T")
    setup = Setup({"coordination": "none", "max_running": 1, "prefill_chunk_pages": 64, "num_pages": 4}, (s, t),
                  eos_template=1)
    return Program(setup, (("arrive", 0, 2.0, 11), ("step", 8)))


def _handed_on(templates: tuple[Template, ...], ops: tuple) -> Program:
    setup = Setup({"coordination": "prefix", "release": "after-prefill", "publication": "incremental",
                   "leader_loss": "promote", "max_running": 2, "prefill_chunk_pages": 1, "num_pages": 24}, templates)
    return Program(setup, ops)


def _a_lost_leaders_waiters_are_handed_on() -> Program:
    doc = class_tokens(0, 32, 256)
    q0, q1, q2 = (Template(tuple(doc + class_tokens(q + 1, n, 256)), 2, f"Q{q}") for q, n in ((0, 5), (1, 21), (2, 9)))
    return _handed_on((q0, q1, q2), (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("arrive", 2, 0.0, 0),
                                     ("abort", "leader", 0), ("step", 12)))


def _the_heir_shares_the_most_pages() -> Program:
    doc = class_tokens(0, 32, 256)
    q0 = doc + class_tokens(1, 20, 256)  # three full pages
    q1 = Template(tuple(doc + class_tokens(2, 21, 256)), 2, "Q1")       # shares two pages with Q0
    q2 = Template(tuple(q0[:48] + class_tokens(3, 9, 256)), 2, "Q2")     # shares three
    return _handed_on((Template(tuple(q0), 2, "Q0"), q1, q2),
                      (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("arrive", 2, 0.0, 0), ("abort", "leader", 0),
                       ("step", 12)))


def _an_heir_inherits_the_lost_leaders_wait() -> Program:
    doc = class_tokens(0, 32, 256)
    b = doc + class_tokens(2, 25, 256)
    templates = (Template(tuple(doc + class_tokens(1, 20, 256)), 2, "A"), Template(tuple(b), 2, "B"),
                 Template(tuple(b[:48] + class_tokens(3, 10, 256)), 2, "E"))
    return _handed_on(templates, (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("arrive", 2, 0.0, 0),
                                  ("abort", "leader", 1), ("step", 14)))


SHAPES: dict[str, Shape] = {s.name: s for s in (
    Shape("a-hit-refreshes-recency",
          "X's pages are cached, then Y's; X comes back and hits its pages, which are then the most recently "
          "used; Z needs two of the cached pages. The least recently used leaf is Y's: an engine whose hit "
          "does not refresh its pages (or refreshes them with a clock that did not move) evicts X's.",
          _a_hit_refreshes_recency),
    Shape("eviction-skips-a-referenced-page",
          "Y publishes its pages and keeps decoding (holding them); X computes and finishes later (its pages "
          "stay cached, unreferenced, more recently used); Z's prefill runs the pool short. The least "
          "recently used leaf is Y's, which Y still reads: only an eviction that skips referenced pages "
          "takes X's.", _eviction_skips_a_referenced_page),
    Shape("a-hit-does-not-make-room",
          "X finishes and leaves two cached pages nobody holds; Z runs and reserves four of the five free pages "
          "for its decode; X comes back and would hit both cached pages and need one more. Its hits stop "
          "being evictable as it takes them, so the free and evictable pages (4 + 2) less its hits and Z's "
          "reservation leave none: it waits for Z. An admission that counts its hits as room admits it.",
          _a_hit_does_not_make_room),
    Shape("recency-follows-allocation-not-publication",
          "A and B are admitted together; A computes its pages first, then B (one page a step, no admission or "
          "hit in between); B finishes at once and A decodes on, so under publication on completion B's pages "
          "are cached first. C then needs one of them: the least recently used leaf is A's, computed earlier. "
          "An engine whose allocations do not stamp their pages (or do not move the clock) has the two leaves "
          "tied and takes the one cached first, B's.", _recency_follows_allocation_not_publication),
    Shape("eos-at-a-later-output",
          "S's request, sampled hot, draws an end-of-sequence token at its fourth output, not its first (the "
          "campaigns' EOS tokens end requests at their first output, where the tiny model's greedy runs put "
          "them): an engine that tests another output than the last for EOS runs it on to max_tokens.",
          _eos_at_a_later_output),
    Shape("a-tie-waits-via-the-earliest-flight",
          "Q1 leads a flight over a two-page document; Q2 (the document, another question) waits via Q1's "
          "flight and leads its own; Q3 shares the document's two pages with both open flights. It waits via "
          "the flight whose leader came first, Q1's: an engine that breaks the tie another way (the latest "
          "flight, or no order at all) waits via Q2's.", _a_tie_waits_via_the_earliest_flight),
    Shape("a-lost-leaders-waiters-are-handed-on",
          "Q1 and Q2 (other questions over Q0's document) wait via Q0's flight; Q0 is cancelled before it "
          "computes anything and has no follower to promote (leader loss promote). Its waiters are handed on: "
          "Q1 (of the two sharing equally much with Q0, the one that came first) goes to admission and Q2 waits "
          "via Q1's flight. An engine that frees both has both compute the document; one that breaks the tie "
          "the other way sends Q2.", _a_lost_leaders_waiters_are_handed_on),
    Shape("the-heir-shares-the-most-pages",
          "Q1 shares two pages with Q0 and waits via its flight; Q2, later, shares three and waits via it too. "
          "Q0 is cancelled with nobody to promote: the heir is Q2, which shares the most with Q0 (Q1 then waits "
          "via Q2's flight for the document). An engine that picks the earliest waiter sends Q1.",
          _the_heir_shares_the_most_pages),
    Shape("an-heir-inherits-the-lost-leaders-wait",
          "B waits via A's flight; E shares three pages with B and waits via B's. B is cancelled with nobody to "
          "promote: E, its heir, takes over B's wait via A (the release frees nobody) and pins A's document "
          "when A's flight is released. An engine that sends E to admission has it compute the document "
          "beside A.", _an_heir_inherits_the_lost_leaders_wait),
)}
