"""Runs mutants: each in its own worker process, a few at a time on Dask, under a per-mutant timeout.

The stages are named by import path (``module:function``), exactly as ``flightcheck check`` lists
them, so the runner knows nothing of what they check: when a stage grows stronger, or a stage declares
that it kills an engine file's mutants (``Stage.kills``, :mod:`flightcheck.checks.suite.registry`),
``mutate`` measures that. Which stages a mutant runs follows its file (:func:`stages_for`: the server's
modules run :data:`SERVER_STAGES`) unless the run names them.
:func:`run_baseline` runs the stages on the unmutated engine first (a red baseline makes every mutant look killed); :func:`run_mutants` then
classifies each mutant from its process: a failed row, a crash or a timeout kills it.

For example::

    >>> ENGINE_STAGES
    ('flightcheck.checks.suite.stage_conform:conform_stage', 'flightcheck.checks.suite.stage_engine:engine_stage')
    >>> default_timeout(6.0)
    120.0
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightcheck.checks.cluster import Cluster
from flightcheck.checks.mutate.generate import Mutant
from flightcheck.checks.mutate.results import Kill, Outcome

# Which stages a mutant runs is each stage's own declaration (``Stage.kills``, ``Stage.kill_rank`` in
# checks/suite/stage_*.py): conform (most kills take about a second), then the engine's guard/command
# pairs in a bound, for every engine module; the server stage for the server's modules (impl/server/,
# which the conform and engine stages never import) and for the client API and the forward pass
# (impl/engine.py, impl/runner.py). Measured on a quick seeded sample (2026-12-03): of the 15 mutants of
# those two files that survived conform and engine, the server stage killed 4 (3 of impl/engine.py), at 6
# to 9 s for each survivor. A mutant the engine stages kill never runs it (the worker stops at the first
# failing stage).


def _killers(file: str) -> tuple[str, ...]:
    from flightcheck.checks.suite.registry import stages

    found = [s for s in stages() if not s.needs_model and s.kills_mutants_of(file)]
    return tuple(s.path for s in sorted(found, key=lambda s: s.kill_rank))


# The stages that run on a mutant of any engine module, and those that run on the server's modules.
ENGINE_STAGES: tuple[str, ...] = _killers("impl/coordinator.py")
SERVER_STAGES: tuple[str, ...] = _killers("impl/server/app.py")


def stages_for(file: str) -> tuple[str, ...]:
    """The stages a mutant of ``file`` (``impl/NAME.py`` as :class:`~.plan.Target` names it) runs when
    ``--stage`` is not given: the stages that declare they kill its mutants (``Stage.kills``), cheapest
    first (``Stage.kill_rank``): :data:`SERVER_STAGES` for the server's modules (``impl/server/``), whose
    code the conform and engine stages never import; the engine stages, then the server stage, for the
    client API and the forward pass; :data:`ENGINE_STAGES` for every other engine module (the
    coordinator, the scheduler, the flights, the page pool), and for a file no stage names.

    For example::

        >>> stages_for("impl/server/loop.py") == SERVER_STAGES, stages_for("impl/pages.py") == ENGINE_STAGES
        (True, True)
        >>> [s.rpartition(":")[2] for s in stages_for("impl/engine.py")]
        ['conform_stage', 'engine_stage', 'server_stage']
    """
    return _killers(file) or ENGINE_STAGES


def stages_for_files(files: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Every stage a run over ``files`` needs, each once, in the order of :func:`stages_for` (the
    baseline runs these on the unmutated engine).

    For example::

        >>> [s.rpartition(":")[2] for s in stages_for_files(["impl/pages.py", "impl/server/app.py"])]
        ['conform_stage', 'engine_stage', 'server_stage']
    """
    return tuple(dict.fromkeys(s for f in files for s in stages_for(f))) or ENGINE_STAGES


def default_timeout(baseline_seconds: float) -> float:
    """The per-mutant timeout when none is given: 20 times the baseline, at least two minutes (a
    killed mutant shrinks its failing runs, which takes far longer than a passing run)."""
    return max(120.0, 20.0 * baseline_seconds)


@dataclass(frozen=True)
class RunOptions:
    """What each mutant runs: the stages (None: those of its file, :func:`stages_for`), their budget, how
    many at once, and the time limit."""

    stages: tuple[str, ...] | None = None
    quick: bool = False
    jobs: int = 2
    timeout: float | None = None    # seconds per mutant; None: default_timeout(baseline)
    all_rows: bool = False          # every row of every stage, not only up to the first failing one


@dataclass
class WorkerRun:
    """One worker process: how it ended (ok / crashed / timeout), its rows, and what it printed."""

    status: str
    seconds: float
    result: dict[str, Any] = field(default_factory=dict)
    detail: str = ""

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The stages' rows (as dicts), empty when the process crashed or timed out."""
        return self.result.get("rows", [])


