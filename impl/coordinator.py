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
COORDINATIONS = ("none", "single-flight")


@dataclass(slots=True)
class Flight:
    input_token_ids: tuple[int, ...]
    leader_request_id: int
    follower_request_ids: deque[int] = field(default_factory=deque)
    # Why a flag and not a state enum: between a leader's termination and the release that it
    # enables (the same engine call) the flight must remember that nobody computes for it any more.
    is_leader_live: bool = True


@dataclass(frozen=True, slots=True)
class Decision:
    role: Role
    flight_id: int | None


@dataclass(frozen=True, slots=True)
class Termination:
    """What a termination touched: "released" (the released set), "leader" (its flight needs release) or "follower"."""

    kind: Literal["released", "leader", "follower"]
    flight_id: int | None


@dataclass(slots=True)
class Coordinator:
    coordination: str = "single-flight"
    flights: dict[int, Flight] = field(default_factory=dict)
    index: dict[tuple[int, ...], int] = field(default_factory=dict)
    released_request_ids: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.coordination not in COORDINATIONS:
            raise ValueError(f"coordination must be one of {COORDINATIONS}, got {self.coordination!r}")

    # --- arrive: lead / follow / solo ----------------------------------------------------------
    def arrive(self, request_id: int, token_ids: tuple[int, ...]) -> Decision:
        """Decides the role of a new request and records it."""
        assert not self.is_known(request_id), f"request {request_id} arrived twice"
        if self.coordination == "none":
            self.released_request_ids.add(request_id)
            return Decision("solo", None)
        flight_id = self.index.get(token_ids)
        if flight_id is not None:
            self.flights[flight_id].follower_request_ids.append(request_id)
            return Decision("follower", flight_id)
        self.flights[request_id] = Flight(token_ids, request_id)
        self.index[token_ids] = request_id
        return Decision("leader", request_id)

    # --- release -------------------------------------------------------------------------------
    def release(self, flight_id: int) -> list[int]:
        """Closes a flight: removes it and its index entry; its followers (and a live leader) become
        released. Returns the followers in arrival order (the order they join the waiting queue)."""
        flight = self.flights.pop(flight_id)
        del self.index[flight.input_token_ids]
        followers = list(flight.follower_request_ids)
        self.released_request_ids.update(followers)
        if flight.is_leader_live:
            self.released_request_ids.add(flight.leader_request_id)
        return followers

    def expire(self, flight_id: int, request_id: int) -> None:
        """A follower whose wait ran out leaves its flight for the released set (ahead of the flight)."""
        self.flights[flight_id].follower_request_ids.remove(request_id)
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

    def snapshot(self) -> tuple:
        """A comparable picture of the coordinator (for before/after comparisons in tests)."""
        return (tuple(sorted((fid, f.input_token_ids, f.leader_request_id, tuple(f.follower_request_ids),
                              f.is_leader_live) for fid, f in self.flights.items())),
                tuple(sorted(self.index.items())), tuple(sorted(self.released_request_ids)))
