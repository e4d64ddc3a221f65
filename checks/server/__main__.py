"""``python -m flightcheck.checks.server``: run seeded server programs, or replay a saved one.

Exit 0 when every property held, 1 when one failed (the violations are printed), 2 on a bad argument
or a file that is not a server program.

For example::

    $ python -m flightcheck.checks.server --seeds 0-3
    $ python -m flightcheck.checks.server --replay server-seed3.json
    $ python -m flightcheck.checks.server --seeds 0 --mutant stream-left-open
"""

from __future__ import annotations

import argparse
import contextlib
import sys


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
    from flightcheck.checks.server.campaign import replay
    from flightcheck.checks.server.harness import run_program
    from flightcheck.checks.server.mutants import SERVER_MUTANTS
    from flightcheck.checks.server.program import ProgramError, random_program

    parser = argparse.ArgumentParser(prog="python -m flightcheck.checks.server", description=__doc__.splitlines()[0])
    parser.add_argument("--replay", help="a program saved by a failing run (server-seedN.json)")
    parser.add_argument("--seeds", default="0-5", help="seeds to run: N, N-M or a list (default 0-5)")
    parser.add_argument("--mutant", choices=sorted(SERVER_MUTANTS), help="plant a server bug first")
    args = parser.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    planted = SERVER_MUTANTS[args.mutant][0]() if args.mutant else contextlib.nullcontext()
    failed = False
    with planted:
        try:
            outcomes = [replay(args.replay)] if args.replay else [run_program(random_program(s)) for s in seeds]
        except ProgramError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for outcome in outcomes:
            verdict = "ok" if outcome.ok else "FAILED: " + ", ".join(outcome.properties)
            print(f"{outcome.program.origin}: {verdict} ({outcome.seconds:.1f} s)")
            if not outcome.ok:
                print(outcome.report())
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
