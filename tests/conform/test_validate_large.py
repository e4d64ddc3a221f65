"""Validation of long, busy logs stays exact after the speed-up (issue 27).

The validator decides the safety properties by linear-time forms (checks/conform/fastcheck.py) and the
monitor caches chain tags and layout facts; none of it may change a verdict. A log of many concurrent
requests (flights, shared documents, short prompts, aborted streams) from the real engine validates
with every fast answer compared with the property's definition; wrong events planted deep in it get the
diagnosis the definitions alone give; the fast forms agree with the definitions on perturbed states of
that run and on the explored states of the default scenarios under every design variant; the online
monitor over the same workload passes, and still catches K/V overwritten under a running request."""

import random
from collections import deque
from dataclasses import replace

import pytest

from flightcheck.checks.bench.validate_speed import workload
from flightcheck.checks.conform import explain, fastcheck
from flightcheck.checks.conform.books import kv_problems
from flightcheck.checks.conform.eventlog import header_policy, read_events, validate_events
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.checks.conform.tracker import SpecTracker
from flightcheck.checks.conform.validator import TraceValidator
from flightcheck.impl.engine import Engine, EngineConfig
from flightcheck.impl.sampling import SamplingParams
from flightcheck.spec import pool
from flightcheck.spec.properties import safety_properties
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS
from switches import SLOW  # noqa: E402

CONFIG = EngineConfig(num_pages=64, max_running=32)
NUM_REQUESTS = 40


def drive(engine, jobs, concurrency=32):
    """Keeps ``concurrency`` requests in the engine, as concurrent clients do; a dropped stream is aborted
    right after its first token."""
    pending, live = list(jobs), {}
    while pending or engine.has_unfinished():
        while pending and len(live) < concurrency:
            prompt, max_tokens, drop = pending.pop(0)
            live[engine.add_request(prompt, SamplingParams(max_tokens=max_tokens))] = drop
        out = engine.step()
        for rid in list(live):
            if live[rid] and rid in out:
                engine.abort(rid)
                live[rid] = False
            if engine.phase(rid) in ("finished", "aborted", "failed"):
                del live[rid]


def served(tmp_path_factory, config):
    path = tmp_path_factory.mktemp("large") / "events.jsonl"
    engine = Engine.tiny(config, event_log_path=str(path))
    drive(engine, workload(NUM_REQUESTS, seed=1))
    engine.close()
    return read_events(str(path))


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    return served(tmp_path_factory, CONFIG)


@pytest.fixture(scope="module")
def prefix_log(tmp_path_factory):
    """The same workload under prefix coordination: questions over a shared document wait via its flight."""
    return served(tmp_path_factory, replace(CONFIG, coordination="prefix", min_shared_pages=1))


def validate(events, header):
    return validate_events(events, header_policy(header), num_pages=header["pool"]["num_pages"],
                           context=header.get("context"))


def test_a_long_log_of_many_concurrent_requests_validates_every_fast_answer_checked(log, monkeypatch):
    events, header = log
    actions = [e["action"] for e in events]
    assert actions.count("arrive") == NUM_REQUESTS and len(events) > 600
    assert {"release", "publish", "abort", "evict"} <= set(actions)  # flights, shared pages, drops, a full pool
    monkeypatch.setattr(fastcheck, "CROSS_CHECK", True)
    monkeypatch.setattr(explain, "_VIOLATED", {})
    report = validate(events, header)
    assert report.ok, report.diagnosis.format()
    assert report.num_events == len(events)


def _late(events, pred):
    """The index of the last event matching ``pred`` (planted wrong events go deep into the log)."""
    return max(k for k, e in enumerate(events) if pred(e))


def admit_before_release(events):
    """A released follower's admit moved before its flight's release: refused, and forcing it through
    would break follower_waits_for_release (named by the properties' reading of a violating state)."""
    k = _late(events, lambda e: e["action"] == "release" and e["followers"])
    follower = events[k]["followers"][0]
    admit = next(e for e in events[k:] if e["action"] == "admit" and e["request"] == follower)
    out = [e for e in events if e is not admit]
    out.insert(k, admit)
    return out


def wrong_hit_pages(events):
    k = _late(events, lambda e: e["action"] == "admit")
    return events[:k] + [dict(events[k], hit_pages=events[k]["hit_pages"] + 1)] + events[k + 1:]


def decode_after_finish(events):
    k = _late(events, lambda e: e["action"] == "decode")
    done = next(e["request"] for e in events[:k] if e["action"] == "finish")
    return events[:k] + [dict(events[k], request=done)] + events[k + 1:]


def dropped_follower(events):
    k = _late(events, lambda e: e["action"] == "release" and e["followers"])
    return events[:k] + [dict(events[k], followers=events[k]["followers"][1:])] + events[k + 1:]


# One planted event by default (an admission before its release); FLIGHTCHECK_SLOW=1 plants all four.
PLANTS = [admit_before_release, wrong_hit_pages, decode_after_finish, dropped_follower] if SLOW else \
    [admit_before_release]


