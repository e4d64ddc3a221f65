"""Continuous batching over the page pool, the prefix cache and the coordinator.

One ``step`` is one batched forward pass: admit what fits, give every decoding request one token and
the prefilling requests their next chunk under the step's prefill budget (whole pages), run the model
once, then per request: record the prefill/decode, publish completed pages (incremental policy),
release its flight if the release point is reached, and finish it if it is done.

Every mutation is a guard/command pair named after the spec's action (``can_admit``/``admit``,
``can_prefill``/``prefill``, ``can_publish``/``publish``, ``can_decode``/``decode``,
``can_finish``/``finish``, ``can_evict``/``evict``, and in :mod:`flightcheck.impl.flights`
``can_release``/``release``, ``can_promote``/``promote``, ``can_expire``/``expire``, ``abort``,
``can_fail``/``fail``), and every command emits its event, so the event log is the sequence of spec
actions the engine took.

A forward pass whose logits for one request are not finite fails that request (``fail``) and no other;
``inject_fault`` (a test hook) makes the next pass's logits for a request non-finite.

Memory: admission reserves every page a request may still need (prompt plus max_tokens, minus its
hits) against the free and evictable pages, so a running request never waits for memory and nothing
needs preemption; eviction happens only when an allocation finds the free list short.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.coordinator import Coordinator
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.events import RELEASE_AFTER_PREFILL, EventLog
from flightcheck.impl.flights import FlightLifecycle
from flightcheck.impl.pages import PagePool
from flightcheck.impl.request import Phase, Request
from flightcheck.impl.runner import SeqChunk
from flightcheck.impl.sampling import find_stop


@dataclass(slots=True)
class Counters:
    """What a user of the engine wants to know about reuse and coordination."""

    num_steps: int = 0
    num_forward_passes: int = 0
    num_prefill_tokens: int = 0        # prompt tokens actually computed
    num_decode_tokens: int = 0
    num_pages_allocated: int = 0           # fresh pages taken from the free list (prefill and decode)
    num_prefix_lookups: int = 0            # admissions that consulted the prefix cache
    num_prefix_hits: int = 0               # ... of which found at least one page
    num_hit_pages: int = 0
    num_recovered_tokens: int = 0
    num_pages_published: int = 0           # pages that entered the cache (deduplicated ones not counted)
    num_pages_deduplicated: int = 0
    num_pages_evicted: int = 0
    num_flights_opened: int = 0
    num_via_waits: int = 0                 # new leaders that waited via another flight ("prefix")
    num_followers_released: int = 0
    num_waiters_released: int = 0          # ... released by that flight's release
    num_pinned_pages: int = 0              # references released, expired and promoted followers took
    num_promotions: int = 0
    num_expiries: int = 0
    num_failures: int = 0                  # requests whose forward pass failed

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class Work:
    """One request's share of a forward pass: its chunk, and its prefill units (0 for a decode)."""

    request: Request
    chunk: SeqChunk
    num_units: int = 0


@dataclass(frozen=True, slots=True)
class Admission:
    """What ``can_admit`` found: the queue's head and the cached pages its lookup hit."""

    request: Request
    hit_ids: list[int]


