"""``flightcheck check``: the main job, every check over the default scenarios, with one summary.

The suite is a list of stages (:mod:`flightcheck.checks.cli.stages`), each a function
``stage(ctx) -> list[Row]``, listed by import path in :data:`STAGES` so that a stage whose
dependencies are missing reports itself as an error row instead of breaking the rest. Every row carries
its evidence (paths, counts, verdicts) for ``--json`` and for the report that ``run_suite`` writes with
``report_dir`` (:mod:`flightcheck.checks.report`); a report that cannot be written is a failed row too.

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


def write_report(rows: list[Row], out_dir: Path, options: dict[str, Any], model: str = "tiny") -> tuple[Path, list[str]]:
    """Build and write the HTML report of ``rows`` under ``out_dir``: its index's path, and what could
    not be drawn."""
    from flightcheck.checks.report.build import build_report
    from flightcheck.checks.report.html_page import write_report as write_html

    report = build_report(rows, options=options, model=model)
    return write_html(report, out_dir), report.problems


def run_suite(*, as_json: bool = False, quick: bool = False, budget: float | None = None, model: str = "tiny",
              record: bool = False, save_dir: Path | None = None, stages: list[str] | None = None,
              report_dir: Path | None = None) -> bool:
    """Run every stage (or those named), print the summary (or JSON), and return True when everything
    passed. ``record`` writes this run's figures as the expected ones (after a change that is meant);
    ``report_dir`` writes the HTML report there and names it in the last line."""
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
        task = progress.add_task("flightcheck check", total=len(todo) + (report_dir is not None))
        for stage, path in todo:
            progress.update(task, description=f"running {stage}")
            t = time.perf_counter()
            try:
                rows += _load(path)(ctx)
            except Exception as e:  # a broken stage is a failed row, never a silent pass
                rows.append(Row(stage, "(stage)", False, f"{type(e).__name__}: {e}", time.perf_counter() - t))
            if console.is_terminal:  # a line per stage as it ends, above the bar (a long run shows where it is)
                mine = [r for r in rows if r.stage == stage]
                bad = sum(not r.ok for r in mine)
                progress.console.print(f"{stage}: {len(mine)} rows, " + (f"[bold red]{bad} failed[/]" if bad else
                                       "[green]all passed[/]") + f" ({time.perf_counter() - t:.1f} s)", highlight=False)
            progress.advance(task)
        report_path = None
        if report_dir is not None:
            progress.update(task, description="writing the report")
            t = time.perf_counter()
            options = {"quick": quick, "budget": budget, "model": model, "stages": ",".join(stages) if stages else None}
            try:
                report_path, problems = write_report(rows, report_dir, options, model)
                if problems:
                    rows.append(Row("report", str(report_path), False, "not drawn: " + "; ".join(problems),
                                    time.perf_counter() - t))
            except Exception as e:  # the report is part of the job: one that cannot be written fails it
                rows.append(Row("report", str(report_dir), False, f"{type(e).__name__}: {e}", time.perf_counter() - t))
                report_path = None
            progress.advance(task)
    if record:
        ctx.expect.save()
    ok = all(r.ok for r in rows)
    if as_json:
        # stdout is the JSON alone (the report's path is in it), so a CI system can parse it whole.
        print(json.dumps({"verdict": "ok" if ok else "failed", "report": str(report_path) if report_path else None,
                          "rows": [asdict(r) for r in rows]}))
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
    if report_path:
        console.print(f"report: {report_path}", markup=False, highlight=False)
    return ok
