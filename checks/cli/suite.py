"""``flightcheck check``: the main job, every check over the default scenarios, with one summary.

The suite is a list of stages (:mod:`flightcheck.checks.cli.stages`), each a function
``stage(quick: bool) -> list[Row]``, listed by import path in :data:`STAGES` so that a stage whose
dependencies are missing reports itself as an error row instead of breaking the rest.

For example::

    >>> Row("explore", "burst2", True, "52 states").ok
    True
"""

from __future__ import annotations

import importlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from typing import Callable

from rich.console import Console
from rich.table import Table


@dataclass
class Row:
    """One line of the summary: which stage, what was checked, whether it passed, and a detail."""

    stage: str
    item: str
    ok: bool
    detail: str
    seconds: float = 0.0
    evidence: dict[str, Any] = field(default_factory=dict)  # JSON-ready: properties, paths, counts


# Stages by import path, in the order they run. A stage that needs the real model is skipped by --quick.
STAGES: list[tuple[str, str, bool]] = [
    ("explore", "flightcheck.checks.cli.stages:explore_stage", False),
    ("variants", "flightcheck.checks.cli.stages:variants_stage", False),
    ("prove", "flightcheck.checks.cli.stages:prove_stage", False),
    ("equiv", "flightcheck.checks.cli.stages:equiv_stage", False),
    ("conform", "flightcheck.checks.cli.stages:conform_stage", False),
    ("smollm2", "flightcheck.checks.cli.stages:real_model_stage", True),
    ("workload", "flightcheck.checks.cli.stages:workload_stage", False),
]


def _load(path: str) -> Callable[[bool], list[Row]]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def run_suite(*, as_json: bool = False, quick: bool = False) -> bool:
    """Run every stage, print the summary (or JSON), and return True when everything passed."""
    console = Console(stderr=as_json)
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a log file gets whole lines, not wrapped cells
    rows: list[Row] = []
    for stage, path, needs_model in STAGES:
        if quick and needs_model:
            continue
        t = time.perf_counter()
        with console.status(f"running {stage} ..."):
            try:
                rows += _load(path)(quick)
            except Exception as e:  # a broken stage is a failed row, never a silent pass
                rows.append(Row(stage, "(stage)", False, f"{type(e).__name__}: {e}", time.perf_counter() - t))
    ok = all(r.ok for r in rows)
    if as_json:
        print(json.dumps({"verdict": "ok" if ok else "failed", "rows": [asdict(r) for r in rows]}))
        return ok
    table = Table(title="flightcheck check")
    for col in ("stage", "item", "verdict", "detail", "s"):
        table.add_column(col, justify="right" if col == "s" else "left")
    for r in rows:
        table.add_row(r.stage, r.item, "[green]ok[/]" if r.ok else "[bold red]FAIL[/]", r.detail, f"{r.seconds:.1f}")
    console.print(table)
    failed = sum(not r.ok for r in rows)
    console.print(f"[{'green' if ok else 'bold red'}]{len(rows) - failed} passed, {failed} failed[/]")
    return ok
