"""Trace validation: real event logs validate; hand-corrupted ones are rejected with the right diagnosis;
the online monitor catches a corrupted engine state; ``flightcheck validate`` exit codes."""

import json

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.conform.diagnosis import ConformanceError
from flightcheck.checks.conform.eventlog import read_events, validate_events
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.checks.conform.policy_map import policy_of
from flightcheck.impl.engine import Engine, EngineConfig
from flightcheck.impl.sampling import SamplingParams

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6] * 5  # 40 tokens: 2 shareable pages and a tail
def flat(text):
    return " ".join(text.split())


CONFIG = EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1)


def burst_log(path=None):
    engine = Engine.tiny(CONFIG, event_log_path=str(path) if path else None)
    for _ in range(2):
        engine.add_request(PROMPT, SamplingParams(max_tokens=3))
    engine.run()
    engine.close()
    return engine.events.events


def resequenced(events):
    """A hand-edited log as a careful editor would leave it: its events numbered again in their new order, so the
    check under test is the spec's, not the log's sequence numbers."""
    return [dict(e, seq=k) for k, e in enumerate(events)]


def test_real_log_validates():
    events = burst_log()
    report = validate_events(events, policy_of(CONFIG))
    assert report.ok, report.diagnosis.format()
    assert report.num_events == len(events)
    assert report.actions[:4] == ["arrive(0)", "arrive(1)", "admit(0)", "prefill(0)"]
    assert report.final_state["requests"] == {"r0": {"phase": "finished"}, "r1": {"phase": "finished"}}


def test_follower_admitted_before_release_is_rejected():
    events = burst_log()
    admit1 = next(e for e in events if e["action"] == "admit" and e["request"] == 1)
    rel = next(e for e in events if e["action"] == "release")
    corrupted = [e for e in events if e is not admit1]
    corrupted.insert(corrupted.index(rel), admit1)
    report = validate_events(resequenced(corrupted), policy_of(CONFIG))
    assert not report.ok
    d = report.diagnosis
    assert d.kind == "disabled" and d.action == "admit(1)"
    assert d.reasons == ["r1 is blocked, not waiting (a follower of an open flight)"]
    assert "follower_waits_for_release" in d.properties
    assert d.last_state["requests"]["r1"] == {"phase": "blocked", "flight": "f0", "role": "follower"}


def test_wrong_hit_count_is_a_payload_mismatch():
    events = [dict(e) for e in burst_log()]
    admit1 = next(e for e in events if e["action"] == "admit" and e["request"] == 1)
    admit1["hit_pages"] = 0
    report = validate_events(events, policy_of(CONFIG))
    assert not report.ok and report.diagnosis.kind == "payload"
    assert report.diagnosis.reasons == ["hit_pages: engine 0, spec 2"]


def test_publish_twice_is_rejected():
    events = burst_log()
    pub = next(e for e in events if e["action"] == "publish")
    corrupted = events[:events.index(pub) + 1] + [pub] + events[events.index(pub) + 1:]
    report = validate_events(resequenced(corrupted), policy_of(CONFIG))
    assert not report.ok and report.diagnosis.action == "publish(0)"
    assert report.diagnosis.reasons == ["r0 has nothing computed to publish (published 1, computed shareable 1)"]


def test_release_before_publication_names_the_property():
    events = burst_log()
    rel = next(e for e in events if e["action"] == "release")
    first_pub = next(e for e in events if e["action"] == "publish")
    corrupted = [e for e in events if e is not rel]
    corrupted.insert(corrupted.index(first_pub), rel)
    report = validate_events(resequenced(corrupted), policy_of(CONFIG))
    assert not report.ok and report.diagnosis.action == "release(0)"
    assert "release_after_publication" in report.diagnosis.properties


def test_a_lost_event_is_an_order_failure_naming_how_many():
    events = burst_log()
    lost = events[:5] + events[7:]
    report = validate_events(lost, policy_of(CONFIG))
    assert not report.ok and report.diagnosis.kind == "order"
    assert report.diagnosis.reasons == ["2 events missing"]
    assert len(report.actions) == 5  # the five events before the gap were checked


