"""A flight's whole life in the scheduler: release, promotion, expiry, and the ends of a request.

The scheduler mixes this in. Every command is the command half of a guard/command pair named after the
spec action it performs (``can_release``/``release``, ``can_promote``/``promote``,
``can_expire``/``expire``, ``finish``, ``abort``, ``fail``), and emits that action's event after its
changes, so an observer comparing the engine with the spec after each event sees the state the spec's
action leads to.

Why pins: a released (or expired, or promoted) follower takes references on the pages its leader holds
before it is admitted, so nothing can evict them in between (the checker found that without pins two
followers may both prefill a page evicted after their leader finished). A leader that terminates with
its flight open keeps its cached pages until the flight is released or handed on, in the same call;
its private pages go at once.

Under coordination "prefix" a leader may wait *via* another flight (blocked, holding nothing): that
flight's release, or the waiter's own expiry, pins only the pages the two prompts share, the first
min(held, shared) of what that flight's leader holds; the waiter then computes its own tail and still
leads its own flight, whose exact followers wait on until its own release point.
"""

from __future__ import annotations

import time

from flightcheck.impl.coordinator import Termination, num_shared
from flightcheck.impl.errors import EngineError
from flightcheck.impl.events import RELEASE_LEADER_ABORTED, RELEASE_LEADER_FAILED, RELEASE_ON_COMPLETION
from flightcheck.impl.request import FINISH_ABORTED, Phase, Request


