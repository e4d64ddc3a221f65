"""``flightcheck check``: the main job, every check over the default scenarios, with one summary.

The suite is a list of stages, each a module ``checks/suite/stage_NAME.py`` that declares its rows function
``stage(ctx) -> list[Row]`` (:mod:`flightcheck.checks.suite.registry`); the job loads each by import
path (:func:`stage_table`) so that a stage whose dependencies are missing reports itself as an error row
instead of breaking the rest. Every row carries
its evidence (paths, counts, verdicts) for ``--json`` and for the report that ``run_suite`` writes with
``report_dir`` (:mod:`flightcheck.checks.report`); a report that cannot be written is a failed row too.

A stage that raises is never a silent pass, and never a verdict it did not reach: when the exception
was raised by the code under check (the engine in ``impl/`` or the design in ``spec/``), the row
fails (the thing checked is wrong); when it was raised by flightcheck's own checkers, the row is an
*error* row, the run's verdict is "error" and ``check`` exits 3 (see
:mod:`flightcheck.checks.faults`), with the traceback written to a file the row names.

For example::

    >>> Row("explore", "burst2", True, "52 states").ok
    True
    >>> verdict([Row("a", "x", True, ""), Row("b", "y", False, "")]), verdict([Row("c", "z", False, "", error=True)])
    ('failed', 'error')
"""

from __future__ import annotations

import importlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from typing import Callable

from rich.console import Console
from rich.table import Table

from flightcheck.checks.cluster import Cluster, ClusterError
from flightcheck.checks.suite.claims import annotate, counts, strength_cell, summary_line
from flightcheck.checks.suite.claims import require_proof as claim_rule


@dataclass
class Row:
    """One line of the summary: which stage, what was checked, whether it passed, and a detail."""

    stage: str
    item: str
    ok: bool
    detail: str
    seconds: float = 0.0
    evidence: dict[str, Any] = field(default_factory=dict)  # JSON-ready: properties, paths, counts
    error: bool = False  # flightcheck itself failed here: not a verdict on what was checked (ok is False)
    # What the row establishes (:mod:`flightcheck.checks.suite.claims`, JSON-ready), set by the job from the
    # evidence: proved for all sizes, for its scenario, only bounded... None: the row checks no property.
    claim: dict[str, Any] | None = None


def verdict(rows: list[Row]) -> str:
    """The run's verdict: "error" when any row is an error (flightcheck failed: the run is not a verdict),
    else "failed" when any row failed, else "ok"."""
    if any(r.error for r in rows):
        return "error"
    return "ok" if all(r.ok for r in rows) else "failed"


def crashed_row(stage: str, item: str, error: BaseException, seconds: float) -> Row:
    """The row of a stage (or a report) that raised ``error``: a failed check when the code under check
    raised it, an error row (its traceback written to a file) when flightcheck's own code did."""
    from flightcheck.checks.faults import culprit, write_traceback

    who = culprit(error)
    text = f"{type(error).__name__}: {error}"
    if who in ("engine", "spec"):
        return Row(stage, item, False, f"the {who} under check raised {text}", seconds, {"raised_by": who})
    where = write_traceback(error)
    return Row(stage, item, False, f"error: flightcheck failed here ({text}); this is a bug in flightcheck, not a "
               f"verdict" + (f"; the traceback is in {where}" if where else ""), seconds,
               {"raised_by": "flightcheck", "traceback": str(where) if where else None}, error=True)


# The stages to run, as (name, rows function's import path, needs the real model) in the order they run:
# None reads them from the registry (:mod:`flightcheck.checks.suite.registry`, each stage's own
# declaration); a test or an embedder may set a list of its own.
STAGES: list[tuple[str, str, bool]] | None = None


