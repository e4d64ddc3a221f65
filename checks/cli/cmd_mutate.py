"""Command ``mutate``: mutation testing of the engine against the checks ``flightcheck check`` runs.

For example::

    $ flightcheck mutate --quick --sample 20 --seed 1          # a taste: 20 random mutants, quick stages
    $ flightcheck mutate --out runs/mutate                     # every mutant of the four files; report.md, results.json
    $ flightcheck mutate --file impl/pages.py --list           # the mutants and their IDs, nothing run
    $ flightcheck mutate --id 'impl/coordinator.py::Coordinator.release::delete::...' --json
    $ flightcheck mutate --quick --file impl/server/loop.py --sample 30 --seed 1   # the server stage's turn
    $ flightcheck mutate --min-score 0.95                      # exit 1 below 95%
"""

from __future__ import annotations

import datetime
import importlib
import json
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from flightcheck.checks.errors import usage_error
from flightcheck.checks.inputs import shown


def _check_stage(path: str) -> str:
    module, sep, name = path.partition(":")
    if not sep or not module or not name:
        raise usage_error(f"--stage must be MODULE:FUNCTION (as flightcheck check lists them); got {shown(path)}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise usage_error(f"--stage {shown(path)}: {e}") from None
    if not callable(fn):
        raise usage_error(f"--stage {shown(path)} is not a function")
    return path


def register(app: typer.Typer) -> None:
    """Add ``mutate`` to the app."""

    @app.command()
    def mutate(
        file: Optional[list[str]] = typer.Option(None, "--file", help="An engine file to mutate, impl/NAME.py or "
                                                 "impl/server/NAME.py (repeatable; default impl/coordinator.py, "
                                                 "impl/scheduler.py, impl/flights.py, impl/pages.py)."),
        stage: Optional[list[str]] = typer.Option(None, "--stage", help="A check stage MODULE:FUNCTION to run on "
                                                  "each mutant (repeatable; default by file: the server stage for "
                                                  "impl/server/, conform, engine and server for impl/engine.py and "
                                                  "impl/runner.py, conform and engine for the rest)."),
        quick: bool = typer.Option(False, "--quick", help="Run the stages with quick=True (what check --quick runs)."),
        jobs: int = typer.Option(2, min=1, help="Mutants run at once, each in its own process (the embedded "
                                 "Dask cluster's threads, each waiting on one)."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", envvar="DASK_SCHEDULER_ADDRESS",
                                                help="Run the mutants on this Dask scheduler's workers "
                                                     "(tcp://HOST:PORT; each worker needs flightcheck installed)."),
        all_rows: bool = typer.Option(False, "--all-rows", help="Run every row of every stage on each mutant "
                                      "(default: a mutant ends at its first failing row, cheapest checks first)."),
        timeout: Optional[float] = typer.Option(None, min=1, help="Seconds per mutant before it counts as killed "
                                                "by timeout (default: 20x the baseline, at least 120)."),
        sample: Optional[int] = typer.Option(None, min=1, help="Run a random subset of this many mutants."),
        seed: int = typer.Option(0, help="Seed of --sample and of the order mutants run in (shuffled, so "
                                 "an interrupted run's results.jsonl is a uniform random sample)."),
        ids: Optional[list[str]] = typer.Option(None, "--id", help="Run only this mutant (repeatable)."),
        operator: Optional[list[str]] = typer.Option(None, "--operator", help="Use only this operator (repeatable)."),
        no_skip: Optional[list[str]] = typer.Option(None, "--no-skip", help="Run the mutants of this skip rule too."),
        skip_function: Optional[list[str]] = typer.Option(None, "--skip-function",
                                                          help="Also skip mutants inside functions of this name."),
        equivalent: Optional[Path] = typer.Option(None, "--equivalent", help="The equivalence file (default: "
                                                  "checks/mutate/equivalent_mutants.toml)."),
        baseline: bool = typer.Option(True, "--baseline/--no-baseline", help="First check that the unmutated "
                                      "engine passes the stages (exit 2 if not)."),
        min_score: Optional[float] = typer.Option(None, min=0.0, max=1.0, help="Exit 1 when the score is below "
                                                  "this fraction (default: report only)."),
        list_only: bool = typer.Option(False, "--list", help="List the mutants (ID, line, skip rule); run nothing."),
        as_json: bool = typer.Option(False, "--json", help="Print the results as one JSON object."),
        out: Optional[Path] = typer.Option(None, "--out", help="Write report.md, results.json (and results.jsonl "
                                           "as mutants finish) into this folder."),
        from_results: Optional[Path] = typer.Option(None, "--from-results", help="Run nothing: report the outcomes "
                                                    "saved in a results.json or an interrupted run's results.jsonl "
                                                    "against today's mutants and equivalence file."),
    ) -> None:
        """Mutate the engine (coordinator, scheduler, page pool; or any module of impl/ and impl/server/ named
        with --file), run the check stages on each mutant in its own process, and report the mutation score,
        every survivor as a diff, and what killed the rest."""
        from flightcheck.checks.mutate.equivalent import DEFAULT_PATH, load_equivalents
        from flightcheck.checks.mutate.operators import DEFAULT_OPERATORS, OPERATORS
        from flightcheck.checks.mutate.plan import DEFAULT_FILES, impl_digest, plan, resolve_target
        from flightcheck.checks.mutate.report import build_record, format_markdown, print_summary
        from flightcheck.checks.mutate.runner import (RunOptions, default_timeout, run_baseline, run_mutants,
                                                      stages_for_files, stages_of)
        from flightcheck.checks.cluster import ClusterError
        from flightcheck.checks.mutate.skips import DEBUG_FUNCTIONS

        console = Console(stderr=as_json)
        given = tuple(_check_stage(s) for s in stage) if stage else None   # None: each file's own stages
        saved = _read_saved(from_results) if from_results is not None else None  # bad input first, before the plan
        digest = impl_digest()   # the engine's sources as the mutants are generated from them
        try:
            targets = [resolve_target(f) for f in (file or DEFAULT_FILES)]
            ops = tuple(operator or DEFAULT_OPERATORS)
            unknown = [o for o in ops if o not in OPERATORS]
            if unknown:
                raise ValueError(f"--operator: unknown {', '.join(unknown)}; known: {', '.join(OPERATORS)}")
            equivalents = load_equivalents(equivalent)
            p = plan(targets, operators=ops, equivalents=equivalents, no_skip=tuple(no_skip or ()),
                     debug_functions=DEBUG_FUNCTIONS + tuple(skip_function or ()), sample=sample, seed=seed,
                     ids=tuple(ids or ()))
        except ValueError as e:
            raise usage_error(str(e)) from None
        if list_only:
            _list(p, as_json, console)
            return
        files = [t.file for t in targets]
        stages = given if given is not None else stages_for_files(files)
        opts = RunOptions(stages=given, quick=quick, jobs=jobs, timeout=timeout, all_rows=all_rows)
        by_file = {f: list(stages_of(opts, f)) for f in files}
        if saved is not None:
            _report_saved(p, from_results, saved, out, as_json, console, min_score,
                          {"files": [t.file for t in targets], "operators": list(ops),
                           "equivalence_file": str(equivalent or DEFAULT_PATH)},
                          {"stages": list(stages), "stages_by_file": by_file, "quick": quick})
            return
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        base_seconds = 0.0
        if baseline:
            with console.status("baseline: the unmutated engine through the stages ..."):
                base = run_baseline(opts, files)
            base_seconds = base.seconds
            failing = [r for r in base.rows if not r["ok"]]
            if base.status != "ok" or failing:
                console.print("[bold red]error:[/] the unmutated engine does not pass the stages; mutation "
                              "testing a red build means nothing", highlight=False)
                for r in failing:
                    console.print(f"  {r['stage']} {r['item']}: {r['detail']}", highlight=False, markup=False)
                if base.status != "ok":
                    console.print(f"  baseline {base.status}: {base.detail}", highlight=False, markup=False)
                raise typer.Exit(2)
        per_mutant = timeout if timeout is not None else default_timeout(base_seconds or 6.0)
        log = (out / "results.jsonl").open("w", encoding="utf-8") if out is not None else None
        done = [0]
        lock = threading.Lock()

        def on_outcome(mutant, outcome) -> None:
            with lock:
                done[0] += 1
                if log is not None:
                    log.write(json.dumps(dict(mutant.to_json(), **outcome.to_json())) + "\n")
                    log.flush()
                if not as_json:
                    colour = "yellow" if outcome.status == "survived" else "dim"
                    console.print(f"[{colour}]{done[0]}/{len(p.to_run)} {outcome.status:8s} {outcome.seconds:5.1f} s  "
                                  f"{escape(mutant.id)}[/]", highlight=False, soft_wrap=True)

        try:
            outcomes = run_mutants(p.to_run, p.paths, opts, per_mutant, on_outcome, seed=seed, scheduler=scheduler)
        except ClusterError as error:
            raise usage_error(str(error)) from None
        finally:
            if log is not None:
                log.close()
        changed = impl_digest() != digest
        if changed:
            console.print("[bold red]warning:[/] impl/ changed on disk during the run: each mutant carries its file "
                          "as it was at the start, so some outcomes may come from mixing two versions; run again "
                          "on a quiet tree", highlight=False)
        meta = {"command": "flightcheck mutate " + " ".join(shlex.quote(a) for a in sys.argv[2:]),
                "date": datetime.date.today().isoformat(), "stages": list(stages), "stages_by_file": by_file,
                "quick": quick, "jobs": jobs,
                "timeout": per_mutant, "all_rows": all_rows, "baseline_seconds": round(base_seconds, 2),
                "seconds": round(time.perf_counter() - t0, 1), "files": [t.file for t in targets],
                "operators": list(ops), "sample": sample, "seed": seed,
                "equivalence_file": str(equivalent or DEFAULT_PATH),
                "impl_digest": digest, **({"impl_changed_during_run": True} if changed else {})}
        record = build_record(p, outcomes, meta)
        if out is not None:
            (out / "results.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
            (out / "report.md").write_text(format_markdown(record), encoding="utf-8")
        _check_scored(record, min_score, "the mutants run")
        if as_json:
            print(json.dumps(record))
        else:
            print_summary(record, console)
            if out is not None:
                console.print(f"report: {out / 'report.md'}, results: {out / 'results.json'}", highlight=False)
        _exit_by_score(record, min_score)


def _check_scored(record: dict, min_score: Optional[float], what: str) -> None:
    """A usage error (exit 2, before anything is printed) when ``--min-score`` is given and there is no
    score to compare with it: nothing killed or survived. Nothing to score is not a pass."""
    if min_score is not None and record["score"]["score"] is None:
        raise usage_error(f"--min-score {min_score:g}: nothing to score ({what} hold no mutant that was killed or "
                          "survived)")


def _exit_by_score(record: dict, min_score: Optional[float]) -> None:
    """Exit 1 when the score is below ``min_score``."""
    value = record["score"]["score"]
    if min_score is not None and value is not None and value < min_score:
        raise typer.Exit(1)


def _read_saved(path: Path) -> tuple[list, dict]:
    """The outcomes and meta of ``--from-results FILE`` (:func:`~flightcheck.checks.mutate.report.read_saved_results`),
    or a usage error (exit 2) naming the file, the line and the field."""
    from flightcheck.checks.inputs import InputError
    from flightcheck.checks.mutate.report import read_saved_results

    try:
        return read_saved_results(path)
    except InputError as e:
        raise usage_error(f"--from-results {e}") from None


def _report_saved(p, path: Path, read: tuple[list, dict], out: Optional[Path], as_json: bool, console: Console,
                  min_score: Optional[float], meta: dict, run_meta: dict) -> None:
    """Re-score saved outcomes (:func:`~flightcheck.checks.mutate.report.rescore_saved`), write and print."""
    from flightcheck.checks.mutate.report import format_markdown, print_summary, rescore_saved

    command = "flightcheck mutate " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    record = rescore_saved(p, str(path), read, dict(meta, command=command, date=datetime.date.today().isoformat()),
                           run_meta)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        (out / "report.md").write_text(format_markdown(record), encoding="utf-8")
    _check_scored(record, min_score, f"the saved results in {path}")
    if as_json:
        print(json.dumps(record))
    else:
        print_summary(record, console)
    _exit_by_score(record, min_score)


def _list(p, as_json: bool, console: Console) -> None:
    """Print the plan's mutants: to run, skipped (rule) or equivalent."""
    rows = p.listing()
    if as_json:
        print(json.dumps([dict(m.to_json(), status=s) for m, s in rows]))
        return
    for m, status in rows:
        console.print(f"{m.line:4d} {status:22s} {m.id}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"{len(p.mutants)} mutants: {len(p.to_run)} to run, {len(p.skipped)} skipped, "
                  f"{len(p.equivalent)} equivalent", highlight=False)
