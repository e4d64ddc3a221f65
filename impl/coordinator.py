"""The single-flight coordinator, in the seed's final design.

Three plain structures and nothing else:

- ``flights``: flight id -> ``Flight(input_token_ids, leader_request_id, follower_request_ids)``;
  the flight id is the leader's request id;
- ``index``: exact input token ids -> the open flight for that input;
- ``released_request_ids``: requests that are live but belong to no flight (released followers, a
  leader whose flight was released early, followers whose wait expired, every request under
  coordination "none").

A flight is named by the request that opened it; its leader may change: when the leader is lost
(aborted, or its forward pass failed) before the release point, ``promote`` hands the flight to its
first follower of the same input, the others keep waiting.

Under coordination "prefix" a new leader may also wait *via* another open flight whose prompt shares
at least ``min_shared_pages`` of its shareable pages (the longest overlap wins; ties go to the flight
whose current leader arrived first): its own flight records ``via_flight_id``, the other flight lists
it in ``via_request_ids``. A fourth structure finds those flights: ``by_page_key``, chained page key ->
the open flights whose prompts pass through that page (a chained key names its whole prefix, so a
flight listed under a request's k-th key shares at least k + 1 pages with it).

Why no Active/Draining flight state: a released flight has nothing left to coordinate; the only thing
still needed is to recognise its requests when they terminate, which the released set does across
flights. Termination of an ID the coordinator does not know is an error (``UnknownRequestError``),
raised before anything changes, never silently ignored.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from flightcheck.impl.errors import UnknownRequestError

Role = Literal["leader", "follower", "solo"]
COORDINATIONS = ("none", "single-flight", "prefix")


@dataclass(slots=True)
class Flight:
    input_token_ids: tuple[int, ...]
    leader_request_id: int
    follower_request_ids: deque[int] = field(default_factory=deque)
    # Why a flag and not a state enum: between a leader's termination and the release that it
    # enables (the same engine call) the flight must remember that nobody computes for it any more.
    is_leader_live: bool = True
    # Why on the flight and not the request: one input has one list of page keys, so every leader the
    # flight will ever have (promotion hands it to a follower of the same input) shares the same pages.
    page_keys: tuple[str, ...] = ()
    via_flight_id: int | None = None       # the flight its leader waits via (coordination "prefix")
    via_request_ids: list[int] = field(default_factory=list)  # leaders waiting via this flight, by arrival


def num_shared(a: tuple[str, ...] | list[str], b: tuple[str, ...] | list[str]) -> int:
    """The length of the common prefix of two chained page-key lists: the pages two prompts share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class Decision:
    role: Role
    flight_id: int | None
    via_flight_id: int | None = None     # a leader that waits via another flight first ("prefix")
    shared_pages: int = 0                # ... sharing this many pages with that flight's prompt


@dataclass(frozen=True, slots=True)
class Termination:
    """What a termination touched: "released" (the released set), "leader" (its flight needs release) or "follower"."""

    kind: Literal["released", "leader", "follower"]
    flight_id: int | None


