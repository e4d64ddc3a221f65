"""Pinned numbers that more than one checker must reproduce exactly (explorer, BMC), read from the one
place they are recorded: checks/suite/expectations.json, the figures `flightcheck check` compares with.
A change that moves one fails the checkers' tests and `check` alike until `check --record` says it is
meant (and the diff of that file shows it)."""

import json
from pathlib import Path

_RECORDED = json.loads((Path(__file__).resolve().parents[1] / "checks" / "suite" / "expectations.json")
                       .read_text(encoding="utf-8"))

# variant -> (the property it must violate, its shortest counterexample length on its demo scenario)
MUTANTS = {name: (prop, length) for name, (prop, length) in sorted(_RECORDED["variants"].items())}
