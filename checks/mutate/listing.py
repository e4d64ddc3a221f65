"""The plan's mutants listed (``flightcheck mutate --list``): ID, line and status, nothing run.

For example::

    >>> from flightcheck.checks.mutate.plan import Plan
    >>> print_listing(Plan([], []), Console(), as_json=True)
    []
"""

from __future__ import annotations

import json

from rich.console import Console

from flightcheck.checks.mutate.plan import Plan


def print_listing(p: Plan, console: Console, *, as_json: bool = False) -> None:
    """Print the plan's mutants: to run, skipped (rule) or equivalent; one JSON list with ``as_json``."""
    rows = p.listing()
    if as_json:
        print(json.dumps([dict(m.to_json(), status=s) for m, s in rows]))
        return
    for m, status in rows:
        console.print(f"{m.line:4d} {status:22s} {m.id}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"{len(p.mutants)} mutants: {len(p.to_run)} to run, {len(p.skipped)} skipped, "
                  f"{len(p.equivalent)} equivalent", highlight=False)
