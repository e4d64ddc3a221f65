"""The engine under the check: the real scheduler, coordinator and page pool over a runner with fixed logits.

The check never runs the MLX model: :class:`FixedLogitsRunner` answers every forward pass with the same
logits row (token 7 wins), so prefill and decode run the engine's real bookkeeping and sample a real,
deterministic token. :class:`Command` names one of the engine's public guard/command pairs at a state;
:func:`enabled_commands` lists those whose engine guard holds, :func:`execute` runs one, and
:func:`state_key` names an engine state so that the enumeration visits each once.

The engine guards, as the engine's own ``step`` composes them (the step publishes right after every
prefill and finishes a request at once when its output reaches ``max_tokens``):

- ``admit``: ``can_admit()`` is not None; ``prefill(r)``: ``can_prefill(r)`` and not ``can_publish(r)``;
  ``publish(r)``: ``can_publish(r)`` (which once held for a terminated request with computed pages, whose
  ``publish`` then failed: found by this check, fixed in ``impl/scheduler.py``); ``release(f)``: ``can_release(f)``; ``decode(r)``: ``can_decode(r)``
  and its output is shorter than ``max_tokens``; ``finish(r)``: ``r`` decodes (the spec's finish stands for
  any stop: EOS, a stop string, length); ``evict``: ``can_evict()`` is not None while an allocation the
  running requests' next steps make exceeds the free list (the one place the engine evicts);
- the client's: ``arrive(t)`` (``Engine.add_request``) while fewer than N have arrived, ``abort(r)``
  (``Engine.abort``) of a live request, ``notify(r)`` (``Engine.abort`` of a terminated or unknown ID: it
  must be refused), ``expire(r)`` (``Engine.expire``) of a blocked one, ``fail(r)`` (``can_fail``/``fail``).

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> eng = build_engine(Bound(2, 6), "single-flight")
    >>> [str(c) for c in enabled_commands(eng, Bound(2, 6))]
    ['arrive(t0)', 'arrive(t1)', 'arrive(t2)', 'notify(unknown)']
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np

from flightcheck.checks.symbolic.bound import Bound
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.impl.request import Phase

UNKNOWN_ID = 10_000  # a request ID no bound reaches: a termination notice for it must be refused
VOCAB = 256
TOKEN = 7


class FixedLogitsRunner:
    """A model runner without a model: every forward pass returns one fixed logits row per chunk."""

    page_size = PAGE_SIZE
    vocab_size = VOCAB
    max_positions = 4096

    def __init__(self, num_pages: int) -> None:
        self.num_pages = num_pages
        self.kv_bytes = num_pages * 1024

    def forward(self, chunks: list[Any]) -> np.ndarray:
        """``len(chunks)`` rows of logits in which token :data:`TOKEN` wins."""
        logits = np.zeros((len(chunks), VOCAB), dtype=np.float32)
        logits[:, TOKEN] = 1.0
        return logits


def build_engine(bound: Bound, config: str) -> Engine:
    """An empty engine of configuration ``config`` over ``bound``'s pool, on a :class:`FixedLogitsRunner`."""
    return Engine(FixedLogitsRunner(bound.num_pages), None, EngineConfig(**bound.config(config)))


def copy_engine(engine: Engine) -> Engine:
    """An independent copy of ``engine``'s whole state (through pickle, several times faster than
    ``copy.deepcopy`` here). Shared, not copied: the runner (it holds no state of the check's) and the
    requests' samplers (greedy: their generators are never drawn from). The copy starts an empty event
    history, numbered on from the original's."""
    log, sched, runner = engine.events, engine.scheduler, engine.runner
    listeners, history = log._listeners, log.events
    samplers = {rid: r.sampler for rid, r in sched.requests.items()}
    log._listeners, log.events, engine.runner, sched.runner = [], [], None, None
    for r in sched.requests.values():
        r.sampler = None
    try:
        data = pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        log._listeners, log.events, engine.runner, sched.runner = listeners, history, runner, runner
        for rid, r in sched.requests.items():
            r.sampler = samplers[rid]
    clone = pickle.loads(data)
    clone.runner = clone.scheduler.runner = runner
    for rid, r in clone.scheduler.requests.items():
        r.sampler = samplers[rid]
    return clone


@dataclass(frozen=True, order=True)
class Command:
    """One engine command: ``name`` (the spec action it performs) and its argument (a template for
    ``arrive``, a request ID, a flight ID for ``release``, -1 when the engine chooses: ``admit``, ``evict``)."""

    name: str
    arg: int = -1

    def __str__(self) -> str:
        if self.name == "arrive":
            return f"arrive(t{self.arg})"
        if self.name == "notify" and self.arg == UNKNOWN_ID:
            return "notify(unknown)"
        return f"{self.name}({'' if self.arg < 0 else self.arg})"


