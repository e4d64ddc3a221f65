"""The server under the controlled scheduler: today's server passes, each planted server bug fails with a
shrunk schedule of a few steps, and a schedule replays step for step (the same engine events).

The controlled runs serve the real ASGI app, engine loop and tiny-model engine in this thread; the
choices alone decide the run, so every count below is exact and the same on any machine.
"""

import json

import pytest

from flightcheck.checks.server.__main__ import main
from flightcheck.checks.server.controlled import replay_schedule, run_schedule
from flightcheck.checks.server.interleave import interleave_rows, run_seed, save_failure, shrink
from flightcheck.checks.server.mutants import RACE_MUTANTS, SERVER_MUTANTS
from flightcheck.checks.server.program import Client, Program, ProgramError, random_program
from flightcheck.checks.server.schedule import FromList, Replayer, Schedule, ScheduleDiverged


def test_todays_server_passes_and_a_seed_gives_the_same_run_twice(tmp_path):
    rows = interleave_rows(quick=True, seeds=[0, 1], save_dir=tmp_path)
    assert [(r.item, r.ok) for r in rows] == [("interleavings seed 0", True), ("interleavings seed 1", True)], \
        [r.detail for r in rows]
    for r in rows:
        stats = r.evidence["stats"]
        assert stats["departures"] > 0 and stats["aborted"] >= 1 and stats["pages"]["in_use"] == 0
        assert "every property holds" in r.detail and "out of order" in r.detail
    assert "PCT" in rows[0].detail and "uniform" in rows[1].detail
    assert not list(tmp_path.iterdir())
    a, b = run_seed(1), run_seed(1)
    assert a.schedule.actions == b.schedule.actions and a.events == b.events and len(a.events) > 50


# The done-when's three: a stream's disconnect not turned into an abort, a stream left open, an abort
# lost in a race with a release (the check-then-act mutant only some interleavings show).
@pytest.mark.parametrize("name, steps, departures", [
    ("stream-disconnect-not-aborted", 15, 2),
    ("stream-left-open", 63, 0),
    ("abort-raced-release", 15, 2),
])
def test_each_planted_bug_fails_with_a_shrunk_schedule_that_replays(name, steps, departures, tmp_path):
    plant, prop = SERVER_MUTANTS[name]
    with plant():
        found = run_seed(0)
        assert found.properties[0] == prop, found.report()
        small = shrink(found, 60)
        assert small.properties[0] == prop and len(small.program.clients) == 1, small.report()
        assert (len(small.schedule.actions), len(small.schedule.departures)) == (steps, departures), small.report()
        assert "shrunk from" in small.program.origin and "out of order" in small.report()
        path = save_failure(small, tmp_path)
        saved = Schedule.load(path)
        assert saved.actions == small.schedule.actions and saved.program == small.program
        again = replay_schedule(saved)
        assert again.schedule.actions == small.schedule.actions and again.events == small.events
        assert again.properties == small.properties
        assert main(["--replay", str(path)]) == 1
    assert json.loads(path.read_text())["violations"][0]["property"] == prop
    assert main(["--replay", str(path), "--follow"]) == 0  # the same schedule, followed on today's server


def test_the_race_needs_its_interleaving():
    """The check-then-act abort fails only where the handler's look and the engine's drain are split by a
    step that admits the request; the orderly schedule of the same program passes."""
    plant, _ = SERVER_MUTANTS["abort-raced-release"]
    program = Program(0, dict(random_program(0).config, max_running=2), (
        Client(0, 0, "stream", "disconnect-after-headers", prompt=tuple(range(1, 73)), max_tokens=150, group="solo"),
    ), "hand-written")
    racing = ["c0:send", "tick", "engine", "tick", "tick", "tick", "c0:read", "c0:leave", "tick", "tick", "tick",
              "engine", "engine"]
    with plant():
        assert run_schedule(program, Replayer(racing)).properties == ["disconnect_aborts"]
        assert run_schedule(program, FromList([])).ok  # reads after the engine is done: no race
    assert run_schedule(program, Replayer(racing)).ok  # and today's abort is not lost either way
    assert "abort-raced-release" in RACE_MUTANTS


@pytest.mark.parametrize("name", ["abort-lost", "follower-abort-lost"])
def test_the_other_planted_bugs_fail_the_first_schedule(name):
    plant, prop = SERVER_MUTANTS[name]
    with plant():
        rows = interleave_rows(quick=True, seeds=[0], first_failure=True)
    assert not rows[0].ok and rows[0].detail.startswith(prop) and "out of order" in rows[0].detail


def test_bad_and_diverging_schedules_are_refused(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "flightcheck server schedule", "actions": "tick"}')
    with pytest.raises(ProgramError, match="actions"):
        Schedule.load(bad)
    assert main(["--replay", str(bad)]) == 2
    program = Program(0, random_program(0).config, (Client(0, 0, "whole", prompt=(1, 2, 3), max_tokens=2),), "one")
    diverging = Schedule(program, ["c0:send", "engine"], [], "edited by hand")
    with pytest.raises(ScheduleDiverged, match="step 2: the schedule runs 'engine'"):
        replay_schedule(diverging)
    path = diverging.save(tmp_path / "diverging.json")
    assert main(["--replay", str(path)]) == 2
    assert "step 2" in capsys.readouterr().err


def test_a_fault_of_the_campaign_itself_is_exit_3_not_a_verdict(tmp_path, monkeypatch, capsys):
    import flightcheck.checks.server.interleave as interleave
    from flightcheck.checks.server.__main__ import run

    monkeypatch.setenv("FLIGHTCHECK_CRASH_DIR", str(tmp_path))
    monkeypatch.setattr(interleave, "run_seed", lambda seed: {}["a bug of flightcheck's own"])
    assert run(["--controlled", "--seeds", "0"]) == 3
    err = capsys.readouterr().err
    assert "a bug in flightcheck, not a verdict" in err and list(tmp_path.iterdir())
