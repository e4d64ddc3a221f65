"""Sequence diagrams of spec paths: every action has lifelines, violations are marked, terminations judged."""

import xml.etree.ElementTree as ET

import pytest

from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.explore.explorer import explore
from flightcheck.checks.explore.steps import step_changes, termination_verdict
from flightcheck.checks.report.lifelines import ACTION_MESSAGES, messages_for
from flightcheck.checks.report.sequence import LOOP, VIOLATION, diagram_of
from flightcheck.checks.report.svg_sequence import to_svg
from flightcheck.spec.actions import ACTION_NAMES, Action
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.properties import get_property
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS

SVG = "{http://www.w3.org/2000/svg}"
MUTANTS = [v.name for v in VARIANTS.values() if v.expected_violation is not None]


def test_every_action_of_the_vocabulary_has_its_lifelines():
    missing = [a for a in ACTION_NAMES if a not in ACTION_MESSAGES]
    assert not missing, f"give these actions their lifelines in checks/report/lifelines.py: {missing}"
    assert set(ACTION_MESSAGES) == set(ACTION_NAMES)  # nothing stale either
    for name in ACTION_NAMES:
        assert messages_for(name, has_pool=False) and messages_for(name, has_pool=True)
    with pytest.raises(KeyError, match="no lifelines"):
        messages_for("teleport", has_pool=False)


@pytest.fixture(scope="module")
def diagrams():
    out = {}
    for name in MUTANTS:
        v = VARIANTS[name]
        spec = v.demo_spec()
        res = explore(spec).result(v.expected_violation)
        prop = get_property(v.expected_violation)
        out[name] = (spec, res.counterexample,
                     diagram_of(spec, res.counterexample, property=prop.name, story=prop.story, kind=prop.kind))
    return out


@pytest.mark.parametrize("name", MUTANTS)
def test_each_mutant_draws_as_a_diagram_with_its_violation_marked(diagrams, name):
    spec, cx, d = diagrams[name]
    assert [s.action for s in d.steps] == [str(s.action) for s in cx.steps + cx.loop]
    assert d.property_name == VARIANTS[name].expected_violation and d.failed
    assert d.ending.startswith(f"{d.property_name} violated")
    marks = [s.mark for s in d.steps]
    if cx.loop:
        assert marks[len(cx.steps):] == [LOOP] * len(cx.loop)
    else:  # a safety violation or a deadlock: the last step is the one marked, and only it
        assert marks == [""] * (len(cx) - 1) + [VIOLATION]
    keys = {line.key for line in d.lifelines}
    assert {"scheduler", "coordinator", "cache"} <= keys
    assert ("pool" in keys) == spec.scenario.has_pool
    for step in d.steps:  # every arrow runs between drawn lifelines
        for a in step.arrows:
            assert a.source in keys and a.target in keys, (step.action, a)
    root = ET.fromstring(to_svg(d))
    arrows = [e for e in root.iter() if e.get("class") == "fc-arrow"]
    assert len(arrows) == d.num_arrows > 0
    assert len([e for e in root.iter(f"{SVG}rect") if e.get("class") == f"fc-{VIOLATION}"]) == marks.count(VIOLATION)
    assert d.property_name in "".join(root.itertext())


def test_forget_at_release_shows_the_legitimate_termination_rejected(diagrams):
    _spec, _cx, d = diagrams["forget-at-release"]
    last = d.steps[-1]
    assert last.action == "finish(0)" and last.mark == VIOLATION
    (verdict,) = [a for a in last.arrows if a.reply]
    assert (verdict.source, verdict.target, verdict.bad) == ("coordinator", "r0", True)
    assert verdict.label == "termination of r0 rejected as unknown"
    assert "termination of r0 rejected as unknown" in last.changes


def test_a_rejected_notice_says_so_and_an_accepted_one_is_the_bug():
    scn = SCENARIOS["burst2-abort"]
    good, bad = FlightSpec(scn), VARIANTS["no-unknown-check"].build(scn)
    s = good.initial()
    assert termination_verdict(good, s, Action("notify", 2)) == "rejected"
    assert termination_verdict(bad, s, Action("notify", 2)) == "accepted"
    assert step_changes(good, s, Action("notify", 2), good.apply(s, Action("notify", 2))) == \
        "bogus notice for r2 rejected (state unchanged)"
    assert termination_verdict(good, s, Action("arrive", 0)) is None
    d = diagram_of(bad, Counterexample.from_actions(bad, ["notify(0)"]), property="termination_validated")
    (reply,) = [a for a in d.steps[0].arrows if a.reply]
    assert reply.bad and reply.label == "bogus notice for r0 accepted"
    assert d.lifelines[0].role == "not submitted"


def test_a_deadlock_ends_in_a_note_that_nothing_moves(diagrams):
    _spec, cx, d = diagrams["stranded-followers"]
    assert cx.stutters and "no engine step is enabled" in d.ending
    assert [line.role for line in d.lifelines[:2]] == ["leader", "follower"]


def test_a_release_sends_its_followers_to_admission():
    spec = FlightSpec(SCENARIOS["burst2"])
    cx = Counterexample.from_actions(spec, ["arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)",
                                            "prefill(0)", "publish(0)", "prefill(0)", "release(0)", "admit(1)"])
    d = diagram_of(spec, cx)
    release = d.steps[8]
    assert [(a.source, a.target) for a in release.arrows] == [("coordinator", "scheduler"), ("scheduler", "r1")]
    assert "pinned 2" in release.arrows[1].label
    admit = d.steps[9]
    assert [a.label for a in admit.arrows if a.reply] == ["2 pages recovered"]
    assert not d.failed and d.ending == ""