class Scheduler(FlightLifecycle):
    """Continuous batching over the page pool, the prefix cache and the coordinator: ``arrive`` takes a
    request in, ``step`` runs one batched forward pass (see the module docstring for its order), and
    each mutation is a guard/command pair named after the spec's action that emits its event. The
    flight half of the lifecycle (release, promote, expire, abort, fail) is
    :class:`~flightcheck.impl.flights.FlightLifecycle`'s."""

    def __init__(self, runner, config: EngineConfig, events: EventLog, *, eos_token_ids: frozenset[int] = frozenset(),
                 detokenize: Callable[[list[int]], str] | None = None) -> None:
        self.runner = runner
        self.config = config
        self.events = events
        self.eos_token_ids = eos_token_ids
        self.detokenize = detokenize
        self.page_size: int = runner.page_size
        self.pool = PagePool(runner.num_pages, runner.page_size)
        self.coordinator = Coordinator(config.coordination, config.min_shared_pages)
        self.requests: dict[int, Request] = {}
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.admit_longest_next = True  # the next admission from a deep queue offers the longest prompt first
        self.counters = Counters()

    # --- queries -------------------------------------------------------------------------------
    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def num_reserved(self) -> int:
        return sum(r.num_pages_reserved for r in self.running)

    def has_unfinished(self) -> bool:
        return any(r.phase.is_live for r in self.requests.values())

    def live(self, request_id: int) -> Request:
        request = self.requests.get(request_id)
        if request is None or not request.phase.is_live:
            raise UnknownRequestError(request_id, "never submitted" if request is None else f"already {request.phase.value}")
        return request

    # --- arrive --------------------------------------------------------------------------------
    def arrive(self, request: Request) -> None:
        """Registers a validated request: the coordinator decides lead / follow / solo, and under
        "prefix" whether a new leader first waits via another flight (blocked, holding no pages, until
        that flight's release gives it the shared pages)."""
        decision = self.coordinator.arrive(request.request_id, request.token_ids, request.page_keys)
        request.role, request.flight_id = decision.role, decision.flight_id
        is_blocked = decision.role == "follower" or decision.via_flight_id is not None
        request.phase = Phase.BLOCKED if is_blocked else Phase.WAITING
        self.requests[request.request_id] = request
        if decision.role == "leader":
            self.counters.num_flights_opened += 1
        if decision.via_flight_id is not None:
            self.counters.num_via_waits += 1
        if request.phase is Phase.WAITING:
            self.waiting.append(request)
        via = {"via": decision.via_flight_id}
        if decision.via_flight_id is not None:
            via["shared_pages"] = decision.shared_pages
        self.events.emit("arrive", request=request.request_id, role=request.role, flight=request.flight_id,
                         input=request.input_key, num_tokens=request.num_tokens,
                         max_tokens=request.sampling.max_tokens, lifetime_pages=request.num_lifetime_pages,
                         page_keys=request.page_keys, **via,
                         t=round(max(request.arrival_time - self.events.started, 0.0), 6))

    # --- admit ---------------------------------------------------------------------------------
    def _lookup(self, request: Request) -> list[int]:
        if not self.config.prefix_caching:
            return []
        return self.pool.lookup(request.token_ids, request.page_keys)

    def can_admit(self) -> Admission | None:
        """The first waiting request in admission order (:meth:`admission_order`) that fits: capacity
        left, and every page it may need reservable; with the prefix-cache hits its admission takes (what
        ``admit`` needs, so the lookup runs once).

        Why not only the head of the queue: a released follower's pins hold cached pages that another
        waiting request may need to evict, while the follower itself fits; admitting strictly in order
        would leave both waiting forever (the conformance campaign found that deadlock)."""
        if self.num_running >= self.config.max_running:
            return None
        for request in self.admission_order():
            admission = self._fit(request)
            if admission is not None:
                return admission
        return None

    @property
    def is_queue_deep(self) -> bool:
        """More requests wait than two turnovers of the running set admit."""
        return len(self.waiting) > 2 * self.config.max_running

    def admission_order(self) -> list[Request]:
        """The waiting requests in the order admission tries them: arrival order, except that while the
        queue is deep (:attr:`is_queue_deep`) every other admission first offers the slot to the waiting
        request with the longest prompt (the earliest on a tie).

        Why (issue 43, fault 8; scripts/bench_long_prompt.py, BENCHMARKS.md): a slot is held for a
        request's whole life, so in arrival order a request waits one turnover of the running set for
        every ``max_running`` requests queued ahead of it, however long its own prompt. Under 32
        closed-loop clients at capacity 8 a 2,048-token prompt spent 129 steps (56 s) queued for 16 s of
        prefill: 4x its time alone, growing with the queue, while the step's prefill budget went unused.
        With the alternation the longest waiting prompt is admitted by the second admission, whatever
        the queue's depth, and any other request at most doubles its wait in arrival order. A queue of
        at most two turnovers keeps arrival order: there every request is admitted within two
        turnovers already."""
        if not (self.admit_longest_next and self.is_queue_deep):
            return list(self.waiting)
        longest = max(self.waiting, key=lambda r: r.num_tokens)  # max() keeps the first on a tie
        return [longest] + [r for r in self.waiting if r is not longest]

    def _fit(self, request: Request) -> Admission | None:
        hit_ids = self._lookup(request)
        # Its pins are cached and referenced, so the lookup starts with them.
        assert hit_ids[:request.num_published] == request.block_table, "a waiting request's pins are not its first hits"
        num_unreferenced_hits = sum(1 for p in hit_ids if self.pool.pages[p].ref_count == 0)
        num_needed = request.num_lifetime_pages - len(hit_ids)
        if self.pool.num_available - num_unreferenced_hits - self.num_reserved < num_needed:
            return None
        return Admission(request, hit_ids)

    def admit(self, admission: Admission) -> Request:
        """Admits the request ``can_admit`` chose, with the hits it found (nothing ran in between)."""
        request, hit_ids = admission.request, admission.hit_ids
        assert request.phase is Phase.WAITING and request in self.waiting, "admit() of a request that is not waiting"
        if self.is_queue_deep:  # the lanes alternate only while they are in force (see admission_order)
            self.admit_longest_next = not self.admit_longest_next
        self.waiting.remove(request)
        self.pool.acquire(hit_ids[len(request.block_table):])  # the pins already hold their references
        request.block_table = list(hit_ids)
        request.num_hit_pages = request.num_published = len(hit_ids)
        request.num_computed = len(hit_ids) * self.page_size
        request.num_pages_reserved = request.num_lifetime_pages - len(hit_ids)
        request.phase = Phase.PREFILL
        self.running.append(request)
        if self.config.prefix_caching:
            self.counters.num_prefix_lookups += 1
            self.counters.num_prefix_hits += bool(hit_ids)
            self.counters.num_hit_pages += len(hit_ids)
            self.counters.num_recovered_tokens += request.recovered_tokens
        self.events.emit("admit", request=request.request_id, hit_pages=len(hit_ids),
                         recovered_tokens=request.recovered_tokens)
        return request

    # --- memory --------------------------------------------------------------------------------
    def can_evict(self) -> int | None:
        """The page an eviction would take now (the pool's LRU unreferenced leaf), or None."""
        return self.pool.victim()

    def evict(self, page_id: int) -> None:
        eviction = self.pool.evict(page_id)
        self.counters.num_pages_evicted += 1
        self.events.emit("evict", page_id=eviction.page_id, index=eviction.index, key=eviction.key)

    def _allocate(self, request: Request, num: int) -> None:
        assert num <= request.num_pages_reserved, "allocation beyond the admission reservation"
        while not self.pool.can_allocate(num):
            self.evict(self.can_evict())
        request.block_table.extend(self.pool.allocate(num))
        self.counters.num_pages_allocated += num
        request.num_pages_reserved -= num

    # --- the forward pass ----------------------------------------------------------------------
    def forward(self, work: list[Work]) -> np.ndarray:
        """One batched forward pass over planned work; row k holds the last-token logits of ``work[k]``."""
        logits = np.array(self.runner.forward([w.chunk for w in work]))
        self.counters.num_forward_passes += 1
        for k, w in enumerate(work):
            if w.request.fault_pending:  # the test hook: this request's pass is corrupted
                w.request.fault_pending = False
                logits[k] = np.nan
        return logits

    # --- prefill -------------------------------------------------------------------------------
    def can_prefill(self, request: Request) -> bool:
        return request.phase is Phase.PREFILL and not request.is_held

    def plan_prefill(self, request: Request, budget_units: int) -> Work:
        """Allocates the pages of the request's next chunk (at most ``budget_units`` units): its work."""
        first_page = request.num_computed // self.page_size
        num_left_units = -(-(request.num_tokens - request.num_computed) // self.page_size)
        num_units = min(num_left_units, budget_units)
        end = min(request.num_tokens, (first_page + num_units) * self.page_size)
        num_new_pages = -(-end // self.page_size) - len(request.block_table)
        self._allocate(request, num_new_pages)
        chunk = SeqChunk(list(request.token_ids[request.num_computed:end]), request.num_computed, list(request.block_table))
        return Work(request, chunk, num_units)

    def prefill(self, work: Work, logits: np.ndarray) -> None:
        """Records a computed chunk; the last chunk samples the first token (phase -> decode)."""
        request, chunk = work.request, work.chunk
        request.num_computed = chunk.end_pos
        self.counters.num_prefill_tokens += chunk.num_tokens
        is_last = request.is_prefill_done
        self.events.emit("prefill", request=request.request_id, first_page=chunk.start_pos // self.page_size,
                         num_units=work.num_units, num_tokens=chunk.num_tokens, first_token=is_last)
        if is_last:
            request.phase = Phase.DECODE
            request.first_token_time = time.perf_counter()
            request.output_token_ids.append(request.sampler.sample(logits))

    # --- decode --------------------------------------------------------------------------------
    def can_decode(self, request: Request) -> bool:
        """A request whose prompt is done and which has not finished takes one token per step."""
        return request.phase is Phase.DECODE

    def plan_decode(self, request: Request) -> Work:
        """Allocates a page if the next position starts one: the request's decode work."""
        position = request.num_computed
        if position // self.page_size == len(request.block_table):
            self._allocate(request, 1)
        chunk = SeqChunk([request.output_token_ids[-1]], position, list(request.block_table))
        return Work(request, chunk)

    def decode(self, work: Work, logits: np.ndarray) -> None:
        request = work.request
        request.num_computed += 1
        token = request.sampler.sample(logits)
        request.output_token_ids.append(token)
        self.counters.num_decode_tokens += 1
        self.events.emit("decode", request=request.request_id, token=token)

    # --- publish -------------------------------------------------------------------------------
    def _num_publishable(self, request: Request) -> int:
        return min(request.num_shareable, request.num_computed // self.page_size) - request.num_published

    def can_publish(self, request: Request) -> bool:
        """Incremental: completed shareable pages wait; on-completion: only a flight leader under release
        after-prefill, once its prefill is complete (its followers' early release needs the pages)."""
        # Only a running request publishes: a terminated one has dropped its pages (found by the
        # exhaustive check of checks/symbolic: publish on an aborted request indexed freed pages).
        if request.phase not in (Phase.PREFILL, Phase.DECODE):
            return False
        if not self.config.prefix_caching or self._num_publishable(request) <= 0:
            return False
        if self.config.publication == "incremental":
            return True
        return (self.config.release == "after-prefill" and request.is_prefill_done
                and self.leads_open_flight(request))

    def publish(self, request: Request) -> None:
        assert self.can_publish(request)
        self.events.emit("publish", request=request.request_id, pages=self._publish_pages(request))

    def _publish_pages(self, request: Request) -> list[dict]:
        published = []
        end = request.num_published + max(0, self._num_publishable(request))
        for index in range(request.num_published, end):
            key = request.page_keys[index]
            parent = request.page_keys[index - 1] if index else None
            tokens = request.token_ids[index * self.page_size:(index + 1) * self.page_size]
            page_id = self.pool.publish(request.block_table[index], key, parent, tokens, index)
            if page_id != request.block_table[index]:
                self.counters.num_pages_deduplicated += 1
            else:
                self.counters.num_pages_published += 1
            request.block_table[index] = page_id
            published.append({"index": index, "key": key})
        request.num_published = end
        return published

    # --- finish --------------------------------------------------------------------------------
    def can_finish(self, request: Request) -> str | None:
        """Why a decoding request is done: EOS, a stop string, or length (max_tokens or the end of the
        context); None while it goes on."""
        if request.phase is not Phase.DECODE:
            return None
        token = request.output_token_ids[-1]
        if token in self.eos_token_ids and not request.sampling.ignore_eos:
            return "eos"
        if request.sampling.stop and find_stop(self.detokenize(request.output_token_ids), request.sampling.stop) is not None:
            return "stop"
        if len(request.output_token_ids) >= request.sampling.max_tokens or request.num_computed >= request.max_positions:
            return "length"
        return None

    # --- step ----------------------------------------------------------------------------------
    def step(self) -> list[Request]:
        """One scheduling round and at most one forward pass; returns the requests that got a token."""
        self.counters.num_steps += 1
        while (admission := self.can_admit()) is not None:
            self.admit(admission)
        work = [self.plan_decode(r) for r in self.running if self.can_decode(r)]
        budget = self.config.prefill_chunk_pages
        for request in self.running:
            if budget > 0 and self.can_prefill(request):
                work.append(self.plan_prefill(request, budget))
                budget -= work[-1].num_units
        logits = self.forward(work) if work else None
        produced = []
        for i, item in enumerate(work):
            request = item.request
            if not np.isfinite(logits[i]).all():
                self.fail(request, "its forward pass gave non-finite logits")
                continue
            if item.num_units:
                self.prefill(item, logits[i])
            else:
                self.decode(item, logits[i])
            if self.can_publish(request):
                self.publish(request)
            if self.leads_open_flight(request) and self.can_release(request.flight_id):
                self.release(request.flight_id, RELEASE_AFTER_PREFILL)
            if request.phase is Phase.DECODE:
                produced.append(request)
                reason = self.can_finish(request)
                if reason is not None:
                    self.finish(request, reason)
        self._expire_waited_out()
        return produced

    def snapshot(self) -> tuple:
        """A comparable picture of the whole scheduler (pool, coordinator, queues, requests, counters)."""
        return (self.pool.snapshot(), self.coordinator.snapshot(), tuple(r.request_id for r in self.waiting),
                tuple(r.request_id for r in self.running), self.admit_longest_next,
                tuple(r.snapshot() for r in self.requests.values()), tuple(self.counters.as_dict().items()))
