"""An engine's event log file is self-describing: a policy header, timed arrivals, and the tools read it."""

import json

from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.workload.trace import events_to_trace
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.sampling import SamplingParams


def _run(path, **config):
    engine = Engine.tiny(EngineConfig(num_pages=64, max_running=2, prefill_chunk_pages=2, **config),
                         event_log_path=str(path))
    for _ in range(3):
        engine.add_request(list(range(40)), SamplingParams(max_tokens=3))
    engine.run()
    engine.close()
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_log_file_opens_with_the_policy_and_arrivals_carry_their_time(tmp_path):
    lines = _run(tmp_path / "ev.jsonl", release="on-completion", publication="on-completion")
    assert lines[0]["policy"] == {"coordination": "single-flight", "release": "on-completion",
                                  "publication": "on-completion", "leader_loss": "release-all",
                                  "prefix_caching": True, "capacity": 2, "chunk": 2, "min_shared_pages": 1}
    assert lines[0]["pool"]["num_pages"] > 0 and "follower_wait_bound" in lines[0]
    arrivals = [e for e in lines[1:] if e["action"] == "arrive"]
    assert len(arrivals) == 3 and all(isinstance(e["t"], float) and e["t"] >= 0 for e in arrivals)
    assert [e["t"] for e in arrivals] == sorted(e["t"] for e in arrivals)
    assert [e["seq"] for e in lines[1:]] == list(range(len(lines) - 1))


# Where the header records each EngineConfig field (the spec's names for the policy knobs).
HEADER_PLACES = {"coordination": ("policy", "coordination"), "release": ("policy", "release"),
                 "publication": ("policy", "publication"), "leader_loss": ("policy", "leader_loss"),
                 "prefix_caching": ("policy", "prefix_caching"), "max_running": ("policy", "capacity"),
                 "prefill_chunk_pages": ("policy", "chunk"), "min_shared_pages": ("policy", "min_shared_pages"),
                 "num_pages": ("pool", "num_pages"), "max_context": ("max_context",),
                 "follower_wait_bound": ("follower_wait_bound",), "seed": ("seed",)}


def test_the_header_records_every_engine_option(tmp_path):
    from dataclasses import fields

    config = {"coordination": "prefix", "leader_loss": "promote", "min_shared_pages": 3, "max_context": 200,
              "follower_wait_bound": 4, "seed": 7}
    header = _run(tmp_path / "ev.jsonl", **config)[0]
    assert set(HEADER_PLACES) == {f.name for f in fields(EngineConfig)}, "add the new option to the header"
    full = EngineConfig(num_pages=64, max_running=2, prefill_chunk_pages=2, **config)
    for name, place in HEADER_PLACES.items():
        value = header
        for key in place:
            value = value[key]
        assert value == getattr(full, name), name


def test_validate_takes_the_policy_from_the_header_and_a_wrong_flag_is_caught(tmp_path):
    path = tmp_path / "ev.jsonl"
    _run(path, release="on-completion")
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", str(path)])
    assert ok.exit_code == 0, ok.output
    assert "on-completion" in ok.output
    wrong = runner.invoke(app, ["validate", str(path), "--coordination", "none"])
    assert wrong.exit_code == 1, wrong.output


def test_the_workload_converter_reads_an_engine_log_with_its_header(tmp_path):
    path = tmp_path / "ev.jsonl"
    _run(path)
    trace = events_to_trace(path.read_text().splitlines(keepends=True), source=str(path))
    assert [r.input_length for r in trace.requests] == [40, 40, 40]
    assert len({r.hash_ids for r in trace.requests}) == 1 and len(trace.requests[0].hash_ids) == 3
