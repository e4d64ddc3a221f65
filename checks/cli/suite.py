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
from pathlib import Path
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


def _load(path: str) -> Callable[..., list[Row]]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def run_suite(*, as_json: bool = False, quick: bool = False, budget: float | None = None, model: str = "tiny",
              record: bool = False, save_dir: Path | None = None, stages: list[str] | None = None) -> bool:
    """Run every stage (or those named), print the summary (or JSON), and return True when everything
    passed. ``record`` writes this run's figures as the expected ones (after a change that is meant)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from flightcheck.checks.cli.expect import Expectations
    from flightcheck.checks.cli.stages import Context

    console = Console(stderr=as_json)
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a log file gets whole lines, not wrapped cells
    ctx = Context(quick=quick, expect=Expectations() if record else Expectations.load(), budget=budget, model=model,
                  save_dir=save_dir or Path("."))
    todo = [(s, p) for s, p, needs_model in STAGES if not (quick and needs_model) and (stages is None or s in stages)]
    rows: list[Row] = []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} stages"),
                  TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("flightcheck check", total=len(todo))
        for stage, path in todo:
            progress.update(task, description=f"running {stage}")
            t = time.perf_counter()
            try:
                rows += _load(path)(ctx)
            except Exception as e:  # a broken stage is a failed row, never a silent pass
                rows.append(Row(stage, "(stage)", False, f"{type(e).__name__}: {e}", time.perf_counter() - t))
            progress.advance(task)
    if record:
        ctx.expect.save()
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
    for r in rows:
        report = r.evidence.get("report") or (r.evidence.get("failure") or {}).get("report")
        if not r.ok and report:
            console.print(f"[bold red]{r.stage} {r.item}[/]:")
            console.print(report, markup=False, highlight=False)
    failed = sum(not r.ok for r in rows)
    console.print(f"[{'green' if ok else 'bold red'}]{len(rows) - failed} passed, {failed} failed[/]")
    if record:
        console.print("recorded this run's figures as the expected ones: checks/cli/expectations.json")
    return ok
