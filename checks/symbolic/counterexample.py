"""A finding as something to run again: the engine path as a conformance program, and its replay.

The check's path is a list of the engine's own commands (``admit``, ``prefill``, ``abort(2)``...); a
conformance program (:mod:`~flightcheck.checks.conform.program`) speaks the client's operations. The
translation keeps the client's operations as they are (an arrival, an abort, a notice, an expiry, a
fault followed by the step that fails it) and turns each run of the engine's own commands into that
many engine steps (one per prefill or decode in it, at least one); the failing command, when it is the
engine's, becomes one more step; :func:`~flightcheck.checks.conform.runner.run_program` then drains the
engine under the online monitor. The program does not retrace the path command by command (a step
does several of them at once), so :func:`replay_program` runs it, under the mutant when there is one,
and says whether the conformance monitor reports the failure too.

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> from flightcheck.checks.symbolic.harness import Command
    >>> prog = to_program(Bound(2, 6), "single-flight", [Command("arrive", 0), Command("admit"),
    ...                   Command("prefill", 0)], Command("abort", 0))
    >>> prog.ops
    (('arrive', 0, 0.0, 0), ('step', 1), ('abort', 'any', 0))
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flightcheck.checks.conform.program import Program, Setup, Template
from flightcheck.checks.symbolic.bound import Bound
from flightcheck.checks.symbolic.harness import UNKNOWN_ID, Command, build_engine, execute
from flightcheck.impl.request import Phase
from flightcheck.spec.actions import CANCELS, ENVIRONMENT_ACTIONS, EXPIRIES, FORWARD_PASSES, NOTICES, SUBMISSIONS


def _client_op(engine: Any, command: Command) -> list[tuple]:
    """The program operations of client command ``command`` at ``engine``'s state."""
    sched = engine.scheduler
    ids = sorted(sched.requests)
    live = [r for r in ids if sched.requests[r].phase.is_live]
    name, arg = command.name, command.arg
    if name in SUBMISSIONS:
        return [("arrive", arg, 0.0, 0)]
    if name in CANCELS:
        return [("abort", "any", live.index(arg))]
    if name in NOTICES:
        if arg == UNKNOWN_ID or arg not in sched.requests:
            return [("notify", "unknown", 0)]
        return [("notify", "terminated", [r for r in ids if r not in live].index(arg))]
    if name in EXPIRIES:
        return [("expire", [r for r in live if sched.requests[r].phase is Phase.BLOCKED].index(arg))]
    running = [r for r in live if sched.requests[r].phase in (Phase.PREFILL, Phase.DECODE)]
    return [("fault", "any", running.index(arg)), ("step", 1)]


def to_program(bound: Bound, config: str, path: list[Command], failing: Command | None,
               finishing: Any = None) -> Program:
    """The conformance program standing for ``path`` then ``failing`` (see the module docstring).
    ``finishing``: a finish-reason finding's context
    (:class:`~flightcheck.checks.symbolic.finishing.Context`); the program then makes the failing
    request's template end on EOS (the token the model emits first for it) or on a stop string (that
    token twice), as the context does, so that its run meets the reason the engine got wrong."""
    setup = Setup(config=bound.config(config),
                  templates=tuple(Template(tuple(tokens), max_tokens, f"P{t}")
                                  for t, (tokens, max_tokens) in enumerate(bound.template_list)))
    engine = build_engine(bound, config)
    ops: list[tuple] = []
    pending = 0  # engine commands since the last client operation

    def flush(steps: int) -> None:
        if steps:
            ops.append(("step", steps))

    computing = 0
    for command in [*path, *([failing] if failing is not None else [])]:
        if command.name in ENVIRONMENT_ACTIONS:
            flush(max(computing, 1) if pending else 0)
            pending = computing = 0
            ops.extend(_client_op(engine, command))
        else:
            pending += 1
            computing += command.name in FORWARD_PASSES
        try:
            execute(engine, bound, command)
        except Exception:  # noqa: BLE001 -- the failing command may fail any way; the path before it conformed
            pass
    flush(max(computing, 1) if pending else 0)
    if finishing is not None and failing is not None and failing.arg in engine.scheduler.requests:
        tokens = engine.scheduler.requests[failing.arg].token_ids
        t = next(k for k, (tpl, _m) in enumerate(bound.template_list) if tuple(tpl) == tuple(tokens))
        setup = replace(setup, eos_template=t if finishing.eos else None,
                        stop_template=t if finishing.stop == "match" else None)
    return Program(setup, tuple(ops))


def replay_program(program: Program, mutant: str | None = None) -> tuple[bool, str]:
    """Run ``program`` under the conformance monitor (the tiny model), patched with ``mutant`` if given:
    ``(failed, what it says)``."""
    from contextlib import nullcontext

    from flightcheck.checks.conform.mutants import get_mutant
    from flightcheck.checks.conform.runner import run_program

    with get_mutant(mutant).patched() if mutant else nullcontext():
        out = run_program(program)
    if out.ok:
        return False, "the conformance run of the program passes (the step's order does not retrace the path)"
    d = out.diagnosis
    props = f" [{', '.join(d.properties)}]" if d.properties else ""
    return True, f"fails: {d.summary}{props}"
