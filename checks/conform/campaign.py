"""A conformance campaign: Hypothesis runs the lockstep state machine until a failure or the budget.

:func:`run_conformance` runs :class:`~flightcheck.checks.conform.machine.EngineConformance` for a number
of examples (or seconds), shrinks the first failure with Hypothesis, then minimises its program
(:mod:`flightcheck.checks.conform.program`), and returns a
:class:`~flightcheck.checks.conform.results.ConformResult`.

For example::

    >>> result = run_conformance(ConformOptions(examples=3, max_rules=8, seed=0))
    >>> result.ok, result.runs >= 3, result.failure is None
    (True, True, True)
"""

from __future__ import annotations

import time

from flightcheck.checks.conform.machine import campaign_machine
from flightcheck.checks.conform.program import minimize
from flightcheck.checks.conform.results import ConformFailure, ConformOptions, ConformResult
from flightcheck.checks.conform.diagnosis import Diagnosis


def run_conformance(opts: ConformOptions) -> ConformResult:
    """Run a campaign; stops at the first failure (shrunk by Hypothesis) or when the budget is spent."""
    from hypothesis import Phase

    result = ConformResult(ok=True)
    t0 = time.perf_counter()
    batch = opts.examples if opts.seconds is None else max(5, min(opts.examples, 200))
    seed = opts.seed
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
            _campaign(opts, result, batch, seed, phases, t0)
    finally:
        if saved_cap is not None:
            conjecture_engine.MAX_SHRINKING_SECONDS = saved_cap
    if result.failure is not None and result.program is not None:
        result.failure = minimize(opts, result.failure, result.program)
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
        if opts.seconds is None or time.perf_counter() - t0 >= opts.seconds:
            break
        seed = None if seed is None else seed + 1
