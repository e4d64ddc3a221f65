"""The server campaign: seeded programs against the real server, the ``server`` stage of ``flightcheck check``.

:func:`server_stage` runs the controlled scheduler's seeded schedules (:mod:`.interleave`), a row
each, then :data:`QUICK_PROGRAMS` seeded programs under ``--quick`` and :data:`FULL_PROGRAMS`
otherwise, a row per program, then a row per ``flightcheck serve`` option and value that changes what
the server does (:mod:`.options`; every one, under ``--quick`` too). A failing program is shrunk (clients dropped one at
a time while the same property still fails, within ``ctx.shrink_seconds``, at most
:data:`MAX_SHRINK_S`), saved as JSON under ``ctx.save_dir``, and named in the row with the property,
the client and what it saw; :func:`replay` runs a saved program again::

    python -m flightcheck.checks.server --replay server-seed3.json

For example::

    >>> from flightcheck.checks.suite.context import Context
    >>> rows = server_stage(Context(quick=True), seeds=[0])
    >>> [(r.item, r.ok) for r in rows]
    [('seed 0', True)]
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from flightcheck.checks.server.harness import PROPERTIES, Outcome, run_program
from flightcheck.checks.server.program import Program, random_program

QUICK_PROGRAMS = 6    # seeds 0..5 under --quick (about a second each here)
FULL_PROGRAMS = 40    # seeds 0..39 otherwise
MAX_SHRINK_S = 30.0   # the most a failing program is shrunk in the stage, whatever ctx.shrink_seconds says


def shrink(outcome: Outcome, seconds: float, run: Callable[[Program], Outcome] = run_program) -> Outcome:
    """A smaller program failing on the same property as ``outcome`` (clients dropped one at a time, the
    last first, each drop kept when the property still fails), within ``seconds``; ``outcome`` itself
    when nothing could be dropped. Timing-dependent failures may not shrink: each try runs once."""
    target = outcome.properties[0]
    best = outcome
    deadline = time.monotonic() + seconds
    for client in reversed(outcome.program.clients):
        if time.monotonic() > deadline or len(best.program.clients) <= 1:
            break
        smaller = best.program.without(client.index)
        tried = run(smaller)
        if target in tried.properties:
            best = tried
    if best is not outcome:
        origin = (f"{outcome.program.origin}, shrunk from {len(outcome.program.clients)} to "
                  f"{len(best.program.clients)} clients")
        best.program = Program(best.program.seed, best.program.config, best.program.clients, origin)
    return best


def replay(path: str | Path) -> Outcome:
    """Runs the program saved at ``path`` again (:class:`~.program.ProgramError` when it is not one)."""
    return run_program(Program.load(Path(path)))


def save_failure(outcome: Outcome, save_dir: Path) -> Path:
    """Writes the failing program (and, for people, its violations) to ``save_dir``; returns the path."""
    import json

    save_dir.mkdir(parents=True, exist_ok=True)
    path = save_dir / f"server-seed{outcome.program.seed}.json"
    obj = outcome.program.to_json()
    obj["violations"] = [{"property": v.property, "client": v.client, "message": v.message} for v in outcome.violations]
    path.write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
    return path


def _row(outcome: Outcome, item: str, seconds: float, saved: Path | None) -> Any:
    from flightcheck.checks.suite.job import Row

    stats = outcome.stats
    evidence = {"seed": outcome.program.seed, "program": outcome.program.summary(), "stats": stats,
                "properties": list(PROPERTIES), "violated": outcome.properties,
                "violations": [{"property": v.property, "client": v.client, "message": v.message}
                               for v in outcome.violations]}
    if outcome.ok:
        phases = ", ".join(f"{n} {phase}" for phase, n in sorted((stats.get("aborted_in") or {}).items()))
        detail = (f"{len(outcome.program.clients)} clients, {stats.get('requests', 0)} requests "
                  f"({stats.get('aborted', 0)} aborted" + (f": {phases}" if phases else "") + "), "
                  f"{stats.get('events', 0)} events a run of the spec; all {len(PROPERTIES)} properties hold")
        return Row("server", item, True, detail, seconds, evidence)
    first = outcome.violations[0]
    detail = first.describe(outcome.program)  # starts with the property
    others = [p for p in outcome.properties if p != first.property]
    if others:
        detail += f" (also violated: {', '.join(others)})"
    if len(outcome.violations) > 1:
        detail += f" (and {len(outcome.violations) - 1} more)"
    if saved is not None:
        detail += (f"; program ({outcome.program.origin}) saved to {saved} "
                   f"(python -m flightcheck.checks.server --replay {saved})")
        evidence["saved"] = str(saved)
    evidence["report"] = outcome.report()
    return Row("server", item, False, detail, seconds, evidence)


def server_stage(ctx: Any, seeds: list[int] | None = None, schedules: list[int] | None = None,
                 options: list[str] | None = None) -> list[Any]:
    """The ``server`` stage: a row per seeded schedule under the controlled scheduler (:mod:`.interleave`),
    then a row per seeded program run against the real server on its sockets, then a row per
    ``flightcheck serve`` option (and value) that changes what the server does (:mod:`.options`, all of
    them under ``--quick`` too). ``seeds``, ``schedules`` and ``options`` (serve options by parameter
    name) pick them; with none given, the defaults of ``ctx.quick`` for the first two and every option;
    with any given, none of those not given. With ``ctx.first_failure`` it stops at the first failing row.

    Why the schedules first: they are deterministic and stop at the first violation they meet, so a
    planted bug (``flightcheck mutate``) is found in tenths of a second where a socket program waits
    out its grace periods."""
    from flightcheck.checks.server.interleave import interleave_rows
    from flightcheck.checks.server.options import OPTIONS, option_rows
    from flightcheck.checks.suite.job import crashed_row

    if seeds is None and schedules is None and options is None:
        seeds = list(range(QUICK_PROGRAMS if ctx.quick else FULL_PROGRAMS))
        options = list(OPTIONS)
    elif schedules is None:
        schedules = []
    rows = []
    if schedules != []:
        rows += interleave_rows(quick=ctx.quick, seeds=schedules, save_dir=Path(ctx.save_dir),
                                shrink_seconds=float(getattr(ctx, "shrink_seconds", 0.0) or 0.0),
                                first_failure=ctx.first_failure)
        if ctx.first_failure and any(not r.ok for r in rows):
            return rows
    for seed in seeds or []:
        t = time.perf_counter()
        item = f"seed {seed}"
        try:
            outcome = run_program(random_program(seed))
            saved = None
            if not outcome.ok:
                budget = min(float(getattr(ctx, "shrink_seconds", 0.0) or 0.0), MAX_SHRINK_S)
                if budget > 0:
                    outcome = shrink(outcome, budget)
                saved = save_failure(outcome, Path(ctx.save_dir))
            rows.append(_row(outcome, item, time.perf_counter() - t, saved))
        except Exception as error:  # the server (a failed row) or flightcheck itself (an error row) raised
            rows.append(crashed_row("server", item, error, time.perf_counter() - t))
        if ctx.first_failure and not rows[-1].ok:
            return rows
    if options:
        rows += option_rows(options, first_failure=ctx.first_failure)
    return rows


__all__ = ["FULL_PROGRAMS", "MAX_SHRINK_S", "QUICK_PROGRAMS", "replay", "save_failure", "server_stage", "shrink"]
