"""`flightcheck mutate` on the server (impl/server/) and on impl/engine.py and impl/runner.py: the files
it accepts, the stages each file's mutants run, the import hook on a submodule of a package, the skip
rules for logging and metric help texts, and one real server mutant killed by the server stage."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.mutate import runner
from flightcheck.checks.mutate.generate import generate
from flightcheck.checks.mutate.plan import DEFAULT_FILES, plan, resolve_target
from switches import SLOW  # noqa: E402
from flightcheck.checks.mutate.runner import (ENGINE_STAGES, SERVER_STAGES, RunOptions, WorkerRun, run_baseline,
                                              run_mutant, stages_for, stages_for_files)

HERE = Path(__file__).parent
IMPL = Path(resolve_target("impl/pages.py").path).parent
# The server stage's quick run kills it at its first schedule (seed 0 has a client that reads a stream
# to its end): the stream ends without its "data: [DONE]" line.
DONE_LOST = ('impl/server/app.py::_Reply.events::string::yield "data: [DONE]\\n\\n" => '
             'yield "XXdata: [DONE]\\n\\nXX"')
LOOP_MUTANT = "impl/server/loop.py::EngineLoop.abort_soon::return_early:: => return"


@pytest.fixture
def test_stages(monkeypatch):
    """Let worker processes import tests/mutate/mutate_stages.py."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))


@pytest.mark.parametrize("name, module, file", [
    ("impl/server/app.py", "flightcheck.impl.server.app", "impl/server/app.py"),
    ("impl/server/loop.py", "flightcheck.impl.server.loop", "impl/server/loop.py"),
    ("flightcheck.impl.server.schema", "flightcheck.impl.server.schema", "impl/server/schema.py"),
    (str(IMPL / "server" / "metrics.py"), "flightcheck.impl.server.metrics", "impl/server/metrics.py"),
    ("impl/server/__init__.py", "flightcheck.impl.server", "impl/server/__init__.py"),
    ("flightcheck.impl.server", "flightcheck.impl.server", "impl/server/__init__.py"),
    ("impl/engine.py", "flightcheck.impl.engine", "impl/engine.py"),
    ("runner.py", "flightcheck.impl.runner", "impl/runner.py"),
])
def test_resolve_target_takes_the_servers_modules_and_the_engines(name, module, file):
    target = resolve_target(name)
    assert (target.module, target.file) == (module, file)
    assert Path(target.path) == IMPL.joinpath(*file.split("/")[1:])


@pytest.mark.parametrize("name, message", [
    ("impl/server/nope.py", "no engine module flightcheck.impl.server.nope"),
    ("flightcheck.impl.server.nope", "no engine module flightcheck.impl.server.nope"),
    ("impl/other/app.py", "must name a module of flightcheck.impl"),
    ("checks/server/campaign.py", "must name a module of flightcheck.impl"),
    ("server/app.py", "must name a module of flightcheck.impl"),
    ("flightcheck.impl.server.app.OpenAIApp", "must name a module of flightcheck.impl"),
])
def test_resolve_target_refuses_what_is_not_a_module_of_impl_or_impl_server(name, message):
    with pytest.raises(ValueError, match=message):
        resolve_target(name)