@dataclass(slots=True)
class Coordinator:
    """The single-flight table: which request leads the computation of each input, who follows it,
    and who has been released.

    ``arrive`` decides a new request's role (a leader opens a flight; an identical request, or under
    coordination "prefix" one sharing at least ``min_shared_pages`` pages, waits as a follower or via
    another prompt's flight); ``release`` hands a flight's followers to the scheduler and closes it;
    ``terminate`` says what a request's end touched. It owns no pages and runs no model: the scheduler
    (:mod:`flightcheck.impl.scheduler`) and :mod:`flightcheck.impl.flights` decide when, and emit the
    events. Its state maps onto the spec's per-request ``fl`` (flight), ``mem`` (member of) and ``rel``
    (released) slots, the per-class ``idx`` (the flight open for an input) and ``via``."""

    coordination: str = "single-flight"
    min_shared_pages: int = 1
    flights: dict[int, Flight] = field(default_factory=dict)
    index: dict[tuple[int, ...], int] = field(default_factory=dict)
    released_request_ids: set[int] = field(default_factory=set)
    by_page_key: dict[str, set[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.coordination not in COORDINATIONS:
            raise ValueError(f"coordination must be one of {COORDINATIONS}, got {self.coordination!r}")
        if isinstance(self.min_shared_pages, bool) or not isinstance(self.min_shared_pages, int) \
                or self.min_shared_pages < 1:
            raise ValueError(f"min_shared_pages must be an integer >= 1, got {self.min_shared_pages!r}")

    # --- arrive: lead / follow / solo ----------------------------------------------------------
    def arrive(self, request_id: int, token_ids: tuple[int, ...], page_keys: tuple[str, ...] | list[str] = ()) -> Decision:
        """Decides the role of a new request and records it (``page_keys``: the chained keys of its
        shareable pages, which coordination "prefix" compares with the open flights')."""
        assert not self.is_known(request_id), f"request {request_id} arrived twice"
        if self.coordination == "none":
            self.released_request_ids.add(request_id)
            return Decision("solo", None)
        flight_id = self.index.get(token_ids)
        if flight_id is not None:
            self.flights[flight_id].follower_request_ids.append(request_id)
            return Decision("follower", flight_id)
        # Why the choice before the new flight is indexed: a request never waits via its own flight.
        via_id, shared = self.can_wait_via(page_keys) if self.coordination == "prefix" else (None, 0)
        flight = Flight(token_ids, request_id, page_keys=tuple(page_keys), via_flight_id=via_id)
        self.flights[request_id] = flight
        self.index[token_ids] = request_id
        for key in flight.page_keys:
            self.by_page_key.setdefault(key, set()).add(request_id)
        if via_id is not None:
            self.flights[via_id].via_request_ids.append(request_id)
        return Decision("leader", request_id, via_id, shared)

    def can_wait_via(self, page_keys: tuple[str, ...] | list[str]) -> tuple[int | None, int]:
        """The open flight a new leader with these page keys would wait via, and the pages they share:
        the largest overlap of at least ``min_shared_pages``; among equals, the flight whose current
        leader arrived first (request IDs grow with arrival). ``(None, 0)`` when no flight qualifies.

        Why from the longest prefix down: a flight listed under the k-th key shares at least k + 1
        pages, and none shares more once the longer keys listed nobody, so the first hit is the largest."""
        for k in range(len(page_keys) - 1, self.min_shared_pages - 2, -1):
            flight_ids = self.by_page_key.get(page_keys[k])
            if flight_ids:
                return min(flight_ids, key=lambda f: self.flights[f].leader_request_id), k + 1
        return None, 0

    # --- release -------------------------------------------------------------------------------
    def release(self, flight_id: int) -> list[int]:
        """Closes a flight: removes it and its index entries; its followers (and a live leader) become
        released; the leaders waiting via it stop waiting (they keep leading their own flights, read
        them from ``via_request_ids`` first). Returns the followers in arrival order (the order they
        join the waiting queue)."""
        flight = self.flights.pop(flight_id)
        del self.index[flight.input_token_ids]
        for key in flight.page_keys:
            holders = self.by_page_key[key]
            holders.discard(flight_id)
            if not holders:
                del self.by_page_key[key]
        for waiter_id in flight.via_request_ids:
            self.flights[self.flight_led_by(waiter_id)].via_flight_id = None
        if flight.via_flight_id is not None:
            # Why: only a lost leader's flight is released while its leader still waits via another.
            self.flights[flight.via_flight_id].via_request_ids.remove(flight.leader_request_id)
        followers = list(flight.follower_request_ids)
        self.released_request_ids.update(followers)
        if flight.is_leader_live:
            self.released_request_ids.add(flight.leader_request_id)
        return followers

    def hand_on_waiters(self, flight_id: int) -> tuple[int, int | None]:
        """A lost leader's flight, released with nobody to promote, hands its waiters on (coordination
        "prefix", leader loss "promote"): the waiter whose prompt shares the most pages with it (the
        earliest on a tie) is the heir, every other waiter waits via the heir's flight, and if the lost
        leader itself waited via another flight the heir takes its place there. Returns the heir and the
        flight it now waits via (None: it goes to admission). Call before :meth:`release`.

        Why: freeing every waiter at once would have two other prompts compute the pages they share with
        this one (the spec's variant ``waiters-all-freed``)."""
        flight = self.flights[flight_id]
        assert not flight.is_leader_live and flight.via_request_ids, f"flight {flight_id}: no lost leader's waiters"
        waiters = list(flight.via_request_ids)
        heir = max(waiters, key=lambda w: (num_shared(self.flights[self.flight_led_by(w)].page_keys,
                                                      flight.page_keys), -w))
        heir_flight_id = self.flight_led_by(heir)
        heir_flight = self.flights[heir_flight_id]
        for w in waiters:
            if w != heir:
                self.flights[self.flight_led_by(w)].via_flight_id = heir_flight_id
                heir_flight.via_request_ids.append(w)
        heir_flight.via_request_ids.sort()  # Why: the lists keep arrival order (request IDs grow with it)
        inherited = flight.via_flight_id
        heir_flight.via_flight_id = inherited
        if inherited is not None:  # the heir takes the lost leader's place in that flight's list
            others = self.flights[inherited].via_request_ids
            others[others.index(flight.leader_request_id)] = heir
            others.sort()
            flight.via_flight_id = None
        flight.via_request_ids = []
        return heir, inherited

    def expire(self, flight_id: int, request_id: int) -> None:
        """A follower whose wait ran out leaves its flight for the released set (ahead of the flight);
        a leader waiting via ``flight_id`` stops waiting and keeps leading its own flight."""
        flight = self.flights[flight_id]
        if request_id in flight.via_request_ids:
            flight.via_request_ids.remove(request_id)
            self.flights[self.flight_led_by(request_id)].via_flight_id = None
            return
        flight.follower_request_ids.remove(request_id)
        self.released_request_ids.add(request_id)

    def can_promote(self, flight_id: int) -> int | None:
        """The follower a lost leader's flight would be handed to: the first one still waiting, or None."""
        flight = self.flights[flight_id]
        if flight.is_leader_live or not flight.follower_request_ids:
            return None
        return flight.follower_request_ids[0]

    def promote(self, flight_id: int) -> int:
        """Hands a lost leader's flight to its first follower, which leads it from now on; returns its ID."""
        request_id = self.can_promote(flight_id)
        assert request_id is not None, f"flight {flight_id} has no follower to promote"
        flight = self.flights[flight_id]
        flight.follower_request_ids.popleft()
        if flight.via_flight_id is not None:  # the lost leader waited via another flight: so does its heir
            waiters = self.flights[flight.via_flight_id].via_request_ids
            waiters[waiters.index(flight.leader_request_id)] = request_id
        flight.leader_request_id = request_id
        flight.is_leader_live = True
        return request_id

    # --- terminate -----------------------------------------------------------------------------
    def terminate(self, request_id: int) -> Termination:
        """Records that a request finished or was aborted; unknown IDs raise with nothing changed."""
        if request_id in self.released_request_ids:
            self.released_request_ids.remove(request_id)
            return Termination("released", None)
        for flight_id, flight in self.flights.items():
            if flight.leader_request_id == request_id and flight.is_leader_live:
                flight.is_leader_live = False
                return Termination("leader", flight_id)
            if request_id in flight.follower_request_ids:
                flight.follower_request_ids.remove(request_id)
                return Termination("follower", flight_id)
        raise UnknownRequestError(request_id, "never submitted or already terminated")

    def is_known(self, request_id: int) -> bool:
        """Whether the coordinator would accept a termination of ``request_id``."""
        if request_id in self.released_request_ids:
            return True
        return any((f.leader_request_id == request_id and f.is_leader_live) or request_id in f.follower_request_ids
                   for f in self.flights.values())

    def flight_of(self, request_id: int) -> int | None:
        """The open flight that ``request_id`` leads or follows, if any."""
        for flight_id, flight in self.flights.items():
            if flight.leader_request_id == request_id or request_id in flight.follower_request_ids:
                return flight_id
        return None

    def flight_led_by(self, request_id: int) -> int:
        """The open flight ``request_id`` leads (a promoted follower leads a flight named by another ID)."""
        return next(fid for fid, f in self.flights.items() if f.leader_request_id == request_id)

    def snapshot(self) -> tuple:
        """A comparable picture of the coordinator (for before/after comparisons in tests)."""
        return (tuple(sorted((fid, f.input_token_ids, f.leader_request_id, tuple(f.follower_request_ids),
                              f.is_leader_live, f.page_keys, f.via_flight_id, tuple(f.via_request_ids))
                             for fid, f in self.flights.items())),
                tuple(sorted(self.index.items())), tuple(sorted(self.released_request_ids)),
                tuple(sorted((k, tuple(sorted(v))) for k, v in self.by_page_key.items())))