def test_a_moved_event_is_an_order_failure_when_its_number_says_so():
    events = burst_log()
    moved = events[:3] + [events[4], events[3]] + events[5:]
    report = validate_events(moved, policy_of(CONFIG))
    assert not report.ok and report.diagnosis.kind == "order"
    assert report.diagnosis.reasons == ["1 events missing"]


def test_arrivals_that_go_back_in_time_are_an_order_failure():
    events = [dict(e) for e in burst_log()]
    arrivals = [e for e in events if e["action"] == "arrive"]
    assert all("t" in e for e in arrivals)
    arrivals[0]["t"], arrivals[1]["t"] = 2.0, 1.0
    report = validate_events(events, policy_of(CONFIG))
    assert not report.ok and report.diagnosis.kind == "order"
    assert report.diagnosis.reasons == ["arrival times go back"]


def test_monitor_catches_a_corrupted_engine_state():
    engine = Engine.tiny(CONFIG)
    monitor = Monitor(engine)
    for _ in range(2):
        engine.add_request(PROMPT, SamplingParams(max_tokens=3))
    for _ in range(3):
        engine.step()
    monitor.check()
    assert engine.scheduler.coordinator.released_request_ids == {0, 1}
    engine.scheduler.coordinator.released_request_ids.discard(1)  # forget a released follower
    with pytest.raises(ConformanceError) as info:
        monitor.check("after the corruption")
    d = info.value.diagnosis
    assert d.kind == "state" and d.reasons == ["rel[1]: spec 1, engine 0"]
    assert d.properties[0] == "termination_validated"


