"""The coverage gate: the abstract edge classes, the gate's verdict on today's corpus, its failure when a
class's only driver is gone, the queued fault that drives a leader lost before it computes, and the reach
rule that keeps the engine from a leader decoding with unpublished pages."""

from flightcheck.checks.conform.corpus import CorpusEntry, load, policy_key
from flightcheck.checks.conform.edge_classes import EdgeClass, Reachable, gate, gate_summary, reachable_one
from flightcheck.checks.conform.edge_classes import policy_key as class_policy
from flightcheck.checks.conform.grow import driven_classes, entry_classes
from flightcheck.checks.conform.program import Program
from flightcheck.checks.conform.reach import reason
from flightcheck.checks.conform.runner import run_program
from flightcheck.checks.suite.coverage_gate import gate_items
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.scenario import SCENARIOS


def test_burst2_classes_are_pinned():
    r = reachable_one(SCENARIOS["burst2"])
    assert (len(r.examples), len(r.engine_classes), len(r.out_of_reach)) == (22, 17, 5)
    # a release with a follower waiting, before anything is published, is a class of its own
    assert EdgeClass("release", "single-flight/after-prefill/incremental/release-all", "1", False, True) in r.engine_classes


# The gate passing on today's corpus under --quick is asserted by tests/cli/test_check_suite.py, which runs
# `check --quick` (every row passes, the gate's counts pinned); the full grid's gate is the full check's.


def test_gate_fails_naming_a_class_whose_only_driver_is_removed():
    name = "burst3-fail"
    entry = next(e for e in load() if e.scenario == name and e.policy == policy_key(SCENARIOS[name]))
    reach, driven = entry_classes(entry)
    before = set(gate(reach, driven))  # (classes the admission-order search rules out are among these)
    # a class that one run alone drives: drop that run, and the gate names the class
    runs = entry.traces + entry.directed
    for k in range(len(runs)):
        lost = (driven - driven_classes(CorpusEntry(entry.scenario, entry.policy, [], runs[:k] + runs[k + 1:]))) \
            & reach.engine_classes - before
        if lost:
            break
    assert lost, "every class of the entry is driven by two runs or more"
    ok, detail, evidence = gate_summary(reach, driven - lost)
    named = {m["class"] for m in evidence["missing"]}
    assert not ok and {str(c) for c in lost} <= named and named - {str(c) for c in before} == {str(c) for c in lost}


def test_gate_items_cover_the_grid_and_quick_takes_each_scenario_once():
    quick = gate_items(True)
    assert sorted(n for n, _p, _t in quick) == sorted(SCENARIOS)
    assert all(traces for _n, _p, traces in quick)  # every scenario has corpus runs to read
    assert len(gate_items(False)) == len(load())


def test_a_queued_fault_fails_a_leader_before_it_computes():
    setup = next(e for e in load() if e.scenario == "burst3-fail").programs[0].setup
    out = run_program(Program(setup, (("arrive", 0, 0.0, 0), ("fault", "queued", 0), ("step", 1))), "tiny")
    assert out.ok and out.actions == ["arrive(0)", "admit(0)", "fail(0)", "release(0)"]
    spec = FlightSpec(SCENARIOS["burst3-fail"])
    cls = EdgeClass("fail", class_policy(spec.policy), "0", False, False)
    assert cls in driven_classes(CorpusEntry("burst3-fail", policy_key(spec.scenario), [], [out.actions]))


def test_a_leader_decoding_with_unpublished_pages_is_out_of_reach_under_on_completion():
    scn = SCENARIOS["burst2"].with_policy(publication="on-completion")
    spec = FlightSpec(scn)
    s = spec.initial()
    for a in ("arrive(0)", "admit(0)", "prefill(0)", "prefill(0)", "prefill(0)"):
        act = Action(a.split("(")[0], int(a[-2]))
        assert spec.guard(s, act), a
        s = spec.apply(s, act)
    assert reason(spec, s, Action("decode", 0)) == "publish-in-step"
    assert reason(spec, s, Action("publish", 0)) != "publish-in-step"  # the publication is the step's own


def test_reachable_merge_keeps_a_class_within_reach_once_any_scenario_reaches_it():
    a, b = Reachable(), Reachable()
    c = EdgeClass("decode", "p", "0", False, False)
    a.examples[c], a.within[c], a.rules[c] = "x", False, {"admit-first"}
    b.examples[c], b.within[c], b.rules[c] = "y", True, set()
    a.merge(b)
    assert a.engine_classes == {c} and a.examples[c] == "y"
