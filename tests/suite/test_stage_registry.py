"""The stage registry: each stage declared once in its own module, and every table of stages derived.

The last test follows docs/architecture.md's recipe "Add a stage" by doing it: a new stage module
(tests/suite/dummy_stage.py) and its line in ``STAGE_MODULES``, and nothing else, must be picked up by the
registry, the job (``--stage``, ``--record`` into its own section), the report, ``check --since`` and
``flightcheck mutate``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.mutate import runner
from flightcheck.checks.report.build import build_report, section_stages
from flightcheck.checks.review.since import select
from flightcheck.checks.suite import job, registry
from flightcheck.checks.suite.expect import EXPECTATIONS_PATH, Expectations, schema
from flightcheck.spec.scenario import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["explore", "variants", "prove", "equiv", "engine", "conform", "server", "smollm2", "workload"]
REPORT_SECTIONS = {"verdicts", "variants", "proofs", "equivalences", "conform", "workload"}  # build_report's


def test_the_registry_lists_every_stage_once_in_order_with_its_own_module():
    stages = registry.stages()
    assert [s.name for s in stages] == NAMES
    assert [s.name for s in stages if s.needs_model] == ["smollm2"]
    for s in stages:
        assert f"checks/suite/stage_{s.name}.py" in s.own_files, s.name  # one module per stage
        assert s.report is None or s.report in REPORT_SECTIONS, (s.name, s.report)
    assert [(s, p, m) for s, p, m in job.stage_table()][2] == ("prove", "flightcheck.checks.suite.stage_prove:prove_stage",
                                                               False)
    assert registry.stage_named("server").path == "flightcheck.checks.server.campaign:server_stage"


def test_no_stage_module_grows_past_450_lines():
    for path in sorted((ROOT / "checks" / "suite").glob("*.py")):
        assert len(path.read_text().splitlines()) <= 450, path.name


def test_the_recorded_figures_schema_is_the_stages_declared_sections():
    assert list(schema()) == ["explore", "fingerprint", "variants", "violated", "prove", "unbounded", "equiv",
                              "workload"]
    assert set(json.loads(EXPECTATIONS_PATH.read_text())) == set(schema())  # every section recorded, none extra


def test_the_report_sections_and_the_mutation_stages_are_derived():
    assert section_stages() == {"verdicts": ["explore"], "variants": ["variants"], "proofs": ["prove"],
                                "equivalences": ["equiv"], "conform": ["conform", "smollm2"], "workload": ["workload"]}
    assert runner.ENGINE_STAGES == ("flightcheck.checks.suite.stage_conform:conform_stage",
                                    "flightcheck.checks.suite.stage_engine:engine_stage")
    assert runner.SERVER_STAGES == ("flightcheck.checks.server.campaign:server_stage",)


def test_a_module_without_a_stage_or_a_name_twice_is_refused_with_how_to_fix_it(monkeypatch):
    monkeypatch.setattr(registry, "STAGE_MODULES", [*registry.STAGE_MODULES, "flightcheck.checks.suite.context"])
    with pytest.raises(registry.StageError, match="context declares no stage: give it STAGE = Stage"):
        registry.stages()
    monkeypatch.setattr(registry, "STAGE_MODULES", ["flightcheck.checks.suite.stage_equiv"] * 2)
    with pytest.raises(registry.StageError, match="a stage named 'equiv' is declared twice"):
        registry.stages()


def _recipe_files() -> list[str]:
    """The files docs/architecture.md's recipe "Add a stage" says to touch: one a numbered step."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    recipe = text[text.index("- **A stage of `check`**"):]
    recipe = recipe[:recipe.index("\n- **", 1)]
    return sorted(re.findall(r"^\s+\d\. `([^`]+)`", recipe, flags=re.MULTILINE))


def test_adding_a_stage_is_its_module_one_line_and_its_recording(monkeypatch, tmp_path):
    """The recipe, done: the stage's module and its line in STAGE_MODULES (patched here, as the edit
    would make it), then ``check --stage NAME --record``; every table picks it up with no other edit."""
    assert _recipe_files() == ["checks/suite/expectations.json", "checks/suite/registry.py", "checks/suite/stage_NAME.py"]
    monkeypatch.setattr(registry, "STAGE_MODULES", [*registry.STAGE_MODULES, "dummy_stage"])
    # the registry
    dummy = registry.stage_named("dummy")
    assert dummy.path == "dummy_stage:dummy_stage" and dummy.own_files == ("tests/suite/dummy_stage.py",)
    # the job: a known --stage, and its figure recorded into its own section, then compared
    assert job.stage_table()[-1] == ("dummy", "dummy_stage:dummy_stage", False)
    assert "dummy" in schema()
    book = tmp_path / "expectations.json"
    book.write_bytes(EXPECTATIONS_PATH.read_bytes())
    cli = CliRunner()
    r = cli.invoke(app, ["check", "--stage", "dummy", "--record", "--expectations", str(book), "--no-report",
                         "--workers", "1"])
    assert r.exit_code == 0, r.output
    recorded = Expectations.load(book).recorded
    assert recorded["dummy"] == {"scenarios": len(SCENARIOS)}
    assert {k: v for k, v in recorded.items() if k != "dummy"} == json.loads(EXPECTATIONS_PATH.read_text())
    r = cli.invoke(app, ["check", "--stage", "dummy", "--json", "--expectations", str(book), "--no-report",
                         "--workers", "1"])
    assert r.exit_code == 0, r.output
    [row] = json.loads(r.stdout)["rows"]
    assert row["stage"] == "dummy" and row["ok"]
    # the report: its rows in the section it declares, and named when it did not run
    report = build_report([row], coverage=False, tradeoff=False)
    assert [c.item for c in report.conform] == ["default scenarios"] and "conform" not in report.missing
    assert section_stages()["conform"] == ["conform", "smollm2", "dummy"]
    # check --since: its declared dependency and its own module select it, other spec files do not
    known = [name for name, _p, _m in job.stage_table()]
    assert "dummy" in select(["spec/scenario.py"], known).stages
    assert select(["tests/suite/dummy_stage.py"], known).stages == ["dummy"]
    assert "dummy" not in select(["spec/model.py"], known).stages
    # flightcheck mutate: after the stages that already kill the file's mutants
    assert runner.stages_for("impl/tokenizer.py") == (*runner.ENGINE_STAGES, "dummy_stage:dummy_stage")


def _imports(path: str) -> set[str]:
    """The flightcheck modules (and the names imported from them) that ``path`` imports, anywhere in it."""
    out: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in out if m.startswith("flightcheck.")}


def _reached(files: tuple[str, ...]) -> set[str]:
    """Every repository file that ``files`` reach by import, function-level imports included; the shared
    code (``registry.SHARED``, a dependency of every stage) is not followed (the job reaches the report)."""
    seen: set[str] = set()
    todo = list(files)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if not any(registry.matches(g, path) for g in registry.SHARED):
            todo += [f for f in map(registry.module_file, _imports(path)) if f is not None]
    return seen


@pytest.mark.parametrize("name", NAMES)
def test_a_stage_declares_every_file_its_module_reaches_by_import(name):
    """``check --since`` trusts each stage's ``depends``: a file its code imports that no declared glob
    covers would be a change that skips the stage."""
    stage = registry.stage_named(name)
    reached = _reached(stage.own_files)
    assert len(reached) > 5, reached  # the walk found the stage's code
    assert sorted(p for p in reached if not stage.depends_on(p)) == []