def stage_table() -> list[tuple[str, str, bool]]:
    """The stages ``check`` runs: (name, import path of its rows function, whether it needs the real
    model, which ``--quick`` skips), in order; :data:`STAGES` when set, else every registered stage."""
    if STAGES is not None:
        return list(STAGES)
    from flightcheck.checks.suite.registry import stages

    return [(s.name, s.path, s.needs_model) for s in stages()]


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
              report_dir: Path | None = None, expectations: Path | None = None, scheduler: str | None = None,
              workers: int | None = None, require_proof: bool = False) -> str:
    """Run every stage (or those named), print the summary (or JSON), and return the verdict: "ok" when
    everything passed, "failed" when a check failed, "error" when flightcheck itself failed.

    ``record`` merges this run's figures into the recorded ones (after a change that is meant; see
    :meth:`~flightcheck.checks.suite.expect.Expectations.merged`): only from a run in which every row
    passed, and a stage's section is replaced whole only when it ran in full (not ``quick``).
    ``expectations`` is the recorded figures file (default: the package's). ``report_dir`` writes the
    HTML report there and names it in the last line. The heavy stages spread their items over
    ``scheduler`` (a Dask scheduler's address) or, by default, an embedded Dask cluster of ``workers``
    processes (default: one per core, at most two); see :mod:`flightcheck.checks.cluster`.
    ``require_proof`` fails every row that checks properties without proving them (only bounded, or not
    proved; see :func:`~flightcheck.checks.suite.claims.require_proof`)."""
    from flightcheck.checks.suite.expect import EXPECTATIONS_PATH, Expectations

    from flightcheck.checks.suite.context import Context

    book_path = expectations or EXPECTATIONS_PATH
    console = Console(stderr=as_json)
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a log file gets whole lines, not wrapped cells
    book = Expectations.for_recording(book_path) if record else Expectations.load(book_path)
    with Cluster(scheduler, workers or max(1, min(2, os.cpu_count() or 1))) as cluster:
        if cluster.address and not as_json:
            console.print(f"Dask scheduler {cluster.address}: {cluster.parts} workers"
                          + (f", dashboard {cluster.dashboard}" if cluster.dashboard else ""), highlight=False)
        ctx = Context(quick=quick, expect=book, budget=budget, model=model, save_dir=save_dir or Path("."),
                      cluster=cluster)
        return _run(ctx, console, book, book_path, as_json=as_json, quick=quick, budget=budget, model=model,
                    record=record, stages=stages, report_dir=report_dir, require_proof=require_proof)