class FlightLifecycle:
    """The flight commands of :class:`~flightcheck.impl.scheduler.Scheduler` (a mixin: it uses the
    scheduler's ``config``, ``coordinator``, ``pool``, ``requests``, ``waiting``, ``running``,
    ``counters`` and ``events``)."""

    # --- who holds what ------------------------------------------------------------------------
    def leads_open_flight(self, request: Request) -> bool:
        """``request`` leads an open flight (live or just terminated)."""
        flight = self.coordinator.flights.get(request.flight_id) if request.flight_id is not None else None
        return flight is not None and flight.leader_request_id == request.request_id

    @staticmethod
    def held_pages(request: Request) -> list[int]:
        """The cached pages a request holds references on, from the front of its prompt (its pins while
        waiting, its hits and published pages while running, what a terminated leader kept)."""
        return request.block_table[:request.num_published]

    def via_of(self, request: Request) -> int | None:
        """The flight a blocked leader waits via (coordination "prefix"), or None."""
        if request.role != "leader" or request.phase is not Phase.BLOCKED:
            return None
        return self.coordinator.flights[request.flight_id].via_flight_id

    def shared_pins(self, request: Request, leader: Request) -> list[int]:
        """What a via-waiter takes from the leader it waited for: the first min(held, shared) of the
        pages that leader holds (the rest of its held pages are the leader's own tail)."""
        return self.held_pages(leader)[:num_shared(request.page_keys, leader.page_keys)]

    def _pin(self, request: Request, pages: list[int]) -> None:
        """``request`` goes to admission holding references on ``pages``."""
        self.pool.acquire(pages)
        request.block_table = list(pages)
        request.num_published = len(pages)
        request.phase = Phase.WAITING
        self.waiting.append(request)
        self.counters.num_pinned_pages += len(pages)

    # --- release -------------------------------------------------------------------------------
    def can_release(self, flight_id: int) -> bool:
        """After-prefill: the leader's prefill is done and all its shareable pages are published;
        any release point: the leader has terminated (then ``release`` is called at once)."""
        flight = self.coordinator.flights.get(flight_id)
        if flight is None:
            return False
        if not flight.is_leader_live:
            return True
        leader = self.requests[flight.leader_request_id]
        return (self.config.release == "after-prefill" and leader.is_prefill_done
                and leader.num_published >= leader.num_shareable)

    def release(self, flight_id: int, reason: str) -> None:
        """Closes the flight: its followers pin what the leader holds and go to admission, then the
        leaders waiting via it pin the shared part of it and go to admission too (each still leading
        its own flight), except that a lost leader's waiters under "promote" are handed on (only the heir
        goes, unless it inherits the lost leader's own wait); a terminated leader's kept pages are dropped."""
        assert self.can_release(flight_id)
        flight = self.coordinator.flights[flight_id]
        leader = self.requests[flight.leader_request_id]
        pins = self.held_pages(leader)
        waiter_ids = list(flight.via_request_ids)  # the coordinator forgets them with the flight
        if self.hands_on_waiters(flight):
            heir, inherited = self.coordinator.hand_on_waiters(flight_id)
            waiter_ids = [heir] if inherited is None else []  # the others (and an inheriting heir) wait on
        follower_ids = self.coordinator.release(flight_id)
        for request_id in follower_ids:
            self._pin(self.requests[request_id], pins)
        for request_id in waiter_ids:
            waiter = self.requests[request_id]
            self._pin(waiter, self.shared_pins(waiter, leader))
        if not leader.phase.is_live:
            self.pool.drop(leader.block_table)
            leader.block_table = []
        self.counters.num_followers_released += len(follower_ids)
        self.counters.num_waiters_released += len(waiter_ids)
        self.events.emit("release", flight=flight_id, leader=leader.request_id, followers=follower_ids,
                         waiters=waiter_ids, reason=reason)

    def hands_on_waiters(self, flight) -> bool:
        """A lost leader's flight with waiters, released under leader loss "promote" (nobody was left to
        promote): its waiters are handed on, not all freed (:meth:`Coordinator.hand_on_waiters`)."""
        return (self.config.leader_loss == "promote" and bool(flight.via_request_ids)
                and self.requests[flight.leader_request_id].phase in (Phase.ABORTED, Phase.FAILED))

    # --- promote -------------------------------------------------------------------------------
    def can_promote(self, flight_id: int) -> int | None:
        """Under leader loss "promote": the follower a lost leader's flight goes to, or None."""
        if self.config.leader_loss != "promote":
            return None
        flight = self.coordinator.flights.get(flight_id)
        if flight is None or self.requests[flight.leader_request_id].phase is Phase.FINISHED:
            return None
        return self.coordinator.can_promote(flight_id)

    def promote(self, flight_id: int) -> None:
        """The first follower leads the flight from now on: it goes to admission with the old leader's
        references as its pins (the counts do not change); the other followers, and the leaders waiting
        via this flight, keep waiting. If the old leader itself waited via another flight, the new one
        inherits that wait: it stays blocked, in the old leader's place in that flight's list."""
        assert self.can_promote(flight_id) is not None
        flight = self.coordinator.flights[flight_id]
        old = self.requests[flight.leader_request_id]
        via_id = flight.via_flight_id
        new = self.requests[self.coordinator.promote(flight_id)]
        new.role = "leader"
        via = {"via": via_id}
        if via_id is None:
            new.block_table, new.num_published = old.block_table, old.num_published
            new.phase = Phase.WAITING
            self.waiting.append(new)
            self.counters.num_pinned_pages += new.num_published  # its pins: the old leader's references
        else:
            # Why nothing to hand over: a leader waiting via another flight held no pages.
            assert not old.block_table, f"via-waiting leader {old.request_id} held pages"
            via_leader = self.requests[self.coordinator.flights[via_id].leader_request_id]
            via["shared_pages"] = num_shared(new.page_keys, via_leader.page_keys)
        old.block_table = []
        self.counters.num_promotions += 1
        self.events.emit("promote", flight=flight_id, leader=new.request_id, previous=old.request_id,
                         followers=list(flight.follower_request_ids), **via)

    def _settle(self, termination: Termination, reason: str) -> None:
        """A terminated leader's flight is released or handed on, in the same call."""
        if termination.kind != "leader":
            return
        if self.can_promote(termination.flight_id) is not None:
            self.promote(termination.flight_id)
        else:
            self.release(termination.flight_id, reason)

    # --- expire --------------------------------------------------------------------------------
    def can_expire(self, request_id: int) -> bool:
        """A follower blocked on an open flight, or a leader waiting via one, can stop waiting."""
        request = self.requests.get(request_id)
        return request is not None and request.phase is Phase.BLOCKED

    def expire(self, request_id: int, reason: str = "client") -> None:
        """A follower leaves its flight for the released set, pins what its leader holds and goes to
        admission to compute the rest itself; a leader waiting via a flight stops waiting, pins the
        shared part of what that flight's leader holds, and goes to admission still leading its own
        flight (``reason``: "client", a deadline of the caller's, or "wait-bound", the engine's own bound)."""
        assert self.can_expire(request_id)
        request = self.requests[request_id]
        via_id = self.via_of(request)
        flight_id = request.flight_id if via_id is None else via_id
        leader = self.requests[self.coordinator.flights[flight_id].leader_request_id]
        self.coordinator.expire(flight_id, request_id)
        self._pin(request, self.held_pages(leader) if via_id is None else self.shared_pins(request, leader))
        request.is_expired = True
        self.counters.num_expiries += 1
        via = {"via": via_id is not None}
        if via_id is not None:
            via["shared_pages"] = num_shared(request.page_keys, leader.page_keys)
        self.events.emit("expire", request=request_id, flight=flight_id, leader=leader.request_id, reason=reason,
                         **via)

    def _expire_waited_out(self) -> None:
        """The optional wait bound: a follower (or a leader waiting via a flight) blocked for more steps
        than the bound expires."""
        bound = self.config.follower_wait_bound
        for request in list(self.requests.values()):
            if request.phase is Phase.BLOCKED:
                request.num_wait_steps += 1
                if bound is not None and request.num_wait_steps > bound:
                    self.expire(request.request_id, "wait-bound")

    # --- the ends of a request -----------------------------------------------------------------
    def finish(self, request: Request, reason: str) -> None:
        """Publishes what remains (on-completion policy), drops the references, terminates."""
        assert request.phase is Phase.DECODE
        published = self._publish_pages(request) if self.config.prefix_caching else []
        self._end(request, Phase.FINISHED, reason)
        termination = self.coordinator.terminate(request.request_id)
        self.events.emit("finish", request=request.request_id, reason=reason, published=published)
        self._settle(termination, RELEASE_ON_COMPLETION)

    def abort(self, request_id: int) -> None:
        """A client cancel in any live phase; unknown or terminated IDs raise with nothing changed."""
        request = self.live(request_id)
        assert self.coordinator.is_known(request_id)
        phase = request.phase
        self._end(request, Phase.ABORTED, FINISH_ABORTED)
        termination = self.coordinator.terminate(request_id)
        self.events.emit("abort", request=request_id, phase=phase.value)
        self._settle(termination, RELEASE_LEADER_ABORTED)

    def can_fail(self, request: Request) -> bool:
        """Only a running request has a forward pass that can fail."""
        return request.phase in (Phase.PREFILL, Phase.DECODE)

    def fail(self, request: Request, error: str) -> None:
        """Its forward pass failed: the request ends with the error, its pages go back, its flight is
        released or handed on; the others go on."""
        if not self.can_fail(request):
            raise EngineError(f"request {request.request_id} is {request.phase.value}: only a running request can fail")
        phase = request.phase
        request.error = error
        self._end(request, Phase.FAILED, "error")
        termination = self.coordinator.terminate(request.request_id)
        self.counters.num_failures += 1
        self.events.emit("fail", request=request.request_id, phase=phase.value, error=error)
        self._settle(termination, RELEASE_LEADER_FAILED)

    def _end(self, request: Request, phase: Phase, reason: str) -> None:
        """Leaves the queues and returns the pages, except what a flight leader keeps for its followers."""
        if request.phase is Phase.WAITING:
            self.waiting.remove(request)
        if request in self.running:
            self.running.remove(request)
        keep = self.held_pages(request) if self.leads_open_flight(request) else []
        self.pool.drop(request.block_table[len(keep):])
        request.block_table = keep
        request.num_pages_reserved = 0
        request.phase, request.finish_reason, request.finish_time = phase, reason, time.perf_counter()
