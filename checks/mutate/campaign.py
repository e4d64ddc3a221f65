"""One mutation run from a prepared plan to its record: the baseline, the mutants, the files written.

:func:`run_campaign` checks that the unmutated engine passes the stages, runs the planned mutants
(each finished one appended to ``results.jsonl`` and, when asked, shown on the console), and builds
the record (:func:`~flightcheck.checks.mutate.report.build_record`); :func:`rescore` builds it from
the outcomes a saved run holds instead (``--from-results``). Both write ``results.json`` and
``report.md`` into the configured folder.

For example::

    >>> write_record(None, {}) is None     # no output folder: nothing written
    True
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from pathlib import Path
from typing import Any, Optional

from rich.console import Console
from rich.markup import escape

from flightcheck.checks.mutate.config import Prepared
from flightcheck.checks.mutate.report import build_record, rescore_saved
from flightcheck.checks.mutate.runner import WorkerRun, default_timeout, run_baseline, run_mutants


class BaselineFailed(Exception):
    """The unmutated engine does not pass the stages (already reported on the console): exit 2."""

    def __init__(self, run: WorkerRun) -> None:
        super().__init__(f"baseline {run.status}")
        self.run = run


def write_record(out: Optional[Path], record: dict[str, Any]) -> Optional[Path]:
    """Write ``results.json`` and ``report.md`` of ``record`` into the folder ``out`` (which exists);
    the report's path, or None when there is no folder."""
    from flightcheck.checks.mutate.report import format_markdown

    if out is None:
        return None
    (out / "results.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(format_markdown(record), encoding="utf-8")
    return out / "report.md"


def check_baseline(prepared: Prepared, console: Console) -> float:
    """The seconds the unmutated engine took through the stages; :class:`BaselineFailed` (after saying
    which rows failed on ``console``) when it does not pass them."""
    with console.status("baseline: the unmutated engine through the stages ..."):
        base = run_baseline(prepared.config.run_options(), prepared.files)
    failing = [r for r in base.rows if not r["ok"]]
    if base.status != "ok" or failing:
        console.print("[bold red]error:[/] the unmutated engine does not pass the stages; mutation "
                      "testing a red build means nothing", highlight=False)
        for r in failing:
            console.print(f"  {r['stage']} {r['item']}: {r['detail']}", highlight=False, markup=False)
        if base.status != "ok":
            console.print(f"  baseline {base.status}: {base.detail}", highlight=False, markup=False)
        raise BaselineFailed(base)
    return base.seconds


def run_campaign(prepared: Prepared, command: str, console: Console, *, show_outcomes: bool = True) -> dict[str, Any]:
    """Run the plan's mutants (after the baseline, unless the config leaves it out) and return the record.

    ``command`` is the command line the record names; each finished mutant is appended to
    ``results.jsonl`` (with an output folder) and printed on ``console`` when ``show_outcomes``. A
    :class:`~flightcheck.checks.cluster.ClusterError` of the Dask cluster propagates.
    """
    from flightcheck.checks.mutate.plan import impl_digest  # looked up at each call (tests replace it)

    config, p = prepared.config, prepared.plan
    if config.out is not None:
        config.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    base_seconds = check_baseline(prepared, console) if config.baseline else 0.0
    per_mutant = config.timeout if config.timeout is not None else default_timeout(base_seconds or 6.0)
    log = (config.out / "results.jsonl").open("w", encoding="utf-8") if config.out is not None else None
    done = [0]
    lock = threading.Lock()

    def on_outcome(mutant, outcome) -> None:
        with lock:
            done[0] += 1
            if log is not None:
                log.write(json.dumps(dict(mutant.to_json(), **outcome.to_json())) + "\n")
                log.flush()
            if show_outcomes:
                colour = "yellow" if outcome.status == "survived" else "dim"
                console.print(f"[{colour}]{done[0]}/{len(p.to_run)} {outcome.status:8s} {outcome.seconds:5.1f} s  "
                              f"{escape(mutant.id)}[/]", highlight=False, soft_wrap=True)

    try:
        outcomes = run_mutants(p.to_run, p.paths, config.run_options(), per_mutant, on_outcome, seed=config.seed,
                               scheduler=config.scheduler)
    finally:
        if log is not None:
            log.close()
    changed = impl_digest() != prepared.digest
    if changed:
        console.print("[bold red]warning:[/] impl/ changed on disk during the run: each mutant carries its file "
                      "as it was at the start, so some outcomes may come from mixing two versions; run again "
                      "on a quiet tree", highlight=False)
    meta = {"command": command, "date": datetime.date.today().isoformat(), "stages": list(prepared.stages),
            "stages_by_file": prepared.stages_by_file(), "quick": config.quick, "jobs": config.jobs,
            "timeout": per_mutant, "all_rows": config.all_rows, "baseline_seconds": round(base_seconds, 2),
            "seconds": round(time.perf_counter() - t0, 1), "files": prepared.files,
            "operators": list(prepared.operators), "sample": config.sample, "seed": config.seed,
            "equivalence_file": config.equivalence_file(),
            "impl_digest": prepared.digest, **({"impl_changed_during_run": True} if changed else {})}
    record = build_record(p, outcomes, meta)
    write_record(config.out, record)
    return record


def rescore(prepared: Prepared, command: str) -> dict[str, Any]:
    """The record of the saved outcomes of ``--from-results`` re-scored against today's plan
    (:func:`~flightcheck.checks.mutate.report.rescore_saved`), written to the output folder if any."""
    config = prepared.config
    assert prepared.saved is not None, "rescore needs --from-results"
    meta = {"files": prepared.files, "operators": list(prepared.operators),
            "equivalence_file": config.equivalence_file(), "command": command,
            "date": datetime.date.today().isoformat()}
    record = rescore_saved(prepared.plan, str(config.from_results), prepared.saved, meta, prepared.run_meta())
    if config.out is not None:
        config.out.mkdir(parents=True, exist_ok=True)
        write_record(config.out, record)
    return record
