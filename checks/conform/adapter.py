"""The engine adapter: one table from each spec action to the engine's own guard and command.

Every inside check that drives the engine one spec action at a time reads this table: the counterexample
replay and the directed runs of the corpus (:mod:`flightcheck.checks.conform.replay`, a spec path through
the engine) and the engine stage (:mod:`flightcheck.checks.symbolic.harness`, every engine state within a
bound). An entry says, for one action, what the engine's guard is, what the engine calls the action's
command, and why the engine refuses it when the guard is false, in the engine's own terms. The action's
argument is what the engine names: a request's ID, a flight's ID (a flight's founder's request ID), a
:class:`Submission` for an arrival; ``admit`` and ``evict`` take none, since the engine chooses (its
queue's first request that fits, its LRU victim) and the caller compares that choice with the path's.

What the table does not hold is the caller's: which engine ID a spec index names (the replay's tracker),
the step loop's order among enabled commands (the harness's ``DISCIPLINE``), and what a path asks of a
choice the engine makes (the replay's admission and eviction checks).

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> from flightcheck.checks.symbolic.harness import build_engine
    >>> eng = build_engine(Bound(2, 6), "single-flight")
    >>> ADAPTER["arrive"].command(eng, Submission((1, 2, 3), 2))  # the engine's ID for the request
    0
    >>> ADAPTER["admit"].guard(eng.scheduler, None), ADAPTER["prefill"].guard(eng.scheduler, 0)
    (True, False)
    >>> ADAPTER["prefill"].refusal
    'can_prefill() is false'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from flightcheck.impl.events import RELEASE_AFTER_PREFILL
from flightcheck.impl.request import Phase


@dataclass(frozen=True)
class Submission:
    """What an arrival submits: the prompt's tokens and its output limit (greedy sampling)."""

    tokens: tuple[int, ...]
    max_tokens: int


@dataclass(frozen=True)
class EngineStep:
    """One spec action in the engine: its guard (on the scheduler and the action's argument), its command
    (on the engine, whose guard must hold), and why the engine refuses it when the guard is false."""

    guard: Callable[[Any, Any], bool]
    command: Callable[[Any, Any], Any]
    refusal: str


def _request(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """A guard on one of the engine's requests: false for an ID it does not know."""
    def guard(sched: Any, rid: Any) -> bool:
        req = sched.requests.get(rid)
        return req is not None and test(sched, req)
    return guard


def _arrive(engine: Any, sub: Submission) -> int:
    from flightcheck.impl.sampling import SamplingParams

    return engine.add_request(list(sub.tokens), SamplingParams(max_tokens=sub.max_tokens))


def _prefill(engine: Any, rid: int) -> None:
    sched = engine.scheduler
    work = sched.plan_prefill(sched.requests[rid], sched.config.prefill_chunk_pages)
    sched.prefill(work, sched.forward([work])[0])


def _decode(engine: Any, rid: int) -> None:
    sched = engine.scheduler
    work = sched.plan_decode(sched.requests[rid])
    sched.decode(work, sched.forward([work])[0])


def _finish(engine: Any, rid: int) -> None:
    sched = engine.scheduler
    req = sched.requests[rid]
    sched.finish(req, sched.can_finish(req) or "stop")  # the spec's finish stands for any stop


def _no_promote(engine: Any, arg: Any) -> None:
    raise ValueError("the engine has no promote command: it hands a flight on inside the abort or fail that "
                     "loses its leader")


def _notice_guard(sched: Any, rid: Any) -> bool:
    req = sched.requests.get(rid)
    return req is None or not req.phase.is_live


# One entry per spec action (tests/test_registries.py holds the keys equal to the spec's action names).
ADAPTER: dict[str, EngineStep] = {
    "arrive": EngineStep(lambda sched, sub: True, _arrive, "never refused"),
    "admit": EngineStep(lambda sched, _: sched.can_admit() is not None,
                        lambda engine, _: engine.scheduler.admit(engine.scheduler.can_admit()), "can_admit() is false"),
    "prefill": EngineStep(_request(lambda sched, req: sched.can_prefill(req)), _prefill, "can_prefill() is false"),
    "publish": EngineStep(_request(lambda sched, req: sched.can_publish(req)),
                          lambda engine, rid: engine.scheduler.publish(engine.scheduler.requests[rid]),
                          "can_publish() is false"),
    "release": EngineStep(lambda sched, fid: fid in sched.coordinator.flights and sched.can_release(fid),
                          lambda engine, fid: engine.scheduler.release(fid, RELEASE_AFTER_PREFILL),
                          "can_release() is false"),
    "promote": EngineStep(lambda sched, _: False, _no_promote, "the engine promotes only in the call that loses the leader"),
    "decode": EngineStep(_request(lambda sched, req: sched.can_decode(req)
                                  and len(req.output_token_ids) < req.sampling.max_tokens),
                         _decode, "the request has no decode step left"),
    "finish": EngineStep(_request(lambda sched, req: req.phase is Phase.DECODE), _finish, "the request is not decoding"),
    "evict": EngineStep(lambda sched, _: sched.can_evict() is not None,
                        lambda engine, _: engine.scheduler.evict(engine.scheduler.can_evict()), "nothing evictable"),
    # No guard: the engine's abort itself refuses an unknown or terminated ID (UnknownRequestError), which a
    # replay compares with the spec's rejection of a legitimate termination.
    "abort": EngineStep(lambda sched, rid: True, lambda engine, rid: engine.abort(rid), "never refused"),
    # A notice for a terminated or unknown ID: the engine must refuse it (UnknownRequestError, nothing changed).
    "notify": EngineStep(_notice_guard, lambda engine, rid: engine.notify_termination(rid), "the request is live"),
    "expire": EngineStep(_request(lambda sched, req: sched.can_expire(req.request_id)),
                         lambda engine, rid: engine.expire(rid), "can_expire() is false"),
    "fail": EngineStep(_request(lambda sched, req: sched.can_fail(req)),
                       lambda engine, rid: engine.scheduler.fail(engine.scheduler.requests[rid], "its forward pass failed"),
                       "can_fail() is false"),
}
