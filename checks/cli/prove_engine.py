"""``prove --engine``: the engine's own guard/command pairs against the spec's actions at every engine state
in a bound (:mod:`flightcheck.checks.symbolic`), printed and turned into the exit status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from flightcheck.checks.cli.common import mutant_named
from flightcheck.checks.errors import check_choice, usage_error


def prove_engine_command(bound_text: Optional[str], mutant: Optional[str], method: str, seconds: Optional[float],
                  program_out: Optional[Path], as_json: bool) -> None:
    """``prove --engine``: the engine's guard/command pairs against the spec's actions at every engine state
    in the bound (:mod:`flightcheck.checks.symbolic`); exit 1 on a counterexample, 0 only when every action
    is verified (an unfinished action is not a pass: exit 1, said so)."""
    from flightcheck.checks.symbolic.bound import parse_bound
    from flightcheck.checks.symbolic.check import METHODS, check_engine

    try:
        bound = parse_bound(bound_text or "2,3")
    except ValueError as error:
        raise usage_error(f"--bound: {error}") from None
    mutant_named(mutant)  # an unknown name is a usage error listing the known ones
    check_choice("method", method, METHODS)
    if seconds is not None and seconds <= 0:
        raise usage_error(f"--seconds must be > 0; got {seconds}")
    rows = check_engine(bound, mutant=mutant, method=method, time_limit=seconds)
    found = next((r.counterexample for r in rows if r.counterexample is not None), None)
    if program_out is not None and found is not None and found.program is not None:
        program_out.write_text(json.dumps(found.program, indent=1) + "\n", encoding="utf-8")
    if as_json:
        print(json.dumps({"bound": str(bound), "mutant": mutant, "method": method,
                          "verdict": "ok" if all(r.verdict == "verified" for r in rows) else
                          ("counterexample" if found else "unfinished"),
                          "actions": [r.to_json() for r in rows]}))
    else:
        for r in rows:
            print(r.line())
        if found is not None:
            print("\n" + found.format())
            if program_out is not None:
                print(f"\nthe conformance program is in {program_out}; replay it on the engine with "
                      f"`flightcheck conform --replay {program_out}`")
    raise typer.Exit(0 if all(r.verdict == "verified" for r in rows) else 1)
