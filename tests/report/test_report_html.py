"""The report of `flightcheck check --report`: one static page that opens from disk in headless Chromium,
with every sequence diagram and state graph rendered and no console error; a screenshot is saved.

One real run (the variants stage: every design-history variant, and the report's coverage graphs) is
shared by the module; the z3 and equivalence sections are built from real rows of one proof and one
comparison, so nothing here runs the whole check (tests/cli/test_check_suite.py does, once)."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from flightcheck.checks.suite import job as suite
from flightcheck.checks.suite.defaults import pair_scenario
from flightcheck.checks.suite.job import Row
from flightcheck.checks.report.build import build_report
from flightcheck.checks.report.html_page import report_html
from flightcheck.checks.report.sequence import VIOLATION
from flightcheck.spec.scenario import RELEASES
from flightcheck.spec.variants import VARIANTS

ARTIFACTS = Path(os.environ.get("FLIGHTCHECK_ARTIFACTS", Path(__file__).resolve().parents[2] / "out" / "artifacts"))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("report")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ok = suite.run_suite(as_json=True, stages=["variants"], report_dir=out_dir / "rep")
    return ok, json.loads(buf.getvalue().strip().splitlines()[-1]), out_dir


def _chromium(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is needed for the report test (scripts/setup.sh installs it)"
    profile.mkdir(parents=True, exist_ok=True)
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "rror" in line)]


def test_check_names_the_report_and_its_evidence_in_the_json(run):
    ok, out, out_dir = run
    assert ok == "ok" and out["verdict"] == "ok"
    assert out["report"] == str(out_dir / "rep" / "index.html") and Path(out["report"]).is_file()
    rows = {r["item"]: r for r in out["rows"]}
    assert set(rows) == set(VARIANTS)
    fr = rows["forget-at-release"]["evidence"]
    assert (fr["scenario"], fr["property"], fr["length"]) == ("burst2", "termination_validated", 9)
    assert fr["counterexample"][-1].startswith("finish(")
    assert rows["correct"]["evidence"]["witness"]["property"] == "sometimes_all_finished"
    assert sorted(p.name for p in (out_dir / "rep" / "graphs").iterdir()) == \
        sorted(f"burst2-{r}.html" for r in RELEASES)


def test_the_report_fetches_nothing(run):
    text = Path(run[1]["report"]).read_text()
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)


def test_the_report_renders_in_headless_chromium_with_every_diagram_and_graph(run, tmp_path):
    index = Path(run[1]["report"])
    proc = _chromium(index.as_uri(), tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", proc.stdout).group(1)
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body))
    assert attrs["checked"] == "yes", body
    assert attrs["errors"] == "0" and not _console_errors(proc.stderr), (attrs.get("error-text"), proc.stderr[-2000:])
    assert attrs["empty"] == ""                        # every drawn SVG has a non-empty box
    assert int(attrs["diagrams"]) == len(VARIANTS)     # a sequence diagram per design of the history
    assert int(attrs["graphs"]) == len(RELEASES)       # the burst's graph per release point
    # The violating step is marked and the property named in words in the drawn diagrams.
    dom = proc.stdout
    report = build_report(run[1]["rows"], coverage=False, tradeoff=False)
    marked = sum(step.mark == VIOLATION for v in report.variants for step in v.diagram.steps)
    assert marked >= 10 and dom.count('class="fc-violation"') == marked
    assert "termination of r0 rejected as unknown" in dom and "no_deadlock violated" in dom
    shot = tmp_path / "report.png"
    proc = _chromium(index.as_uri(), tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,1600",
                     "--hide-scrollbars")
    assert proc.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "report.png")  # the test's artifact


def test_a_graph_page_of_the_report_loads_with_every_state_wired(run, tmp_path):
    page = Path(run[1]["report"]).parent / "graphs" / f"burst2-{RELEASES[0]}.html"
    proc = _chromium(page.as_uri(), tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0 and not _console_errors(proc.stderr), proc.stderr[-2000:]
    assert re.search(r'<body[^>]*data-ready="52"', proc.stdout)  # burst2 after-prefill: 52 states


def test_proofs_and_equivalences_are_drawn_from_their_rows():
    from flightcheck.checks.suite.stage_prove import prove_one
    from flightcheck.checks.proofs.equivalence import check_equivalence
    from flightcheck.spec.scenario import SCENARIOS

    key, verdicts, seconds, evidence = prove_one(SCENARIOS["burst2"])
    scn = pair_scenario("correct", "no-unknown-check")
    eq = check_equivalence("correct", "no-unknown-check", scn, depth=10)
    rows = [Row("prove", key, True, "proved", seconds, {**evidence, "verdicts": verdicts}),
            Row("equiv", "correct vs no-unknown-check", True, eq.summary(), eq.seconds,
                {"scenario": scn.name, "policy": {}, "variant_a": "correct", "variant_b": "no-unknown-check",
                 "verdict": eq.verdict, "sequence": eq.sequence, "difference": eq.difference})]
    report = build_report(rows, coverage=False, tradeoff=False)
    (table,) = report.proofs
    assert {line.status for line in table.lines} == {"proved"} and any(line.support for line in table.lines)
    (entry,) = report.equivalences
    assert [(s.action, s.changes_a, s.changes_b) for s in entry.steps] == [
        ("notify(0)", "bogus notice for r0 rejected (state unchanged)",
         "TERMINATION MISJUDGED; bogus notice for r0 accepted")]
    page = report_html(report)
    assert "z3: k-induction" in page and "proved for this scenario (k-induction, k=" in page
    assert "bogus notice for r0 accepted" in page
    assert report.missing == ["explore", "variants", "conform", "workload"]