@pytest.mark.parametrize("plant", PLANTS)
def test_a_wrong_event_deep_in_a_long_log_gets_the_diagnosis_of_the_definitions(log, plant, monkeypatch):
    events, header = log
    bad = [dict(e, seq=k) for k, e in enumerate(plant(events))]
    monkeypatch.setattr(explain, "_VIOLATED", {})
    fast = validate(bad, header)
    assert not fast.ok and fast.num_events > len(events) // 2
    monkeypatch.setattr(fastcheck, "FAST", {})  # every property by its definition, nothing remembered
    monkeypatch.setattr(explain, "_VIOLATED", {})
    slow = validate(bad, header)
    assert fast.to_json() == slow.to_json()
    assert fast.diagnosis.format() == slow.diagnosis.format()
    if plant is admit_before_release:
        assert "follower_waits_for_release" in fast.diagnosis.properties


def _compare(spec, state, seen):
    """Every fast form against its property's definition on one state; records which answers occurred."""
    s = spec.view(state)
    for p in safety_properties(spec):
        fast = fastcheck.holds(p, spec, state)
        if fast is not None:
            want = bool(p.holds(spec, state))
            assert fast == want, f"{p.name}: fast {fast}, definition {want} in {state}"
            seen.add((p.name, want))
    if spec.scenario.has_pool:
        assert fastcheck.free_pages(spec, state) == pool.free_pages(spec, s)


@pytest.mark.parametrize("which", ["log", "prefix_log"] if SLOW else ["prefix_log"])
def test_fast_forms_agree_with_the_definitions_on_perturbed_states_of_a_long_run(which, request):
    events, header = request.getfixturevalue(which)
    tracker = SpecTracker(header_policy(header), num_pages=header["pool"]["num_pages"])
    validator = TraceValidator(tracker)
    rng, seen = random.Random(7), set()
    for k, e in enumerate(events):
        validator.feed(dict(e, num_decode=e["max_tokens"] - 1) if e["action"] == "arrive" else e)
        if k % (7 if SLOW else 10):
            continue
        spec, state = tracker.spec, tracker.state
        _compare(spec, state, seen)
        bounds = spec.layout.bounds()
        for _ in range(4):  # a few slots changed within their ranges: states a wrong engine could lead to
            st = list(state)
            for slot in rng.sample(range(len(st)), 3):
                st[slot] = rng.randint(*bounds[slot])
            _compare(spec, tuple(st), seen)
    names = ["follower_waits_for_release", "blocked_in_open_flight", "one_flight_per_input", "in_use_never_evicted",
             "refcounts_exact", "known_once", "visible_after_compute", "expired_never_blocked", "admission_has_room"]
    if which == "prefix_log":
        names.append("waits_for_shared_pages")
        assert any(e["action"] == "arrive" and e.get("via") is not None for e in events)
    for name in names:
        assert (name, True) in seen and (name, False) in seen, name


def test_fast_forms_agree_with_the_definitions_on_explored_states_of_every_design():
    seen = set()
    for variant in VARIANTS.values():
        for name in ("burst3-abort", "burst3-expire", "mixed3-pool", "doc3-abort", "doc3-pool", variant.demo):
            spec = variant.build(SCENARIOS[name].with_policy(**dict(variant.demo_policy)))
            first = spec.initial()
            queue, visited = deque([first]), {first}
            while queue and len(visited) < (200 if SLOW else 100):  # the first states of each graph, breadth first
                state = queue.popleft()
                _compare(spec, state, seen)
                for _action, nxt in spec.successors(state):
                    if nxt not in visited:
                        visited.add(nxt)
                        queue.append(nxt)
    for name in ("waits_for_shared_pages", "quiescent_clean", "admission_has_room", "blocked_in_open_flight",
                 "refcounts_exact", "in_use_never_evicted", "visible_after_compute"):
        assert (name, True) in seen and (name, False) in seen, name  # the variants do reach violations


def test_the_monitor_passes_a_busy_run_and_still_catches_kv_overwritten_under_a_reader(monkeypatch):
    monkeypatch.setattr(fastcheck, "CROSS_CHECK", True)
    engine = Engine.tiny(CONFIG)
    monitor = Monitor(engine)
    jobs = workload(24, seed=2)
    drive(engine, jobs[:12])
    assert monitor.failure is None
    for prompt, max_tokens, _drop in jobs[12:]:
        engine.add_request(prompt, SamplingParams(max_tokens=max_tokens))
    for _ in range(3):
        engine.step()
    assert monitor.failure is None
    sched, witness = engine.scheduler, monitor.witness
    assert kv_problems(sched, witness) == []
    victim = max(sched.running, key=lambda r: r.num_computed)
    page = victim.block_table[0]
    witness.tags[page][3] = 12345  # another request's K/V over the victim's fourth position
    cached = kv_problems(sched, witness)
    witness.__dict__.pop("_chains", None)
    assert cached == kv_problems(sched, witness) != []
    assert f"position 3 in page {page} (index 0)" in cached[0]
