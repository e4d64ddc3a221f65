"""Scenarios and policies: what may arrive, and how the engine is configured.

A :class:`Scenario` lists the requests that may arrive (each with a prompt class, its number of full
prompt pages, whether it has a partial tail page, and how many decode steps it may take) together with
the environment's options (aborts, unknown-ID notifications, eviction). A :class:`Policy` holds the
engine's knobs: coordination, release point, publication, running capacity, prefill chunk.

Requests of the same class have identical input tokens, so they have the same pages. Only a prompt's
*shareable* pages are ever published: a hit covers at most the prompt length minus one token, so with a
tail the shareable pages are all full pages, and without one the last full page is recomputed.

For example::

    >>> scn = SCENARIOS["burst2"]
    >>> [r.cls for r in scn.requests]
    [0, 0]
    >>> scn.requests[0].num_shareable
    2
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

Coordination = Literal["single-flight", "none"]
Release = Literal["after-prefill", "on-completion"]
Publication = Literal["incremental", "on-completion"]

COORDINATIONS: tuple[str, ...] = ("single-flight", "none")
RELEASES: tuple[str, ...] = ("after-prefill", "on-completion")
PUBLICATIONS: tuple[str, ...] = ("incremental", "on-completion")


@dataclass(frozen=True)
class Request:
    """One request that may arrive: its prompt class and its size in pages and decode steps.

    ``num_pages`` counts full prompt pages, ``has_tail`` says whether a partial page follows them,
    ``num_decode`` is the largest number of decode steps after the first token (the request may finish
    earlier, as on EOS or a stop string).
    """

    cls: int
    num_pages: int
    has_tail: bool = True
    num_decode: int = 1

    def __post_init__(self) -> None:
        if self.cls < 0:
            raise ValueError(f"request class must be >= 0, got {self.cls}")
        if self.num_pages < 1:
            raise ValueError(f"a request needs at least one full page, got num_pages={self.num_pages}")
        if self.num_decode < 0:
            raise ValueError(f"num_decode must be >= 0, got {self.num_decode}")

    @property
    def num_units(self) -> int:
        """Prefill units: each full page, plus the tail if there is one."""
        return self.num_pages + (1 if self.has_tail else 0)

    @property
    def num_shareable(self) -> int:
        """Pages a later identical request can recover (a hit covers at most length - 1 tokens)."""
        return self.num_pages if self.has_tail else self.num_pages - 1


@dataclass(frozen=True)
class Policy:
    """The engine's configuration: every knob the spec is parameterised by."""

    coordination: str = "single-flight"
    release: str = "after-prefill"
    publication: str = "incremental"
    capacity: int = 2
    chunk: int = 1

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("coordination", self.coordination, COORDINATIONS),
            ("release", self.release, RELEASES),
            ("publication", self.publication, PUBLICATIONS),
        ):
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(allowed)}")
        if self.capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {self.capacity}")
        if self.chunk < 1:
            raise ValueError(f"chunk must be >= 1 page, got {self.chunk}")

    @property
    def single_flight(self) -> bool:
        """True when identical inputs are coordinated."""
        return self.coordination == "single-flight"

    def label(self) -> str:
        """A short human label, e.g. ``single-flight/after-prefill/incremental cap=2 chunk=1``."""
        return f"{self.coordination}/{self.release}/{self.publication} cap={self.capacity} chunk={self.chunk}"


@dataclass(frozen=True)
class Scenario:
    """The requests that may arrive, the environment's options, and the default policy.

    ``aborts`` lets the client cancel any live request; ``notifications`` sends termination
    notifications for IDs that were never submitted or have already terminated; ``eviction`` lets
    unreferenced published pages be evicted.
    """

    name: str
    requests: tuple[Request, ...]
    policy: Policy = field(default_factory=Policy)
    aborts: bool = False
    notifications: bool = False
    eviction: bool = False
    story: str = ""

    def __post_init__(self) -> None:
        if not self.requests:
            raise ValueError("a scenario needs at least one request")
        by_cls: dict[int, Request] = {}
        for r in self.requests:
            prev = by_cls.setdefault(r.cls, r)
            if (prev.num_pages, prev.has_tail) != (r.num_pages, r.has_tail):
                raise ValueError(f"requests of class {r.cls} must have identical prompts (pages and tail)")

    @property
    def num_requests(self) -> int:
        """Number of requests that may arrive."""
        return len(self.requests)

    @property
    def classes(self) -> tuple[int, ...]:
        """The prompt classes, in order of first appearance."""
        return tuple(dict.fromkeys(r.cls for r in self.requests))

    def class_request(self, cls: int) -> Request:
        """The first request of a class (all requests of a class share its prompt)."""
        return next(r for r in self.requests if r.cls == cls)

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


def _numbered() -> dict[str, Scenario]:
    """The default scenarios, in the order the README walks through them."""
    s = [
        burst(2, name="burst2", story="Two identical requests reach a cold cache: the seed's opening example."),
        burst(3, name="burst3", story="Three identical requests: one leader, two followers."),
        burst(2, name="burst2-abort", aborts=True, notifications=True,
              story="Two identical requests with client cancels (the leader's too) and bogus terminations."),
        burst(3, name="burst3-abort", aborts=True, notifications=True,
              story="Three identical requests with cancels and bogus terminations."),
        burst(3, classes=2, name="mixed3", story="Two classes: coordination only between identical inputs."),
        burst(2, name="burst2-cap1", policy=Policy(capacity=1), eviction=True,
              story="Capacity 1 with eviction: released followers queue behind the leader."),
        burst(2, name="burst2-evict", eviction=True, aborts=True,
              story="Eviction of unreferenced pages, with cancels."),
        burst(4, name="burst4-abort", aborts=True, notifications=True,
              story="The largest default scenario: four identical requests with cancels."),
        Scenario(name="notail", requests=(Request(0, 2, has_tail=False), Request(0, 2, has_tail=False)),
                 story="Prompts of whole pages: the last full page is recomputed by every request."),
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
              story="Two prompts, three requests each, with eviction: the eviction gap of released followers."),
        burst(8, decode=2, aborts=True, name="burst8-abort",
              story="Eight identical requests, two decode steps, capacity 2, client cancels."),
    ]
    return {scn.name: scn for scn in s}


SCALE_SCENARIOS: dict[str, Scenario] = _scale()