def allocation_need(sched: Any, req: Any) -> int:
    """Fresh pages the request's next step allocates (what ``plan_prefill``/``plan_decode`` take)."""
    ps = sched.page_size
    if req.phase is Phase.PREFILL and not req.is_prefill_done:
        first = req.num_computed // ps
        left = -(-(req.num_tokens - req.num_computed) // ps)
        end = min(req.num_tokens, (first + min(left, sched.config.prefill_chunk_pages)) * ps)
        return -(-end // ps) - len(req.block_table)
    if req.phase is Phase.DECODE and len(req.output_token_ids) < req.sampling.max_tokens:
        return 1 if req.num_computed // ps == len(req.block_table) else 0
    return 0


def under_pressure(sched: Any) -> bool:
    """The running requests' next steps need more pages than the free list holds (so an allocation evicts)."""
    return sum(allocation_need(sched, r) for r in sched.running) > sched.pool.num_free


def engine_guard(engine: Engine, command: Command) -> bool:
    """Whether the engine's guard for ``command`` holds (see the module docstring)."""
    sched = engine.scheduler
    name, arg = command.name, command.arg
    if name == "admit":
        return sched.can_admit() is not None
    if name == "evict":
        return sched.can_evict() is not None and under_pressure(sched)
    if name == "release":
        return arg in sched.coordinator.flights and sched.can_release(arg)
    if name == "notify":
        req = sched.requests.get(arg)
        return req is None or not req.phase.is_live
    req = sched.requests.get(arg)
    if req is None:
        return False
    if name == "prefill":
        return sched.can_prefill(req) and not sched.can_publish(req)
    if name == "publish":
        return sched.can_publish(req)
    if name == "decode":
        return sched.can_decode(req) and len(req.output_token_ids) < req.sampling.max_tokens
    if name == "finish":
        return req.phase is Phase.DECODE
    if name == "abort":
        return req.phase.is_live
    if name == "expire":
        return sched.can_expire(arg)
    if name == "fail":
        return sched.can_fail(req)
    raise ValueError(f"no engine guard for {command}")


def candidate_commands(engine: Engine, bound: Bound) -> list[Command]:
    """Every command that could apply now (guards not yet asked), in a fixed order."""
    sched = engine.scheduler
    out = []
    if len(sched.requests) < bound.num_requests:
        out += [Command("arrive", t) for t in range(len(bound.template_list))]
    out += [Command("admit"), Command("evict")]
    out += [Command("release", f) for f in sorted(sched.coordinator.flights)]
    for rid in sorted(sched.requests):
        out += [Command(n, rid) for n in ("prefill", "publish", "decode", "finish", "abort", "notify", "expire",
                                          "fail")]
    out.append(Command("notify", UNKNOWN_ID))
    return out


def enabled_commands(engine: Engine, bound: Bound) -> list[Command]:
    """The commands whose engine guard holds, in :func:`candidate_commands`' order."""
    return [c for c in candidate_commands(engine, bound)
            if c.name == "arrive" or engine_guard(engine, c)]


def execute(engine: Engine, bound: Bound, command: Command) -> None:
    """Run ``command`` through the engine's own command (its guard must hold). A refused notice
    (``notify``) raises ``UnknownRequestError`` as the engine does; anything else the engine raises
    propagates."""
    sched = engine.scheduler
    name, arg = command.name, command.arg
    if name == "arrive":
        tokens, max_tokens = bound.template_list[arg]
        engine.add_request(list(tokens), {"max_tokens": max_tokens, "temperature": 0.0})
    elif name == "admit":
        sched.admit(sched.can_admit())
    elif name == "evict":
        sched.evict(sched.can_evict())
    elif name == "release":
        sched.release(arg, "after-prefill")
    elif name in ("abort", "notify"):
        engine.abort(arg)
    elif name == "expire":
        engine.expire(arg)
    else:
        req = sched.requests[arg]
        if name == "prefill":
            work = sched.plan_prefill(req, sched.config.prefill_chunk_pages)
            sched.prefill(work, sched.forward([work])[0])
        elif name == "decode":
            work = sched.plan_decode(req)
            sched.decode(work, sched.forward([work])[0])
        elif name == "publish":
            sched.publish(req)
        elif name == "finish":
            sched.finish(req, sched.can_finish(req) or "stop")
        elif name == "fail":
            sched.fail(req, "its forward pass failed (symbolic check)")
        else:
            raise ValueError(f"unknown command {command}")


def state_key(engine: Engine) -> tuple:
    """A name of the engine's state up to the names of its pages: everything its behaviour depends on
    (the cached pages in publication order, reference counts, the LRU order of the pages in use, the
    number of free pages, the coordinator, the queues, the live requests), with page IDs relabelled in
    order of first appearance (the cache, then the requests' block tables), since the engine treats page
    IDs as names only; not its counters, its clock's absolute values or a terminated request's leftover
    fields (only its phase and what it still holds)."""
    sched = engine.scheduler
    pool = sched.pool
    label: dict[int, int] = {}

    def name(page_id: int) -> int:
        return label.setdefault(page_id, len(label))

    cached = tuple((key, name(p)) for key, p in pool.cached.items())
    reqs = tuple((r.request_id, r.phase.value, r.role, r.flight_id, tuple(map(name, r.block_table)), r.num_computed,
                  r.num_hit_pages, r.num_published, r.num_pages_reserved, len(r.output_token_ids), r.is_expired)
                 if r.phase.is_live else (r.request_id, r.phase.value, tuple(map(name, r.block_table)), r.is_expired)
                 for r in sched.requests.values())
    clocks = sorted({pool.pages[p].last_used for p in label})
    pages = tuple((pool.pages[p].ref_count, pool.pages[p].key, pool.pages[p].index,
                   clocks.index(pool.pages[p].last_used)) for p in label)
    return (len(pool.free_page_ids), cached, pages, sched.coordinator.snapshot(),
            tuple(r.request_id for r in sched.waiting), tuple(r.request_id for r in sched.running), reqs)


__all__ = ["Command", "FixedLogitsRunner", "UnknownRequestError", "build_engine", "copy_engine", "enabled_commands",
           "engine_guard", "execute", "state_key", "under_pressure"]
