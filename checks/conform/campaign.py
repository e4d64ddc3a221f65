"""Conformance campaigns: Hypothesis's lockstep fuzzing, and the seeded campaign whose verdict never varies.

:func:`run_conformance` runs :class:`~flightcheck.checks.conform.machine.EngineConformance` for a number
of examples (or seconds), shrinks the first failure with Hypothesis, then minimises its program
(:mod:`flightcheck.checks.conform.minimize`): what ``flightcheck conform`` runs.

:func:`run_programs` runs a sequence of programs (the regression corpus, or :func:`seeded_programs`) one
after another with no randomness of its own, stops at the first failure and minimises it: what
``flightcheck check`` runs, so the same commit gives the same verdict every time. A failure's program is
written to a file that ``flightcheck conform --replay`` runs again.

Both return a :class:`~flightcheck.checks.conform.results.ConformResult`; a campaign passes only when no
run failed, whatever Hypothesis made of the example.

For example::

    >>> result = run_programs(seeded_programs(seed=0, count=3))
    >>> result.ok, result.runs
    (True, 3)
"""

from __future__ import annotations

import hashlib
import random
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from flightcheck.checks.conform.diagnosis import Diagnosis
from flightcheck.checks.conform.generate import random_program
from flightcheck.checks.conform.machine import campaign_machine
from flightcheck.checks.conform.minimize import minimize, same_failure
from flightcheck.checks.conform.program import Program
from flightcheck.checks.conform.results import ConformFailure, ConformOptions, ConformResult
from flightcheck.checks.conform.runner import RunOutcome, run_program


def transitions_of(spec: Any, actions: list[str]) -> set:
    """The canonical spec edges ``(scenario requests, state, action name, next state)`` a path visits."""
    from flightcheck.spec.model import parse_action

    sym = spec.symmetry()
    out, s = set(), spec.initial()
    for text in actions:
        a = parse_action(text)
        t = spec.apply(s, a)
        out.add((spec.scenario.requests, sym.canonical(s)[0], a.name, sym.canonical(t)[0]))
        s = t
    return out


# --- the deterministic campaign ----------------------------------------------------------------------------
def seeded_programs(seed: int, count: int, *, fixed: dict | None = None) -> Iterator[Program]:
    """``count`` free programs drawn from ``seed`` (program k from ``seed`` and k, so a prefix is stable)."""
    for k in range(count):
        yield random_program(random.Random(f"{seed}:{k}"), fixed=fixed)


def run_programs(programs: Iterable[Program], model: str = "tiny", *, seconds: float | None = None,
                 save_dir: str | Path | None = None, seed: int | None = None,
                 shrink_seconds: float = 60.0) -> ConformResult:
    """Run programs in order until one fails (minimised, saved under ``save_dir``) or ``seconds`` pass."""
    result = ConformResult(ok=True)
    t0 = time.perf_counter()
    for program in programs:
        if seconds is not None and time.perf_counter() - t0 >= seconds:
            break
        out = run_program(program, model)
        _tally(result, out)
        if not out.ok:
            result.ok = False
            result.failure = _shrunk(out, model, shrink_seconds)
            result.failure.seed = seed
            if save_dir is not None:
                result.failure.saved_to = str(save_failure(result.failure.program, save_dir))
            break
    result.seconds = time.perf_counter() - t0
    return result


def _tally(result: ConformResult, out: RunOutcome) -> None:
    result.runs += 1
    result.steps += out.steps
    result.events += out.events
    result.rules += len(out.rules)
    for k, v in out.features.items():
        result.features[k] = result.features.get(k, 0) + v
    if out.ok and out.spec is not None:
        result.transitions |= transitions_of(out.spec, out.actions)


def _shrunk(out: RunOutcome, model: str, seconds: float) -> ConformFailure:
    """The failing run minimised to the operations its failure needs, rerun to report it."""
    wanted = out.diagnosis
    smallest = minimize(out.program, lambda p: same_failure(wanted, run_program(p, model).diagnosis), seconds=seconds)
    final = run_program(smallest, model)
    if not same_failure(wanted, final.diagnosis):  # cannot happen for a deterministic engine; keep the original
        final = out
    return ConformFailure(final.rules, final.diagnosis, final.program)


def save_failure(program: Program, directory: str | Path) -> Path:
    """Write a failing program as ``failure-<hash>.json`` under ``directory``; returns its path."""
    text = program.dumps()
    path = Path(directory) / f"failure-{hashlib.sha256(text.encode()).hexdigest()[:10]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


# --- Hypothesis ------------------------------------------------------------------------------------------
def run_conformance(opts: ConformOptions) -> ConformResult:
    """Run a Hypothesis campaign; stops at the first failure (shrunk) or when the budget is spent."""
    from hypothesis import Phase

    result = ConformResult(ok=True)
    t0 = time.perf_counter()
    batch = opts.examples if opts.seconds is None else max(5, min(opts.examples, 200))
    # Targeting hill-climbs from the best run of each feature; on short campaigns it crowds out the
    # variety (measured: no aborts at all in 60 examples), so it joins only longer ones.
    phases = [Phase.generate, Phase.shrink] if batch < 100 else [Phase.generate, Phase.target, Phase.shrink]
    # Shrinking replays the whole engine run per attempt; Hypothesis caps it at 300 s by a module
    # constant (no public setting), so a campaign lowers that cap while it runs and restores it after.
    from hypothesis.internal.conjecture import engine as conjecture_engine
    saved_cap = getattr(conjecture_engine, "MAX_SHRINKING_SECONDS", None)
    if saved_cap is not None:
        conjecture_engine.MAX_SHRINKING_SECONDS = opts.shrink_seconds
    from hypothesis.reporting import with_reporter
    try:
        # Hypothesis's own report (its minimal program, its shrink-time warning) is replaced by the
        # run's rule list and the diagnosis, so it is silenced here.
        with with_reporter(lambda _message: None):
            _campaign(opts, result, batch, opts.seed, phases, t0)
    finally:
        if saved_cap is not None:
            conjecture_engine.MAX_SHRINKING_SECONDS = saved_cap
    if result.failure is not None and result.failure.program is not None:
        wanted = result.failure.diagnosis
        out = run_program(result.failure.program, opts.model)
        if same_failure(wanted, out.diagnosis):
            result.failure = _shrunk(out, opts.model, opts.shrink_seconds)
    result.ok = result.failure is None and result.ok
    result.seconds = time.perf_counter() - t0
    return result


def _campaign(opts: ConformOptions, result: ConformResult, batch: int, seed: int | None, phases: list,
              t0: float) -> None:
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    while True:
        machine = campaign_machine(opts, result)
        cfg = settings(max_examples=batch, stateful_step_count=opts.max_rules, deadline=None, database=None,
                       suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                       phases=phases, print_blob=False)
        machine.TestCase.settings = cfg
        if seed is not None:
            from hypothesis import seed as hyp_seed
            machine = hyp_seed(seed)(machine)  # read by run_state_machine_as_test from the factory
        try:
            run_state_machine_as_test(machine, settings=cfg)
        except Exception as error:
            result.ok = False
            if result.failure is None:
                result.failure = ConformFailure([], Diagnosis("error", f"{type(error).__name__}: {error}"))
            break
        if result.failure is not None:  # found while draining and discarded by Hypothesis: still a failure
            result.ok = False
            break
        if opts.seconds is None or time.perf_counter() - t0 >= opts.seconds:
            break
        seed = None if seed is None else seed + 1