def test_resolving_a_server_file_does_not_import_the_server():
    import subprocess
    import sys

    code = ("import sys; from flightcheck.checks.mutate.plan import resolve_target; "
            "resolve_target('impl/server/app.py'); print(sorted(m for m in sys.modules if m.startswith('flightcheck.impl')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_each_file_runs_its_own_stages():
    assert SERVER_STAGES == ("flightcheck.checks.server.campaign:server_stage",)
    for name in ("app", "loop", "schema", "metrics", "protocol", "__init__"):
        assert stages_for(f"impl/server/{name}.py") == SERVER_STAGES
    for file in (*DEFAULT_FILES, "impl/sampling.py"):
        assert stages_for(file) == ENGINE_STAGES   # the four default files: as before
    for file in ("impl/engine.py", "impl/runner.py"):   # the engine stages first, then the server's
        assert stages_for(file) == (*ENGINE_STAGES, *SERVER_STAGES)
    assert stages_for_files(list(DEFAULT_FILES)) == ENGINE_STAGES
    assert stages_for_files(["impl/server/app.py", "impl/engine.py"]) == (*SERVER_STAGES, *ENGINE_STAGES)
    assert stages_for_files(["impl/pages.py", "impl/runner.py"]) == (*ENGINE_STAGES, *SERVER_STAGES)
    assert RunOptions().stages is None   # unless given, a mutant's stages follow its file


@pytest.fixture
def jobs(monkeypatch):
    """Record the jobs the runner hands to worker processes, running none (every mutant survives)."""
    seen = []

    def fake(job, timeout, jobs=1):
        seen.append(job)
        return WorkerRun("ok", 0.0, {"rows": [{"stage": "x", "item": "y", "ok": True, "detail": "", "seconds": 0.0,
                                               "evidence": {}}], "imported": True, "served_mutant": True})

    monkeypatch.setattr(runner, "run_worker", fake)
    return seen


def test_a_mutants_job_names_the_stages_of_its_file_unless_stages_are_given(jobs):
    server = plan([resolve_target("impl/server/loop.py")], ids=(LOOP_MUTANT,)).to_run[0]
    pages = plan([resolve_target("impl/pages.py")], sample=1).to_run[0]
    for mutant in (server, pages):
        run_mutant(mutant, "unused", RunOptions(quick=True), timeout=1)
        run_mutant(mutant, "unused", RunOptions(stages=("a:b_stage",), quick=True), timeout=1)
    assert [tuple(j["stages"]) for j in jobs] == [SERVER_STAGES, ("a:b_stage",), ENGINE_STAGES, ("a:b_stage",)]
    run_baseline(RunOptions(), ["impl/pages.py", "impl/server/loop.py"])
    run_baseline(RunOptions(), list(DEFAULT_FILES))
    run_baseline(RunOptions(stages=("a:b_stage",)), ["impl/server/loop.py"])
    assert [tuple(j["stages"]) for j in jobs[4:]] == [(*ENGINE_STAGES, *SERVER_STAGES), ENGINE_STAGES, ("a:b_stage",)]


def test_the_cli_runs_each_files_mutants_under_that_files_stages(jobs, tmp_path):
    pages = plan([resolve_target("impl/pages.py")], sample=1).to_run[0]
    r = CliRunner().invoke(app, ["mutate", "--file", "impl/server/loop.py", "--file", "impl/pages.py", "--id",
                                 LOOP_MUTANT, "--id", pages.id, "--quick", "--jobs", "1", "--json",
                                 "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    baseline, *mutants = jobs   # the baseline runs every stage the files need, in the order of the files
    assert tuple(baseline["stages"]) == (*SERVER_STAGES, *ENGINE_STAGES) and baseline["module"] is None
    assert sorted((j["module"], tuple(j["stages"])) for j in mutants) == [
        ("flightcheck.impl.pages", ENGINE_STAGES), ("flightcheck.impl.server.loop", SERVER_STAGES)]
    meta = json.loads(r.output.strip().splitlines()[-1])["meta"]
    assert meta["stages"] == [*SERVER_STAGES, *ENGINE_STAGES]
    assert meta["stages_by_file"] == {"impl/server/loop.py": list(SERVER_STAGES), "impl/pages.py": list(ENGINE_STAGES)}
    md = (tmp_path / "report.md").read_text()
    assert (f"- stages: {SERVER_STAGES[0]} for impl/server/loop.py; {', '.join(ENGINE_STAGES)} for impl/pages.py "
            "(quick=True)") in md


def test_the_hook_serves_a_submodule_of_the_server_package(test_stages):
    """impl/server/__init__.py imports app and loop: the hook, installed before anything imports the
    package, serves the mutated app when the package's own import reaches it."""
    opts = RunOptions(stages=("mutate_stages:server_package_stage",), jobs=1)
    for file in ("impl/server/app.py", "impl/server/__init__.py"):
        target = resolve_target(file)
        source = Path(target.path).read_text(encoding="utf-8") + "\nMUTANT_MARK = True\n"
        job = {"module": target.module, "path": target.path, "source": source, "stages": list(opts.stages),
               "quick": True}
        run = runner.run_worker(job, timeout=120)
        assert run.status == "ok", run.detail
        assert run.result["imported"] is True and run.result["served_mutant"] is True
        loaders = {r["item"]: (r["detail"], r["evidence"]["marked"]) for r in run.rows}
        assert loaders[target.module] == ("MutantFinder", True)
        others = [name for name in loaders if name != target.module]
        assert all(loaders[name] == ("SourceFileLoader", False) for name in others), loaders
        assert all(r["evidence"]["same_app"] for r in run.rows)


SOURCE = '''import logging

from prometheus_client import Counter

log = logging.getLogger("demo")


def serve(registry, n):
    count = Counter("demo_requests", "requests served", ["how"], registry=registry)
    log.warning("serving %d", n + 1)
    return n + 1
'''


def test_logging_calls_and_metric_help_texts_are_skipped_with_their_rule():
    by_rule = {}
    for m in generate(SOURCE, file="demo.py", module="demo"):
        by_rule.setdefault(m.skip, []).append(m.mutated.strip())
    assert sorted(by_rule["logging"]) == ['log.warning("XXserving %dXX", n + 1)', 'log.warning("serving %d", n + 0)',
                                          'log.warning("serving %d", n + 2)', 'log.warning("serving %d", n - 1)',
                                          "pass"]
    assert by_rule["metrics-help"] == ['count = Counter("demo_requests", "XXrequests servedXX", ["how"], '
                                       'registry=registry)']
    runs = by_rule[None]   # the metric's name and labels, and the function's own result, still run
    assert 'count = Counter("XXdemo_requestsXX", "requests served", ["how"], registry=registry)' in runs
    assert 'count = Counter("demo_requests", "requests served", ["XXhowXX"], registry=registry)' in runs
    assert "return n - 1" in runs
    family = 'def collect():\n    yield GaugeMetricFamily("demo_pages", "pages by state", labels=["state"])\n'
    rules = {m.mutated.strip(): m.skip for m in generate(family, file="demo.py", module="demo")}
    assert rules['yield GaugeMetricFamily("demo_pages", "XXpages by stateXX", labels=["state"])'] == "metrics-help"
    assert rules['yield GaugeMetricFamily("XXdemo_pagesXX", "pages by state", labels=["state"])'] is None


def test_a_real_server_mutant_is_killed_by_the_server_stage(test_stages):
    """One mutant of impl/server/app.py through a worker: the first schedule's stream ends without [DONE],
    and the row names the property. By default the worker runs seed 0's schedule alone, unshrunk (a short
    version); FLIGHTCHECK_SLOW=1 runs the file's own stages (the whole server stage, quick, shrinking)."""
    target = resolve_target("impl/server/app.py")
    mutant = plan([target], ids=(DONE_LOST,)).to_run[0]
    stages = None if SLOW else ("mutate_stages:first_schedule_stage",)
    outcome = run_mutant(mutant, target.path, RunOptions(stages=stages, quick=True, jobs=1), timeout=120)
    assert outcome.status == "failed", outcome
    assert outcome.imported is True
    kill = outcome.kills[0]
    assert (kill.stage, kill.item) == ("server", "interleavings seed 0")  # the controlled schedules come first
    assert kill.detail.startswith("stream_ends: the stream ended without [DONE]"), kill.detail


def test_a_run_during_which_impl_changed_says_so(jobs, monkeypatch, tmp_path):
    """Each mutant carries its whole file as planned; an engine file edited during the run (the server's
    are edited often) could kill mutants for no bug of their own, so the run warns and the report says it."""
    from flightcheck.checks.mutate import plan as plan_module

    digests = iter(["before", "after"])
    monkeypatch.setattr(plan_module, "impl_digest", lambda: next(digests))
    r = CliRunner().invoke(app, ["mutate", "--file", "impl/server/loop.py", "--id", LOOP_MUTANT, "--json",
                                 "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "impl/ changed on disk during the run" in " ".join(r.output.split())
    meta = json.loads(r.output.strip().splitlines()[-1])["meta"]
    assert meta["impl_digest"] == "before" and meta["impl_changed_during_run"] is True
    assert "warning: impl/ changed on disk during the run" in (tmp_path / "report.md").read_text()
