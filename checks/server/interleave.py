"""The interleavings campaign: seeded schedules of seeded programs, a failure shrunk to a short schedule.

Each seed gives a program (:func:`~.program.random_program`) and a chooser, in turn: probabilistic
concurrency testing (:class:`~.schedule.PriorityChooser`, long runs of one actor, which races need),
uniform choice (:class:`~.schedule.RandomChooser`, many short alternations), and loop-first
(:class:`~.schedule.LoopFirstChooser`, the event loop run to idle between any two other moves: the
real server's timing, where handlers run while a forward pass lasts). A failing run
is shrunk by :func:`shrink`, deterministically (every try is a controlled run, so a failure that
shrinks stays failing), keeping the first property that failed:

1. the choices after the last departure from order are dropped (the defaults finish the run);
2. each client is dropped, the last first, where it still fails (the others' actions are followed by
   name, so they keep their interleaving);
3. the list of choices is cut shorter while it still fails, then each remaining departure is put back
   in order (choice 0), the last first, where it still fails.

A run stops at the first violation found on the way (:func:`~.controlled.run_schedule`), so a try
costs what the failure needs, not a whole run.

The result is saved as a schedule file that replays identically::

    python -m flightcheck.checks.server --replay interleave-seed4.json

For example::

    >>> [type(chooser_of(seed)).__name__ for seed in (3, 4, 5)]
    ['PriorityChooser', 'RandomChooser', 'LoopFirstChooser']
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from flightcheck.checks.server.controlled import MAX_STEPS, Interleaving, run_schedule
from flightcheck.checks.server.program import Program, random_program
from flightcheck.checks.server.schedule import (
    Follow, FromList, LoopFirstChooser, PriorityChooser, RandomChooser, Schedule, actor_of,
)

QUICK_SCHEDULES = 3    # seeds 0..2 under --quick: one schedule of each chooser
FULL_SCHEDULES = 24    # seeds 0..23 otherwise
MAX_SHRINK_S = 60.0    # the most a failure is shrunk in the stage
ONLINE = ("disconnect_aborts", "log_valid")  # the properties a run finds on its way, not at its end


CHOOSERS = (("PCT", PriorityChooser), ("uniform", RandomChooser), ("loop-first", LoopFirstChooser))


def chooser_of(seed: int) -> Any:
    """The chooser of ``seed``: PCT, uniform and loop-first in turn (``seed % 3``)."""
    return CHOOSERS[seed % len(CHOOSERS)][1](seed)


def run_seed(seed: int) -> Interleaving:
    """The program of ``seed`` under the chooser of ``seed``."""
    kind = CHOOSERS[seed % len(CHOOSERS)][0]
    return run_schedule(random_program(seed), chooser_of(seed), origin=f"seed {seed} ({kind} schedule)")


def shrink(outcome: Interleaving, seconds: float) -> Interleaving:
    """A shorter schedule (and smaller program) failing on the same first property (see the module);
    ``outcome`` itself when nothing could be taken away within ``seconds``."""
    target = outcome.properties[0]
    # Why a cap for the properties found on the way: a try that has not failed well after where the
    # failure was found will not fail that way, and running it to its end is most of a shrink's time.
    cap = 2 * len(outcome.schedule.actions) + 200 if target in ONLINE else MAX_STEPS
    deadline = time.monotonic() + seconds
    best, numbers, program = outcome, list(outcome.choices), outcome.program
    tries = 0

    def attempt(p: Program, chooser: Any) -> bool:
        nonlocal best, numbers, program, tries
        if time.monotonic() > deadline:
            return False
        tries += 1
        tried = run_schedule(p, chooser, max_steps=cap)
        if target in tried.properties:
            best, numbers, program = tried, _trimmed(tried.choices), p
            return True
        return False

    def cut_and_order() -> None:
        if numbers and attempt(program, FromList([])):
            return  # the defaults alone fail: no choice is needed
        size = len(numbers) // 2
        while 1 <= size < len(numbers) and time.monotonic() < deadline:  # shorter lists, halving the cut
            if not attempt(program, FromList(numbers[:len(numbers) - size])):
                size //= 2
        for i in reversed([i for i, n in enumerate(numbers) if n]):
            if i < len(numbers) and numbers[i]:
                attempt(program, FromList(numbers[:i] + [0] + numbers[i + 1:]))

    attempt(program, FromList(_trimmed(numbers)))
    for client in reversed(program.clients):
        if len(program.clients) > 1 and client in program.clients:
            actor = f"c{client.index}"
            attempt(program.without(client.index),
                    Follow([a for a in best.schedule.actions if actor_of(a) != actor]))
    for _ in range(3):  # again while a pass takes something away (an order put back may free a cut)
        before = (len(numbers), sum(1 for n in numbers if n))
        cut_and_order()
        if (len(numbers), sum(1 for n in numbers if n)) == before:
            break
    if best is not outcome:
        origin = (f"{outcome.program.origin}, shrunk from {len(outcome.schedule.actions)} steps "
                  f"({len(outcome.schedule.departures)} out of order) and {len(outcome.program.clients)} clients "
                  f"to {len(best.schedule.actions)} steps ({len(best.schedule.departures)} out of order) and "
                  f"{len(best.program.clients)} clients, in {tries} tries")
        best.program = Program(best.program.seed, best.program.config, best.program.clients, origin)
        best.schedule = Schedule(best.program, best.schedule.actions, best.schedule.departures, origin)
    return best


def _trimmed(numbers: list[int]) -> list[int]:
    """``numbers`` without its trailing zeros (the defaults choose those anyway)."""
    end = len(numbers)
    while end and not numbers[end - 1]:
        end -= 1
    return numbers[:end]


def save_failure(outcome: Interleaving, save_dir: Path) -> Path:
    """Writes the failing schedule (with its violations, for people) to ``save_dir``; returns the path."""
    save_dir.mkdir(parents=True, exist_ok=True)
    assert outcome.schedule is not None
    path = save_dir / f"interleave-seed{outcome.program.seed}.json"
    violations = [{"property": v.property, "client": v.client, "message": v.message} for v in outcome.violations]
    return outcome.schedule.save(path, {"violations": violations})


def _row(outcome: Interleaving, item: str, seconds: float, saved: Path | None) -> Any:
    from flightcheck.checks.suite.job import Row

    stats = outcome.stats
    schedule = outcome.schedule
    evidence = {"seed": outcome.program.seed, "program": outcome.program.summary(), "stats": stats,
                "violated": outcome.properties,
                "violations": [{"property": v.property, "client": v.client, "message": v.message}
                               for v in outcome.violations]}
    if outcome.ok:
        detail = (f"{schedule.origin}: {len(outcome.program.clients)} clients, {stats.get('steps', 0)} scheduler "
                  f"steps ({stats.get('departures', 0)} out of order), {stats.get('requests', 0)} requests "
                  f"({stats.get('aborted', 0)} aborted), {stats.get('events', 0)} events checked online; "
                  "every property holds")
        return Row("server", item, True, detail, seconds, evidence)
    first = outcome.violations[0]
    detail = first.describe(outcome.program)
    detail += (f"; schedule ({schedule.origin}): {len(schedule.actions)} steps, {len(schedule.departures)} out "
               f"of order")
    if saved is not None:
        detail += f", saved to {saved} (python -m flightcheck.checks.server --replay {saved})"
        evidence["saved"] = str(saved)
    evidence["report"] = outcome.report()
    return Row("server", item, False, detail, seconds, evidence)


def interleave_rows(*, quick: bool, seeds: list[int] | None = None, save_dir: Path | None = None,
                    shrink_seconds: float = 0.0, first_failure: bool = False) -> list[Any]:
    """The ``server`` stage's controlled rows: a row per seed (see the module)."""
    from flightcheck.checks.suite.job import crashed_row

    if seeds is None:
        seeds = list(range(QUICK_SCHEDULES if quick else FULL_SCHEDULES))
    rows = []
    for seed in seeds:
        t = time.perf_counter()
        item = f"interleavings seed {seed}"
        try:
            outcome = run_seed(seed)
            saved = None
            if not outcome.ok:
                budget = min(shrink_seconds, MAX_SHRINK_S)
                if budget > 0:
                    outcome = shrink(outcome, budget)
                if save_dir is not None:
                    saved = save_failure(outcome, Path(save_dir))
            rows.append(_row(outcome, item, time.perf_counter() - t, saved))
        except Exception as error:  # the server (a failed row) or flightcheck itself (an error row) raised
            rows.append(crashed_row("server", item, error, time.perf_counter() - t))
        if first_failure and not rows[-1].ok:
            break
    return rows


__all__ = ["FULL_SCHEDULES", "MAX_SHRINK_S", "QUICK_SCHEDULES", "chooser_of", "interleave_rows", "run_seed",
           "save_failure", "shrink"]