def test_cli_validate(tmp_path):
    path = tmp_path / "events.jsonl"
    burst_log(path)
    runner = CliRunner()
    flags = ["--capacity", "2", "--chunk", "1"]
    ok = runner.invoke(app, ["validate", str(path), *flags, "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["verdict"] == "ok"
    # The same log under the wrong release point: the after-prefill release is not allowed.
    bad = runner.invoke(app, ["validate", str(path), *flags, "--release", "on-completion"])
    assert bad.exit_code == 1
    assert "release(0) is not enabled" in flat(bad.output) and "on-completion release waits" in flat(bad.output)
    # A header line carries the policy instead of flags.
    with_header = tmp_path / "h.jsonl"
    policy = {"release": "after-prefill", "publication": "incremental", "capacity": 2, "chunk": 1}
    engine_header, *events = path.read_text().splitlines(keepends=True)
    assert json.loads(engine_header)["policy"]["capacity"] == 2  # the engine writes its own header
    with_header.write_text(json.dumps({"policy": policy}) + "\n" + "".join(events))
    assert runner.invoke(app, ["validate", str(with_header)]).exit_code == 0
    assert read_events(str(with_header))[1] == {"policy": policy}


def test_cli_validate_bad_input(tmp_path):
    runner = CliRunner()
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"seq": 0, "action": "arrive", "request": 0, "input": "x", "num_tokens": 40}\nnot json\n')
    r = runner.invoke(app, ["validate", str(broken)])
    assert r.exit_code == 2 and "broken.jsonl line 2: not valid JSON" in flat(r.output)
    assert runner.invoke(app, ["validate", str(tmp_path / "missing.jsonl")]).exit_code == 2
    good = tmp_path / "g.jsonl"
    good.write_text("")
    r = runner.invoke(app, ["validate", str(good), "--release", "sometimes"])
    assert r.exit_code == 2 and "--release must be one of" in flat(r.output)
    unknown = tmp_path / "u.jsonl"
    unknown.write_text('{"seq": 0, "action": "teleport", "request": 0}\n')
    r = runner.invoke(app, ["validate", str(unknown), "--json"])  # a broken log, not a broken engine: exit 2
    assert r.exit_code == 2 and "u.jsonl line 1, field 'action': unknown action 'teleport'" in flat(r.output)


def test_a_prefill_budget_shared_between_requests_validates():
    # The engine's prefill_chunk_pages is a per-step budget: with 7 pages and prompts of 5 units, the
    # second request gets what the first left. The spec reads a short prefill as a smaller chunk.
    engine = Engine.tiny(EngineConfig(num_pages=128, coordination="none", prefill_chunk_pages=7))
    monitor = Monitor(engine)
    for k in range(4):
        engine.add_request([k + 1] * 70, SamplingParams(max_tokens=3))
    engine.run()
    monitor.check()
    assert [(e["request"], e["num_units"]) for e in engine.events.of("prefill")] == \
        [(0, 5), (1, 2), (1, 3), (2, 4), (2, 1), (3, 5)]
    assert validate_events(engine.events.events, policy_of(engine.config)).ok
    # More units than the budget is not a smaller chunk: rejected.
    events = [dict(e) for e in engine.events.events]
    first = next(e for e in events if e["action"] == "prefill")
    report = validate_events(events, policy_of(EngineConfig(num_pages=128, coordination="none", prefill_chunk_pages=3)))
    assert not report.ok
    assert report.diagnosis.reasons == ["num_units: engine 5, spec 3", "first_token: engine True, spec False",
                                       "num_tokens: engine 70, spec 48"]
    assert first["num_units"] == 5


def notice_log(accepted):
    """A burst run, then a termination notice for request 0 (finished: the engine rejects and logs it), with
    the notice's ``accepted`` set to ``accepted`` (None: the field left out)."""
    from flightcheck.impl.errors import UnknownRequestError

    engine = Engine.tiny(CONFIG)
    for _ in range(2):
        engine.add_request(PROMPT, SamplingParams(max_tokens=3))
    engine.run()
    with pytest.raises(UnknownRequestError):
        engine.notify_termination(0)
    events = [dict(e) for e in engine.events.events]
    notice = events[-1]
    assert notice["action"] == "notify" and notice["accepted"] is False
    if accepted is None:
        del notice["accepted"]
    else:
        notice["accepted"] = accepted
    return events


@pytest.mark.parametrize("accepted", [False, None])
def test_a_rejected_notice_for_a_terminated_request_validates(accepted):
    report = validate_events(notice_log(accepted), policy_of(CONFIG))
    assert report.ok, report.diagnosis.format()


def test_a_log_claiming_a_notice_for_a_terminated_request_was_accepted_is_a_mismatch():
    report = validate_events(notice_log(True), policy_of(CONFIG))
    assert not report.ok and report.diagnosis.kind == "termination"
    assert report.diagnosis.summary == "the engine accepted a termination notice for r0 (request 0)"
    assert report.diagnosis.reasons == ["r0 is finished and its termination was already taken: the coordinator no "
                                        "longer knows it, and rejects the notice"]
    assert report.diagnosis.properties == ["termination_validated"]


@pytest.mark.parametrize("before_any_arrival", [False, True])
def test_a_log_claiming_a_notice_for_an_unknown_request_was_accepted_is_a_mismatch(before_any_arrival):
    arrive = {"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0, "input": "ab",
              "num_tokens": 40}
    notice = {"seq": 0 if before_any_arrival else 1, "action": "notify", "request": 999, "accepted": True}
    events = [notice] if before_any_arrival else [arrive, notice]
    report = validate_events(events, policy_of(CONFIG))
    assert not report.ok and report.diagnosis.kind == "termination"
    assert report.diagnosis.summary == "the engine accepted a termination notice for request 999, which never arrived"
    assert report.diagnosis.properties == ["termination_validated"]
    assert validate_events([dict(e, accepted=False) if e is notice else e for e in events], policy_of(CONFIG)).ok


def test_a_notice_for_a_live_request_names_the_claim():
    arrive = {"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0, "input": "ab",
              "num_tokens": 40}
    for accepted, note in ((True, "the engine logged a notice it accepted for a live request"),
                           (False, "the engine rejected the termination of a live request")):
        report = validate_events([arrive, {"seq": 1, "action": "notify", "request": 0, "accepted": accepted}],
                                 policy_of(CONFIG))
        assert not report.ok and report.diagnosis.kind == "disabled"
        assert report.diagnosis.reasons == ["r0 is live (waiting): its termination is not a notification"]
        assert any(n.startswith(note) for n in report.diagnosis.notes), report.diagnosis.notes


def test_cli_validate_exits_1_on_a_claimed_acceptance(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in notice_log(True)))
    r = CliRunner().invoke(app, ["validate", str(path), "--capacity", "2", "--chunk", "1"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "[termination] the engine accepted a termination notice for r0" in flat(r.output)
    path.write_text("".join(json.dumps(e) + "\n" for e in notice_log(False)))
    assert CliRunner().invoke(app, ["validate", str(path), "--capacity", "2", "--chunk", "1"]).exit_code == 0