def _run(ctx: Any, console: Console, book: Any, book_path: Path, *, as_json: bool, quick: bool,
         budget: float | None, model: str, record: bool, stages: list[str] | None, report_dir: Path | None,
         require_proof: bool = False) -> str:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    todo = [(s, p) for s, p, needs_model in stage_table() if not (quick and needs_model) and (stages is None or s in stages)]
    rows: list[Row] = []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} {task.fields[unit]}"),
                  TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("flightcheck check", total=len(todo) + (report_dir is not None), unit="stages")
        items = progress.add_task("", total=None, visible=False, unit="items")
        where = "this process" if ctx.cluster is None else (ctx.cluster.address or "the embedded cluster")

        def shown(done: int, total: int, running: int) -> None:  # a stage's items, across the cluster
            progress.update(items, visible=True, completed=done, total=total,
                            description=f"  {current[0]}: {running} running on {where}")

        current = [""]
        if ctx.cluster is not None:
            ctx.cluster.on_progress = shown
        for stage, path in todo:
            current[0] = stage
            progress.update(task, description=f"running {stage}")
            progress.update(items, visible=False)
            t = time.perf_counter()
            try:
                rows += _load(path)(ctx)
            except ClusterError:
                raise  # the scheduler went away: no verdict at all (exit 2), never a partial one
            except Exception as e:  # a broken stage is a failed or an error row, never a silent pass
                rows.append(crashed_row(stage, "(stage)", e, time.perf_counter() - t))
            if console.is_terminal:  # a line per stage as it ends, above the bar (a long run shows where it is)
                mine = [r for r in rows if r.stage == stage]
                bad, err = sum(not r.ok and not r.error for r in mine), sum(r.error for r in mine)
                said = ", ".join(([f"[bold red]{bad} failed[/]"] if bad else []) + ([f"[bold red]{err} error[/]"]
                                                                                   if err else [])) or "[green]all passed[/]"
                progress.console.print(f"{stage}: {len(mine)} rows, {said} ({time.perf_counter() - t:.1f} s)",
                                       highlight=False)
            progress.advance(task)
        annotate(rows)
        not_proved = claim_rule(rows) if require_proof else []
        report_path = None
        if report_dir is not None:
            progress.update(task, description="writing the report")
            t = time.perf_counter()
            options = {"quick": quick, "budget": budget, "model": model, "stages": ",".join(stages) if stages else None,
                       "require_proof": require_proof}
            try:
                report_path, problems = write_report(rows, report_dir, options, model)
                if problems:
                    rows.append(Row("report", str(report_path), False, "not drawn: " + "; ".join(problems),
                                    time.perf_counter() - t))
            except OSError as e:  # the report is part of the job: one that cannot be written fails it
                rows.append(Row("report", str(report_dir), False, f"cannot be written: {e}", time.perf_counter() - t))
                report_path = None
            except Exception as e:  # noqa: BLE001 - drawing it broke: flightcheck's fault
                rows.append(crashed_row("report", str(report_dir), e, time.perf_counter() - t))
                report_path = None
            progress.advance(task)
    result = verdict(rows)
    recorded, refused = None, None
    if record:
        try:
            recorded = _record(book, book_path, rows, complete=set() if quick else set(book.seen))
        except RecordRefused as error:  # said after the summary, which shows the rows that did not pass
            refused = error
    if as_json:
        # stdout is the JSON alone (the report's path is in it), so a CI system can parse it whole.
        print(json.dumps({"verdict": result, "report": str(report_path) if report_path else None,
                          "recorded": recorded, "strength": counts(rows), "not_proofs": not_proved,
                          "rows": [asdict(r) for r in rows]}))
        if refused is not None:
            raise refused
        return result
    table = Table(title="flightcheck check")
    for col in ("stage", "item", "verdict", "strength", "detail", "s"):
        table.add_column(col, justify="right" if col == "s" else "left", overflow="fold")
    for r in rows:
        shown = "[green]ok[/]" if r.ok else "[bold red]ERROR[/]" if r.error else "[bold red]FAIL[/]"
        table.add_row(r.stage, r.item, shown, strength_cell(r.claim), r.detail, f"{r.seconds:.1f}")
    console.print(table)
    for r in rows:
        report = r.evidence.get("report") or (r.evidence.get("failure") or {}).get("report")
        if not r.ok and report:
            console.print(f"[bold red]{r.stage} {r.item}[/]:")
            console.print(report, markup=False, highlight=False)
    failed, errors = sum(not r.ok and not r.error for r in rows), sum(r.error for r in rows)
    colour = "green" if result == "ok" else "bold red"
    console.print(f"[{colour}]{len(rows) - failed - errors} passed, {failed} failed"
                  + (f", {errors} error (flightcheck itself failed: the run is not a verdict)" if errors else "") + "[/]")
    console.print(summary_line(rows), markup=False, highlight=False)
    if not_proved:
        console.print(f"[bold red]--require-proof: {len(not_proved)} row(s) prove nothing:[/] "
                      + "; ".join(not_proved), highlight=False)
    if recorded is not None:
        console.print(f"recorded: {recorded['path']} ({recorded['items']} figures of {', '.join(recorded['sections'])}"
                      + (f"; dropped, no longer produced: {recorded['dropped']}" if recorded["dropped"] else "")
                      + ")", markup=False, highlight=False)
    if report_path:
        console.print(f"report: {report_path}", markup=False, highlight=False)
    if refused is not None:
        raise refused
    return result


class RecordRefused(Exception):
    """``--record`` from a run whose rows did not all pass: nothing was written (exit 2). Raised by
    :func:`run_suite` after the summary is printed."""


def _record(book: Any, path: Path, rows: list[Row], complete: set[str]) -> dict[str, Any]:
    """Merge this run's figures into ``path``; refused (nothing written) unless every row passed, since a
    figure from a failed run would make the failure the new expectation."""
    bad = [r for r in rows if not r.ok]
    if bad:
        names = ", ".join(f"{r.stage} {r.item}" for r in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise RecordRefused(f"nothing recorded: {len(bad)} row(s) did not pass ({names}); a recording is taken only "
                            "from a run where every check passed (a changed figure is not compared while recording)")
    book.save(path, complete)
    return {"path": str(path), "sections": sorted(book.seen), "items": sum(map(len, book.seen.values())),
            "dropped": book.dropped(complete)}
