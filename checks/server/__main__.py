"""``python -m flightcheck.checks.server``: run seeded server programs or schedules, or replay a saved one.

Programs run against the real server on its sockets; with ``--controlled``, each seed's program runs
under the controlled scheduler with that seed's schedule (a failure is shrunk with ``--shrink S``
seconds and saved with ``--save DIR``). ``--replay`` takes either kind of file: a server program
(``server-seedN.json``) or a schedule (``interleave-seedN.json``, which replays step for step, or with
``--follow`` where its steps can still move: on code that changed since, such as the fix).

Exit 0 when every property held, 1 when one failed (the violations are printed), 2 on a bad argument
or a file that is neither, 3 when flightcheck itself failed (its traceback written to a file).

For example::

    $ python -m flightcheck.checks.server --seeds 0-3
    $ python -m flightcheck.checks.server --replay server-seed3.json
    $ python -m flightcheck.checks.server --seeds 0 --mutant stream-left-open
    $ python -m flightcheck.checks.server --controlled --seeds 0-7 --mutant abort-raced-release --shrink 60 --save .
    $ python -m flightcheck.checks.server --replay interleave-seed0.json
    $ python -m flightcheck.checks.server --replay interleave-seed0.json --follow   # on the fixed code
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any


def parse_seeds(text: str) -> list[int]:
    """``"3"``, ``"0-5"`` or ``"1,4,9"`` as a list of seeds (``ValueError`` naming the text otherwise)."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"--seeds {text!r}: expected N, N-M or a comma-separated list of those")
        seeds += list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
    return seeds


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    from flightcheck.checks.server.harness import run_program
    from flightcheck.checks.server.mutants import SERVER_MUTANTS
    from flightcheck.checks.server.program import ProgramError, random_program
    from flightcheck.checks.server.schedule import ScheduleDiverged

    parser = argparse.ArgumentParser(prog="python -m flightcheck.checks.server", description=__doc__.splitlines()[0])
    parser.add_argument("--replay", help="a program saved by a failing run (server-seedN.json)")
    parser.add_argument("--seeds", default="0-5", help="seeds to run: N, N-M or a list (default 0-5)")
    parser.add_argument("--mutant", choices=sorted(SERVER_MUTANTS), help="plant a server bug first")
    parser.add_argument("--controlled", action="store_true", help="run under the controlled scheduler")
    parser.add_argument("--shrink", type=float, default=0.0, metavar="S",
                        help="--controlled: seconds to shrink a failing schedule (default 0)")
    parser.add_argument("--save", metavar="DIR", help="--controlled: save failing schedules here")
    parser.add_argument("--follow", action="store_true",
                        help="--replay of a schedule: follow its actions where they can move and skip the others "
                             "(for code that changed since it was recorded, e.g. the fix)")
    args = parser.parse_args(argv)
    if args.shrink < 0:
        print(f"error: --shrink {args.shrink:g}: seconds must be >= 0", file=sys.stderr)
        return 2
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    planted = SERVER_MUTANTS[args.mutant][0]() if args.mutant else contextlib.nullcontext()
    failed = False
    with planted:
        try:
            if args.replay:
                outcomes = [_replay_any(args.replay, args.follow)]
            elif args.controlled:
                outcomes = [_controlled(seed, args.shrink, args.save) for seed in seeds]
            else:
                outcomes = [run_program(random_program(s)) for s in seeds]
        except (ProgramError, ScheduleDiverged) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for outcome in outcomes:
            verdict = "ok" if outcome.ok else "FAILED: " + ", ".join(outcome.properties)
            print(f"{outcome.program.origin}: {verdict} ({outcome.seconds:.1f} s)")
            if not outcome.ok:
                print(outcome.report())
                failed = True
    return 1 if failed else 0


def _replay_any(path: str, follow: bool = False) -> Any:
    """The outcome of replaying ``path``: a schedule step for step (or, with ``follow``, where its steps
    can move), or a program on the sockets."""
    import json
    from pathlib import Path

    from flightcheck.checks.server.campaign import replay
    from flightcheck.checks.server.controlled import replay_schedule
    from flightcheck.checks.server.schedule import FORMAT, Schedule

    try:
        is_schedule = json.loads(Path(path).read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        is_schedule = False  # Program.load names what is wrong with it
    if not is_schedule:
        return replay(path)
    schedule = Schedule.load(Path(path))
    if follow:
        from flightcheck.checks.server.controlled import run_schedule
        from flightcheck.checks.server.schedule import Follow

        return run_schedule(schedule.program, Follow(schedule.actions), origin=f"{schedule.origin}, followed")
    return replay_schedule(schedule)


def _controlled(seed: int, shrink_seconds: float, save: str | None) -> Any:
    """Seed ``seed``'s program under its schedule; a failure shrunk and saved as asked."""
    from pathlib import Path

    from flightcheck.checks.server.interleave import run_seed, save_failure, shrink

    outcome = run_seed(seed)
    if not outcome.ok and shrink_seconds > 0:
        outcome = shrink(outcome, shrink_seconds)
    if not outcome.ok and save:
        print(f"saved to {save_failure(outcome, Path(save))}")
    return outcome


def run(argv: list[str] | None = None) -> int:
    """:func:`main`, with a fault of flightcheck itself (anything else it lets escape) turned into one line
    and exit 3, its traceback in a file: a crash never reads as a verdict (1)."""
    from flightcheck.checks.faults import EXIT_FAULT, fault_message, write_traceback

    try:
        return main(argv)
    except Exception as error:  # noqa: BLE001 - the campaign's own failures are rows; this is a fault
        print(f"error: {fault_message(error, write_traceback(error))}", file=sys.stderr)
        return EXIT_FAULT


if __name__ == "__main__":
    sys.exit(run())
