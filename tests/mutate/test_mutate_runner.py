"""The runner on the real engine: the import hook serves the mutant, the stages kill or miss it, and a
hang or a crash is a kill that says which. Stages run with quick=True, a few chosen mutants only."""

import os
from pathlib import Path

import pytest

from flightcheck.checks.mutate.generate import Mutant
from flightcheck.checks.mutate.plan import plan, resolve_target
from flightcheck.checks.mutate.report import build_record, format_markdown
from flightcheck.checks.mutate.runner import ENGINE_STAGES, RunOptions, run_baseline, run_mutant
from switches import SLOW

HERE = Path(__file__).parent
QUICK = RunOptions(stages=ENGINE_STAGES, quick=True, jobs=1)
COORDINATOR = resolve_target("impl/coordinator.py")
RELEASE_FORGETS = ("impl/coordinator.py::Coordinator.release::delete::"
                   "self.released_request_ids.update(followers) => pass")
T_ROUNDED = ("impl/scheduler.py::Scheduler.arrive::number::t=round(max(request.arrival_time - "
             "self.events.started, 0.0), 6)) => t=round(max(request.arrival_time - self.events.started, 0.0), 7))")


@pytest.fixture
def test_stages(monkeypatch):
    """Let worker processes import tests/mutate/mutate_stages.py."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))


def _mutant(target, ident):
    p = plan([target], ids=(ident,))
    assert [m.id for m in p.to_run] == [ident]
    return p, p.to_run[0]


def _hand_made(source: str) -> Mutant:
    return Mutant("hand-made", COORDINATOR.file, COORDINATOR.module, "-", "-", 0, "", "", "", source)


def test_the_hook_serves_the_mutated_source_and_only_it(test_stages):
    from flightcheck.impl.coordinator import COORDINATIONS

    source = Path(COORDINATOR.path).read_text()
    line = f"COORDINATIONS = {COORDINATIONS!r}".replace("'", '"')
    assert line in source
    served = (*COORDINATIONS, "served")
    mutant = _hand_made(source.replace(line, f"COORDINATIONS = {served!r}"))
    opts = RunOptions(stages=("mutate_stages:coordinations_stage",), jobs=1)
    outcome = run_mutant(mutant, COORDINATOR.path, opts, timeout=60)
    assert outcome.status == "survived" and outcome.imported is True
    from flightcheck.checks.mutate.runner import run_worker
    job = {"module": mutant.module, "path": COORDINATOR.path, "source": mutant.source,
           "stages": list(opts.stages), "quick": False}
    run = run_worker(job, timeout=60)
    row = run.rows[0]
    assert row["detail"] == repr(served)
    assert row["evidence"] == {"file": COORDINATOR.path, "loader": "MutantFinder"}
    assert run.result["served_mutant"] is True


# The whole conform stage takes 35-45 s here; by default its cheapest parts stand in for it (the probe and
# the hand-written shapes), FLIGHTCHECK_SLOW=1 runs the whole stage.
PARTS = QUICK if SLOW else RunOptions(stages=("flightcheck.checks.suite.stage_conform:probe_rows",
                                              "flightcheck.checks.suite.stage_conform:shape_rows"), quick=True, jobs=1)


def test_baseline_passes_on_the_unmutated_engine():
    base = run_baseline(PARTS)
    assert base.status == "ok" and base.rows and all(r["ok"] for r in base.rows)
    assert {r["stage"] for r in base.rows} == {"conform"}


def test_a_mutant_the_checks_kill_is_reported_with_its_property_and_shortest_run():
    p, mutant = _mutant(COORDINATOR, RELEASE_FORGETS)
    outcome = run_mutant(mutant, COORDINATOR.path, RunOptions(stages=ENGINE_STAGES, quick=True, jobs=1, all_rows=True),
                         timeout=300)
    assert outcome.status == "failed", outcome
    assert "termination_validated" in {prop for k in outcome.kills for prop in k.properties}
    # A campaign or corpus row carries its shrunk run; the probe's row (its monitor raised) keeps the
    # diagnosis but has no program to shrink.
    assert any(k.rules for k in outcome.kills)
    for kill in outcome.kills:
        assert kill.run_length == (len(kill.rules) if kill.rules else None)
    if any(k.run_length for k in outcome.kills):
        assert outcome.shortest.run_length == min(k.run_length for k in outcome.kills if k.run_length)
    md = format_markdown(build_record(p, [outcome], {"files": [COORDINATOR.file]}))
    assert f"| `{RELEASE_FORGETS}` |" in md and "termination_validated" in md


def test_a_survivor_is_reported_with_its_diff():
    target = resolve_target("impl/scheduler.py")
    p, mutant = _mutant(target, T_ROUNDED)   # the arrival time's rounding: no check reads it
    outcome = run_mutant(mutant, target.path, PARTS, timeout=300)
    assert outcome.status == "survived" and outcome.imported is True
    record = build_record(p, [outcome], {"files": [target.file]})
    assert record["score"]["survived"] == 1 and record["score"]["score"] == 0.0
    md = format_markdown(record)
    survivors = md[md.index("## Survivors (1)"):md.index("## Killed")]
    assert f"### `{T_ROUNDED}`" in survivors
    assert "-                         t=round(max(request.arrival_time - self.events.started, 0.0), 6))" in survivors
    assert "+                         t=round(max(request.arrival_time - self.events.started, 0.0), 7))" in survivors


def test_a_mutant_that_loops_forever_is_killed_by_the_timeout():
    source = Path(COORDINATOR.path).read_text()
    anchor = '        assert not self.is_known(request_id), f"request {request_id} arrived twice"\n'
    assert source.count(anchor) == 1  # the first statement of Coordinator.arrive
    mutant = _hand_made(source.replace(anchor, "        while True:\n            pass\n" + anchor))
    outcome = run_mutant(mutant, COORDINATOR.path, QUICK, timeout=10)
    assert outcome.status == "timeout" and outcome.is_killed
    assert "still running after 10 s" in outcome.reason
    assert 10 <= outcome.seconds < 30   # the process group is killed at once, not waited for


def test_a_mutant_that_kills_its_process_is_a_crash_with_the_exit_status():
    source = Path(COORDINATOR.path).read_text()
    mutant = _hand_made(source + "\nimport os\nprint('going down')\nos._exit(3)\n")
    outcome = run_mutant(mutant, COORDINATOR.path, QUICK, timeout=120)
    assert outcome.status == "crashed" and outcome.is_killed
    assert outcome.reason.startswith("exit status 3") and "going down" in outcome.reason


def test_an_exception_at_import_of_the_mutant_fails_the_stage_row(test_stages):
    source = Path(COORDINATOR.path).read_text()
    mutant = _hand_made(source.replace("COORDINATIONS = (", "COORDINATIONS = undefined_name + ("))
    outcome = run_mutant(mutant, COORDINATOR.path, RunOptions(stages=("mutate_stages:coordinations_stage",)),
                         timeout=60)
    assert outcome.status == "failed"
    assert [(k.stage, k.item) for k in outcome.kills] == [("coordinations", "(stage)")]
    assert "NameError" in outcome.kills[0].detail


def test_an_interrupted_run_leaves_no_worker_behind(monkeypatch):
    import subprocess

    from flightcheck.checks.mutate import runner

    source = Path(COORDINATOR.path).read_text()
    hang = _hand_made(source + "\nimport time\nwhile True:\n    time.sleep(1)\n")
    crash = Mutant("crash", hang.file, hang.module, "-", "-", 0, "", "", "", source + "\nimport os\nos._exit(3)\n")
    started = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        if "flightcheck.checks.mutate.worker" in args[0]:  # a mutant's process (Dask starts others, e.g. uname)
            started.append(proc)
        return proc

    def interrupt(mutant, outcome):
        raise KeyboardInterrupt   # as Ctrl-C would, while the hanging mutant still runs

    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    stages = RunOptions(stages=("flightcheck.checks.suite.stage_conform:conform_stage",), jobs=2)
    with pytest.raises(KeyboardInterrupt):
        runner.run_mutants([hang, crash], {hang.module: COORDINATOR.path}, stages, timeout=300,
                           on_outcome=interrupt, seed=None)
    assert len(started) == 2
    for proc in started:
        assert proc.wait(timeout=10) is not None   # killed at once, not left to its 300 s timeout


def test_a_mutant_ends_at_its_first_failing_row_cheapest_checks_first():
    """By default a mutant stops at the first failing row (probe, shapes, seeded campaign, corpus in
    that order); --all-rows runs them all. The verdict is the same either way, and the row that ended
    the short run is the first of the long run's failing rows in that order."""
    p, mutant = _mutant(COORDINATOR, RELEASE_FORGETS)
    first = run_mutant(mutant, COORDINATOR.path, QUICK, timeout=300)
    every = run_mutant(mutant, COORDINATOR.path, RunOptions(stages=ENGINE_STAGES, quick=True, jobs=1, all_rows=True),
                       timeout=300)
    assert first.status == every.status == "failed"
    assert len(first.kills) == 1 and len(every.kills) > 1
    order = ("probe", "shapes", "seeded", "corpus")
    rank = lambda kill: order.index(kill.item.split()[0])  # noqa: E731
    conform = [k for k in every.kills if k.stage == "conform"]  # the engine stage's rows come after
    assert first.kills[0].item == min(conform, key=rank).item
    assert {k.stage for k in every.kills} == {"conform", "engine"}  # the engine check catches it too
