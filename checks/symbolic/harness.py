"""The engine under the check: the real scheduler, coordinator and page pool over a runner with fixed logits.

The check never runs the MLX model: :class:`FixedLogitsRunner` answers every forward pass with the same
logits row (token 7 wins), so prefill and decode run the engine's real bookkeeping and sample a real,
deterministic token. :class:`Command` names one of the engine's public guard/command pairs at a state;
:func:`enabled_commands` lists those whose engine guard holds, :func:`execute` runs one (on a copy
:func:`thaw` makes of a state :func:`freeze` saved once); :func:`~flightcheck.checks.symbolic.statekey.state_key`
(re-exported here) names an engine state up to the names of its pages and requests and the endings of the
requests that hold nothing, so that the enumeration visits each class of states once.

The engine guards (the adapter table's, :data:`~flightcheck.checks.conform.adapter.ADAPTER`, with the
step loop's order, :data:`DISCIPLINE`), as the engine's own ``step`` composes them (the step publishes
right after every prefill and finishes a request at once when its output reaches ``max_tokens``):

- ``admit``: ``can_admit()`` is not None; ``prefill(r)``: ``can_prefill(r)`` and not ``can_publish(r)``;
  ``publish(r)``: ``can_publish(r)`` (which once held for a terminated request with computed pages, whose
  ``publish`` then failed: found by this check, fixed in ``impl/scheduler.py``); ``release(f)``: ``can_release(f)``; ``decode(r)``: ``can_decode(r)``
  and its output is shorter than ``max_tokens``; ``finish(r)``: ``r`` decodes (the spec's finish stands for
  any stop: EOS, a stop string, length); ``evict``: ``can_evict()`` is not None while an allocation the
  running requests' next steps make exceeds the free list (the one place the engine evicts);
- the client's: ``arrive(t)`` (``Engine.add_request``) while fewer than N have arrived, ``abort(r)``
  (``Engine.abort``) of a live request, ``notify(r)`` (``Engine.notify_termination`` of a terminated or unknown ID:
  it must be refused), ``expire(r)`` (``Engine.expire``) of a blocked one, ``fail(r)`` (``can_fail``/``fail``).

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

from flightcheck.checks.conform.adapter import ADAPTER, Submission
from flightcheck.checks.symbolic.bound import Bound
from flightcheck.checks.symbolic.statekey import state_key
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.impl.request import Phase
from flightcheck.spec.actions import NOTICES, SUBMISSIONS

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


@dataclass(frozen=True)
class Frozen:
    """An engine's whole state as bytes (:func:`freeze`), to be thawed into any number of independent
    copies (:func:`thaw`): the enumeration freezes a state once and thaws one copy per command it runs,
    so the serialising half of a copy is paid once per state rather than once per command."""

    data: bytes
    runner: Any
    samplers: dict[int, Any]


def freeze(engine: Engine) -> Frozen:
    """``engine``'s state as bytes (through pickle, several times faster than ``copy.deepcopy`` here).
    Left out, and shared by every thawed copy: the runner (it holds no state of the check's) and the
    requests' samplers (greedy: their generators are never drawn from). The event history is left out
    too: a thawed copy starts an empty one, numbered on from the original's."""
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
    return Frozen(data, runner, samplers)


def thaw(frozen: Frozen) -> Engine:
    """A new, independent engine in the state :func:`freeze` saved."""
    clone = pickle.loads(frozen.data)
    clone.runner = clone.scheduler.runner = frozen.runner
    for rid, r in clone.scheduler.requests.items():
        r.sampler = frozen.samplers[rid]
    return clone


def copy_engine(engine: Engine) -> Engine:
    """An independent copy of ``engine``'s whole state (:func:`thaw` of :func:`freeze`): the runner and
    the samplers shared, an empty event history numbered on from the original's."""
    return thaw(freeze(engine))


@dataclass(frozen=True, order=True)
class Command:
    """One engine command: ``name`` (the spec action it performs) and its argument (a template for
    ``arrive``, a request ID, a flight ID for ``release``, -1 when the engine chooses: ``admit``, ``evict``)."""

    name: str
    arg: int = -1

    def __str__(self) -> str:
        if self.name in SUBMISSIONS:
            return f"arrive(t{self.arg})"
        if self.name in NOTICES and self.arg == UNKNOWN_ID:
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
    """Whether the engine's guard for ``command`` holds (see the module docstring): its entry of the adapter
    table (:data:`~flightcheck.checks.conform.adapter.ADAPTER`) and of :data:`DISCIPLINE`."""
    sched = engine.scheduler
    extra = DISCIPLINE.get(command.name)
    return ADAPTER[command.name].guard(sched, command.arg) and (extra is None or extra(sched, command.arg))


# The step loop's order among the commands the adapter table enables, as the engine's own ``step`` composes
# them: it publishes right after every prefill (so no prefill runs while a publication is due), evicts only
# when an allocation needs memory, and aborts only a live request (an abort of any other ID is a notice).
DISCIPLINE: dict[str, Any] = {
    "prefill": lambda sched, rid: not sched.can_publish(sched.requests[rid]),
    "evict": lambda sched, _: under_pressure(sched),
    "abort": lambda sched, rid: rid in sched.requests and sched.requests[rid].phase.is_live,
}


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
            if c.name in SUBMISSIONS or engine_guard(engine, c)]


def execute(engine: Engine, bound: Bound, command: Command) -> None:
    """Run ``command`` through the engine's own command (its guard must hold), by its entry of the adapter
    table. A refused notice (``notify``) raises ``UnknownRequestError`` as the engine does; anything else the
    engine raises propagates."""
    arg = command.arg
    if command.name in SUBMISSIONS:
        tokens, max_tokens = bound.template_list[arg]
        arg = Submission(tuple(tokens), max_tokens)
    ADAPTER[command.name].command(engine, arg)



__all__ = ["DISCIPLINE", "Command", "FixedLogitsRunner", "Frozen", "UnknownRequestError", "build_engine", "copy_engine",
           "enabled_commands", "engine_guard", "execute", "freeze", "state_key", "thaw", "under_pressure"]