def _env(jobs: int) -> dict[str, str]:
    env = dict(os.environ)
    # Parallel workers share the cores: one BLAS pool each instead of every pool on every core.
    threads = str(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        env.setdefault(name, threads)
    env.setdefault("PYTHONHASHSEED", "0")   # the same set orders, so the same verdict, every run
    return env


_LIVE: set[subprocess.Popen] = set()   # worker processes now running (killed if the run is interrupted)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # the whole group: nothing of a mutant stays behind
    except ProcessLookupError:
        pass


def run_worker(job: dict[str, Any], timeout: float, jobs: int = 1) -> WorkerRun:
    """Run one job in a fresh ``python -m flightcheck.checks.mutate.worker`` process."""
    with tempfile.TemporaryDirectory(prefix="fc-mutant-") as tmp:
        job_path, result_path = Path(tmp, "job.json"), Path(tmp, "result.json")
        job_path.write_text(json.dumps(job), encoding="utf-8")
        t = time.perf_counter()
        # The process also ends itself a little after the timeout: should the launcher die (a Dask
        # worker lost with the machine), nothing of the mutant outlives it for long.
        env = dict(_env(jobs), FLIGHTCHECK_MUTANT_DEADLINE=str(int(timeout) + 30))
        proc = subprocess.Popen([sys.executable, "-m", "flightcheck.checks.mutate.worker", str(job_path),
                                 str(result_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
        _LIVE.add(proc)
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            return WorkerRun("timeout", time.perf_counter() - t, detail=f"still running after {timeout:.0f} s")
        finally:
            _LIVE.discard(proc)
        seconds = time.perf_counter() - t
        text = output.decode("utf-8", "replace")
        if proc.returncode != 0 or not result_path.exists():
            tail = "\n".join(text.strip().splitlines()[-12:])
            how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
            return WorkerRun("crashed", seconds, detail=f"{how}\n{tail}".strip())
        return WorkerRun("ok", seconds, json.loads(result_path.read_text(encoding="utf-8")))


def stages_of(opts: RunOptions, file: str) -> tuple[str, ...]:
    """The stages a mutant of ``file`` runs under ``opts``: those given, else those of its file."""
    return opts.stages if opts.stages is not None else stages_for(file)


def run_baseline(opts: RunOptions, files: list[str] | tuple[str, ...] = ()) -> WorkerRun:
    """The stages on the unmutated engine, in a worker like any mutant (timeout: 10 minutes or the
    per-mutant one, whichever is longer): those given, else every stage the mutants of ``files`` run."""
    stages = opts.stages if opts.stages is not None else stages_for_files(files)
    job = {"module": None, "path": None, "source": None, "stages": list(stages), "quick": opts.quick,
           "all_rows": True}
    return run_worker(job, max(600.0, opts.timeout or 0.0), opts.jobs)


def classify(mutant: Mutant, run: WorkerRun) -> Outcome:
    """The outcome of a mutant from its worker run."""
    if run.status != "ok":
        return Outcome(mutant.id, run.status, run.seconds, run.detail)
    imported = run.result.get("imported")
    if run.result.get("served_mutant") is False:
        return Outcome(mutant.id, "crashed", run.seconds, "the unmutated module was imported instead", imported=imported)
    failed = [Kill.from_row(r) for r in run.rows if not r["ok"]]
    if failed:
        return Outcome(mutant.id, "failed", run.seconds, "", failed, imported)
    reason = "" if imported else "the stages never imported the module"
    # A row that passes while its evidence holds a failure (issue 10: a failure found while draining
    # is dropped) survives as `check` says, but the report should make it visible.
    hidden = [r for r in run.rows if (r.get("evidence") or {}).get("failure")]
    if hidden:
        summary = ((hidden[0]["evidence"]["failure"].get("diagnosis") or {}).get("summary") or "")[:160]
        reason = (f"{len(hidden)} passing row(s) carry a failure in their evidence ({hidden[0]['stage']} "
                  f"{hidden[0]['item']}: {summary})")
    return Outcome(mutant.id, "survived", run.seconds, reason, imported=imported)


def run_mutant(mutant: Mutant, path: str, opts: RunOptions, timeout: float) -> Outcome:
    """One mutant through one worker process."""
    job = {"module": mutant.module, "path": path, "source": mutant.source,
           "stages": list(stages_of(opts, mutant.file)), "quick": opts.quick, "all_rows": opts.all_rows}
    return classify(mutant, run_worker(job, timeout, opts.jobs))


def run_mutants(mutants: list[Mutant], paths: dict[str, str], opts: RunOptions, timeout: float,
                on_outcome: Callable[[Mutant, Outcome], None] | None = None, seed: int | None = 0,
                scheduler: str | None = None) -> list[Outcome]:
    """Run ``mutants`` on Dask; outcomes in the order of ``mutants``.

    Each task is :func:`run_mutant` (it carries the mutant's source, the stages and the options, so a
    worker needs only the installed package). ``scheduler`` names a Dask scheduler whose workers run them
    (:class:`~flightcheck.checks.cluster.Cluster`); without it an embedded cluster runs ``opts.jobs`` at a
    time, on threads of this process that each wait on a mutant's own worker process. ``paths`` maps a
    module name to its file (the name tracebacks show); ``on_outcome`` is called as each mutant finishes
    (progress, an incremental log). They run in an order shuffled by ``seed`` (None: in the given order),
    so the mutants an interrupted run finished are a uniform random sample.
    """
    order = list(mutants)
    if seed is not None:
        random.Random(seed).shuffle(order)
    tasks = [(m, paths[m.module], opts, timeout) for m in order]
    outcomes: dict[str, Outcome] = {}
    with Cluster(scheduler, workers=opts.jobs, processes=False) as cluster:
        try:
            for k, outcome in cluster.as_completed(_run_task, tasks):
                outcomes[order[k].id] = outcome
                if on_outcome is not None:
                    on_outcome(order[k], outcome)
        except BaseException:
            # Interrupted (Ctrl-C): the workers run in sessions of their own, so no signal reaches them;
            # killed before the cluster closes, which waits for the threads that wait on them.
            for proc in list(_LIVE):
                _kill_group(proc)
            raise
    return [outcomes[m.id] for m in mutants]


def _run_task(task: tuple[Mutant, str, RunOptions, float]) -> Outcome:
    return run_mutant(*task)
