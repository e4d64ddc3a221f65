"""Every run of the engine is a run of the spec: logs the engine writes under mixed traffic validate offline.

The online monitor checks a run event by event against the engine's own structures; here the same runs'
event logs go through ``flightcheck validate``'s offline path (header, schema, tracker growing the spec
and its prompt tree from page keys), as a user would feed a server's log. Mixed traffic: random prompts
of every shape (shorter than a page, whole pages, a tail, prompts sharing another's first pages),
identical bursts, cancels, bogus terminations, wait expiries, failing forward passes, every coordination
(prefix included) and option, and pools small enough to force eviction. A log ``validate`` rejects is a
bug in the spec or in the engine, never a shape to leave out.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from flightcheck.checks.cli.app import app
from flightcheck.checks.conform.eventlog import read_events, validate_events
from flightcheck.checks.conform.generate import random_program
from flightcheck.checks.conform.program import Program, Setup, Template
from flightcheck.checks.conform.prompts import class_tokens
from flightcheck.checks.conform.runner import ProgramRun
from flightcheck.checks.inputs import InputError
from flightcheck.checks.conform.diagnosis import ConformanceError
from flightcheck.spec.scenario import Policy
from typer.testing import CliRunner

SLOW = os.environ.get("FLIGHTCHECK_SLOW") == "1"
NUM_PROGRAMS = 200 if SLOW else 36


def _log_of(program: Program, tmp_path, name: str):
    run = ProgramRun(program.setup)
    try:
        for op in program.ops:
            run.execute(op)
        run.drain()
    except ConformanceError:
        pass
    out = run.outcome()
    path = tmp_path / f"{name}.jsonl"
    path.write_text(run.engine.events.to_jsonl())
    return out, path


def _policy_of_header(header: dict) -> Policy:
    knobs = {k: v for k, v in header["policy"].items()}
    return Policy(**knobs)


def _validate(path):
    events, header = read_events(str(path))
    return validate_events(events, _policy_of_header(header), num_pages=header["pool"]["num_pages"],
                           context=header.get("context"))


@pytest.mark.parametrize("seed", range(NUM_PROGRAMS))
def test_the_log_of_a_random_mixed_run_validates(seed, tmp_path):
    program = random_program(random.Random(10_000 + seed))
    out, path = _log_of(program, tmp_path, f"run{seed}")
    assert out.ok, out.diagnosis.format() if out.diagnosis else ""
    if len(path.read_text().splitlines()) == 1:  # nothing happened: such a log is bad input, said so
        with pytest.raises(InputError, match="holds no events"):
            _validate(path)
        return
    report = _validate(path)
    assert report.ok, f"{program.setup.describe()}\n{report.diagnosis.format()}"
    assert report.num_events == len(path.read_text().splitlines()) - 1


def _doc_setup(coordination: str, min_shared: int = 1, num_pages: int = 40) -> Setup:
    doc = class_tokens(0, 48, 256)
    prompts = [doc + class_tokens(q + 1, 37, 256)[:37] for q in range(3)]  # three questions after 3 pages
    templates = tuple(Template(tuple(p), 2, f"Q{q}") for q, p in enumerate(prompts))
    return Setup({"coordination": coordination, "min_shared_pages": min_shared, "max_running": 2,
                  "prefill_chunk_pages": 1, "num_pages": num_pages, "prefix_caching": True},
                 templates)


@pytest.mark.parametrize("coordination", ["prefix", "single-flight", "none"])
def test_questions_over_one_document_validate_under_every_coordination(coordination, tmp_path):
    ops = (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("arrive", 2, 0.0, 0), ("arrive", 1, 0.0, 1),
           ("step", 3), ("abort", "leader", 0), ("step", 3))
    out, path = _log_of(Program(_doc_setup(coordination), ops), tmp_path, coordination)
    assert out.ok, out.diagnosis.format() if out.diagnosis else ""
    events = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    vias = [e for e in events if e["action"] == "arrive" and e.get("via") is not None]
    assert (len(vias) > 0) == (coordination == "prefix")
    report = _validate(path)
    assert report.ok, report.diagnosis.format() if report.diagnosis else ""


def test_validate_cli_accepts_a_prefix_coordination_log_and_names_its_policy(tmp_path):
    ops = (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("step", 2), ("arrive", 2, 0.0, 0), ("step", 2))
    out, path = _log_of(Program(_doc_setup("prefix", min_shared=2), ops), tmp_path, "prefix")
    assert out.ok
    r = CliRunner().invoke(app, ["validate", str(path)])
    assert r.exit_code == 0, r.output
    assert "prefix/" in r.output and "min-shared=2" in r.output
