"""The ``server`` stage of ``flightcheck check``: seeded client programs against the real server in-process.

It passes on today's server, and each of three planted server bugs (monkeypatched into the app or the
engine loop, which the stage then serves) fails it with a row naming the property, the client and what
it saw; a failing program is saved and replays to the same verdict.
"""

import json

import pytest

from flightcheck.checks.suite.context import Context
from flightcheck.checks.server.__main__ import main, parse_seeds
from flightcheck.checks.server.campaign import replay, save_failure, server_stage, shrink
from flightcheck.checks.server.harness import PROPERTIES, run_program
from flightcheck.checks.server.mutants import RACE_MUTANTS, SERVER_MUTANTS
from flightcheck.checks.server.program import MALFORMED, Client, Program, ProgramError, random_program


def test_the_stage_passes_on_todays_server(tmp_path):
    rows = server_stage(Context(quick=True, save_dir=tmp_path), seeds=[0, 1, 2])
    assert [r.item for r in rows] == ["seed 0", "seed 1", "seed 2"]
    assert all(r.ok for r in rows), [r.detail for r in rows]
    for r in rows:
        assert r.stage == "server" and f"all {len(PROPERTIES)} properties hold" in r.detail
        stats = r.evidence["stats"]
        assert stats["aborted"] >= 2  # the programs' clients that go away were aborted ...
        assert stats["tokens_after_disconnect"]  # ... and how late each abort came was measured
        assert stats["pages"]["in_use"] == 0
    assert not list(tmp_path.iterdir())  # nothing saved when nothing failed


@pytest.mark.parametrize("name", sorted(set(SERVER_MUTANTS) - RACE_MUTANTS))
def test_each_planted_server_bug_fails_the_stage_naming_its_property(name, tmp_path):
    plant, prop = SERVER_MUTANTS[name]
    ctx = Context(quick=True, save_dir=tmp_path, shrink_seconds=0, first_failure=True)
    with plant():
        rows = server_stage(ctx, seeds=[0, 1, 2])
    assert len(rows) == 1, "first_failure stops at the first failing program"
    row = rows[0]
    assert not row.ok and not row.error
    assert row.detail.startswith(prop), row.detail
    assert prop in row.evidence["violated"] and row.item in row.evidence["report"]
    assert "client " in row.detail and "--replay" in row.detail  # names the client and how to replay it
    saved = json.loads((tmp_path / f"server-seed{row.evidence['seed']}.json").read_text())
    assert saved["format"] == "flightcheck server program" and saved["violations"][0]["property"] == prop


def test_a_failing_program_is_shrunk_saved_and_replays_to_the_same_verdict(tmp_path):
    config = dict(random_program(0).config, max_running=4)
    prompt = tuple(range(1, 41))
    program = Program(0, config, (
        Client(0, 0, "stream", prompt=prompt, max_tokens=6, group="burst"),
        Client(1, 0, "stream", "disconnect-after", prompt=prompt, max_tokens=150, chunks=1, group="burst"),
        Client(2, 30, "whole", prompt=tuple(range(5, 30)), max_tokens=5, group="solo"),
        Client(3, 40, "malformed", body=MALFORMED[1], group="malformed"),
    ), "hand-written")
    plant, prop = SERVER_MUTANTS["stream-disconnect-not-aborted"]
    with plant():
        failed = run_program(program)
        assert failed.properties == [prop]
        small = shrink(failed, 60)
        assert [c.index for c in small.program.clients] == [1] and small.properties == [prop]
        assert "shrunk from 4 to 1 clients" in small.program.origin
        path = save_failure(small, tmp_path)
        again = replay(path)
        assert again.properties == small.properties and again.program == small.program
        assert main(["--replay", str(path)]) == 1
    assert replay(path).ok  # the same program passes on the server without the bug


def test_programs_are_deterministic_and_round_trip_and_bad_files_are_refused(tmp_path):
    a = random_program(5)
    assert a == random_program(5) and a != random_program(6)
    assert Program.from_json(json.loads(json.dumps(a.to_json()))) == a
    kinds = {(c.kind, c.behaviour) for c in a.clients}
    assert {("stream", "read"), ("stream", "disconnect-after"), ("stream", "disconnect-after-headers"),
            ("whole", "read")} <= kinds and any(k == "malformed" for k, _ in kinds)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ProgramError, match="not a server program"):
        Program.load(bad)
    assert main(["--replay", str(bad)]) == 2
    assert parse_seeds("0-2,7") == [0, 1, 2, 7]
    with pytest.raises(ValueError, match="--seeds"):
        parse_seeds("x")
