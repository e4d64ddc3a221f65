"""The engine under the check: the real scheduler, coordinator and page pool over a runner with fixed logits.

The check never runs the MLX model: :class:`FixedLogitsRunner` answers every forward pass with the same
logits row (token 7 wins), so prefill and decode run the engine's real bookkeeping and sample a real,
deterministic token. :class:`Command` names one of the engine's public guard/command pairs at a state;
:func:`enabled_commands` lists those whose engine guard holds, :func:`execute` runs one (on a copy
:func:`thaw` makes of a state :func:`freeze` saved once); :func:`~flightcheck.checks.symbolic.statekey.state_key`
(re-exported here) names an engine state up to the names of its pages and requests and the endings of the
requests that hold nothing, so that the enumeration visits each class of states once.

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
from flightcheck.checks.symbolic.statekey import state_key
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.events import RELEASE_AFTER_PREFILL
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
    """Whether the engine's guard for ``command`` holds (see the module docstring), by its entry of
    :data:`GUARDS`."""
    return GUARDS[command.name](engine.scheduler, command.arg)


def _guard_on_request(test: Any) -> Any:
    """A guard on a request of the engine's: false for an ID it does not know."""
    def guard(sched: Any, arg: int) -> bool:
        req = sched.requests.get(arg)
        return req is not None and test(sched, req)
    return guard


def _notify_guard(sched: Any, arg: int) -> bool:
    req = sched.requests.get(arg)
    return req is None or not req.phase.is_live


# The engine's guard for each spec action's command, one entry per spec action (tests/test_registries.py);
# ``promote`` has no command (the engine hands a flight on only inside the call that loses its leader).
GUARDS: dict[str, Any] = {
    "arrive": lambda sched, arg: True,  # bounded by the check, not the engine: see candidate_commands
    "admit": lambda sched, arg: sched.can_admit() is not None,
    "prefill": _guard_on_request(lambda sched, req: sched.can_prefill(req) and not sched.can_publish(req)),
    "publish": _guard_on_request(lambda sched, req: sched.can_publish(req)),
    "release": lambda sched, arg: arg in sched.coordinator.flights and sched.can_release(arg),
    "promote": lambda sched, arg: False,
    "decode": _guard_on_request(lambda sched, req: sched.can_decode(req)
                                and len(req.output_token_ids) < req.sampling.max_tokens),
    "finish": _guard_on_request(lambda sched, req: req.phase is Phase.DECODE),
    "evict": lambda sched, arg: sched.can_evict() is not None and under_pressure(sched),
    "abort": _guard_on_request(lambda sched, req: req.phase.is_live),
    "notify": _notify_guard,
    "expire": _guard_on_request(lambda sched, req: sched.can_expire(req.request_id)),
    "fail": _guard_on_request(lambda sched, req: sched.can_fail(req)),
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
    """Run ``command`` through the engine's own command (its guard must hold), by its entry of
    :data:`COMMANDS`. A refused notice (``notify``) raises ``UnknownRequestError`` as the engine does;
    anything else the engine raises propagates."""
    COMMANDS[command.name](engine, bound, command.arg)


def _arrive(engine: Engine, bound: Bound, arg: int) -> None:
    tokens, max_tokens = bound.template_list[arg]
    engine.add_request(list(tokens), {"max_tokens": max_tokens, "temperature": 0.0})


def _prefill(engine: Engine, bound: Bound, arg: int) -> None:
    sched = engine.scheduler
    work = sched.plan_prefill(sched.requests[arg], sched.config.prefill_chunk_pages)
    sched.prefill(work, sched.forward([work])[0])


def _decode(engine: Engine, bound: Bound, arg: int) -> None:
    sched = engine.scheduler
    work = sched.plan_decode(sched.requests[arg])
    sched.decode(work, sched.forward([work])[0])


def _finish(engine: Engine, bound: Bound, arg: int) -> None:
    sched = engine.scheduler
    req = sched.requests[arg]
    sched.finish(req, sched.can_finish(req) or "stop")  # the spec's finish stands for any stop


def _no_promote(engine: Engine, bound: Bound, arg: int) -> None:
    raise ValueError("the engine has no promote command: it hands a flight on inside the abort or fail that "
                     "loses its leader")


# The engine's command for each spec action, one entry per spec action (tests/test_registries.py).
COMMANDS: dict[str, Any] = {
    "arrive": _arrive,
    "admit": lambda engine, bound, arg: engine.scheduler.admit(engine.scheduler.can_admit()),
    "prefill": _prefill,
    "publish": lambda engine, bound, arg: engine.scheduler.publish(engine.scheduler.requests[arg]),
    "release": lambda engine, bound, arg: engine.scheduler.release(arg, RELEASE_AFTER_PREFILL),
    "promote": _no_promote,
    "decode": _decode,
    "finish": _finish,
    "evict": lambda engine, bound, arg: engine.scheduler.evict(engine.scheduler.can_evict()),
    "abort": lambda engine, bound, arg: engine.abort(arg),
    "notify": lambda engine, bound, arg: engine.abort(arg),  # an abort of a terminated or unknown ID
    "expire": lambda engine, bound, arg: engine.expire(arg),
    "fail": lambda engine, bound, arg: engine.scheduler.fail(engine.scheduler.requests[arg],
                                                             "its forward pass failed (symbolic check)"),
}



__all__ = ["COMMANDS", "GUARDS", "Command", "FixedLogitsRunner", "Frozen", "UnknownRequestError", "build_engine", "copy_engine",
           "enabled_commands", "engine_guard", "execute", "freeze", "state_key", "thaw", "under_pressure"]
