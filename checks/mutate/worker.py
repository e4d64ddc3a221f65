"""The worker: one fresh process per mutant, which installs the hook and runs the check stages.

``python -m flightcheck.checks.mutate.worker JOB.json RESULT.json`` reads a job (the module to
replace and its mutated source, or none for the baseline; the stages by import path; ``quick``),
installs :class:`~flightcheck.checks.mutate.hook.MutantFinder` before importing anything of the
engine, runs each stage as ``flightcheck check`` does (``stage(ctx) -> list[Row]`` with a
:class:`~flightcheck.checks.suite.context.Context` of the job's ``quick``, the recorded expectations, the
stage ending at its first failing row, and the job at its first failing stage, unless the job asks
for ``all_rows``, and one
process: the runner spreads mutants, not stage items, over the cores; a stage that raises is one failed row naming the error), and writes the rows as JSON. A crash, a hang or an exit
of the process is the runner's to see: no result file.

For example::

    >>> stage_label("flightcheck.checks.suite.stage_conform:conform_stage")
    'conform'
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from flightcheck.checks.mutate.hook import MutantFinder


def stage_label(path: str) -> str:
    """The stage's name as ``check`` prints it: the function name without ``_stage``."""
    name = path.partition(":")[2]
    return name[:-len("_stage")] if name.endswith("_stage") else name


def _load(path: str):
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _error_evidence(error: BaseException) -> dict[str, Any]:
    # A checker error that carries a diagnosis (a ConformanceError escaping a stage) keeps it.
    diagnosis = getattr(error, "diagnosis", None)
    if diagnosis is not None and hasattr(diagnosis, "to_json"):
        try:
            return {"failure": {"diagnosis": diagnosis.to_json()}}
        except Exception:  # evidence is a courtesy; the row fails either way
            return {}
    return {}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in this process; returns the JSON-ready result."""
    finder = None
    if job.get("source") is not None:
        finder = MutantFinder(job["module"], job["path"], job["source"])
        finder.install()
    import tempfile

    from flightcheck.checks.suite.expect import Expectations
    from flightcheck.checks.suite.context import Context

    # Imported after the hook: the stages' own imports of the engine must see the mutant.
    # One failing row kills the mutant; the rest of the stage would only cost time (the runner asks for
    # every row with --all-rows, for a report of everything a mutant breaks).
    # A kill is decided when the failure is found; its run is then shrunk for the report for 10 s, not
    # check's 60 (a mutant's time is mostly that, and the report's run is as short as 10 s make it).
    ctx = Context(quick=job["quick"], expect=Expectations.load(), save_dir=Path(tempfile.mkdtemp()),
                  first_failure=not job.get("all_rows", False), shrink_seconds=10.0)
    rows: list[dict[str, Any]] = []
    for path in job["stages"]:
        if ctx.first_failure and any(not r["ok"] for r in rows):
            break  # killed: the later stages would only cost time
        t = time.perf_counter()
        try:
            stage = _load(path)
            rows += [asdict(r) for r in stage(ctx)]
        except Exception as error:  # a broken stage is a failed row, as in `check`
            rows.append({"stage": stage_label(path), "item": "(stage)", "ok": False,
                         "detail": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                         "seconds": time.perf_counter() - t, "evidence": _error_evidence(error)})
    result: dict[str, Any] = {"rows": rows}
    if finder is not None:
        loaded = sys.modules.get(job["module"])
        result["imported"] = finder.num_served > 0
        result["served_mutant"] = loaded is None or getattr(loaded.__spec__, "loader", None) is finder
    return result


def main(argv: list[str]) -> int:
    job_path, result_path = argv
    deadline = os.environ.get("FLIGHTCHECK_MUTANT_DEADLINE")
    if deadline:  # the runner's timeout, enforced here too (SIGALRM ends the process) if its launcher is gone
        signal.alarm(int(deadline))
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    result = run_job(job)
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
