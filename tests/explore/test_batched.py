"""The batched explorer against the reference: successors, canonical forms, counts, verdicts, paths.

Everything here compares the numpy reading of the spec with the plain one, so a spec change that
reaches one interpretation and not the other (or a field the generic code mishandles) fails here.
"""

import numpy as np
import pytest

from flightcheck.checks.explore.batched import MemoryBoundExceeded, explore_batched
from flightcheck.checks.explore.canonical import BatchedSymmetry
from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.explore.choose import AUTO_THRESHOLD, explore_with
from flightcheck.checks.explore.explorer import StateLimitExceeded, explore
from flightcheck.checks.explore.packing import StateCodec
from flightcheck.checks.explore.transitions import BatchedTransitions
from flightcheck.spec.expr import And, If
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import SCENARIOS, policy_grid
from flightcheck.spec.state import DECODE
from flightcheck.spec.variants import VARIANTS
from switches import SLOW  # noqa: E402
from test_explorer import ALL_REDUCED, PINNED
# burst4-abort without symmetry, under its own policy at both release points: (release, states, edges).
FULL_BURST4 = [("after-prefill", 57_377, 354_941), ("on-completion", 50_513, 302_477)]


def summary(r):
    """What must be equal: counts, depth, and per property its verdict and path lengths."""
    return (r.stats.states, r.stats.edges, r.stats.depth,
            [(p.name, p.verdict, len(p.counterexample) if p.counterexample else None,
              p.counterexample.stutters if p.counterexample else None,
              len(p.witness) if p.witness else None) for p in r.properties])


def safety_paths(r):
    """Safety counterexamples and witnesses are the same breadth-first paths in both explorers."""
    return [(p.counterexample.actions if p.counterexample and p.kind != "eventually" else None,
             p.witness.actions if p.witness else None) for p in r.properties]


def reachable_states(spec):
    res = explore_batched(spec, symmetry=False, properties=[])
    return res.state_graph.codec.unpack_states(res.state_graph.keys)


def sampled(states, every):
    """Every ``every``-th state past the first 500 (breadth-first order: those near the start are few
    and all kept)."""
    return states if every == 1 else states[:500] + states[500::every]


# burst4-abort's reachable states are 57,377: by default every 8th of them (with the first 500) is
# checked in the successor and canonical-form tests below, all of them with FLIGHTCHECK_SLOW=1.
SAMPLE = {"burst4-abort": 1 if SLOW else 8}


# ---------------------------------------------------------------- the transition function itself
# Every default scenario for the correct design (all reachable states; burst4-abort's sampled, see
# SAMPLE); every variant on the scenarios that exercise aborts and eviction; with FLIGHTCHECK_SLOW=1
# every variant on every scenario, every state.
SUCCESSOR_CASES = sorted({(n, "correct") for n in SCENARIOS} | {
    (n, v) for n in (SCENARIOS if SLOW else ("burst2-abort", "burst2-evict"))
    for v in VARIANTS})


@pytest.mark.slow
@pytest.mark.parametrize("name,variant", SUCCESSOR_CASES)
def test_batched_successors_equal_the_plain_ones_on_every_reachable_state(name, variant):
    spec = VARIANTS[variant].build(SCENARIOS[name])
    reachable = reachable_states(spec)
    states = sampled(reachable, SAMPLE.get(name, 1))
    batched = BatchedTransitions(spec).successors(states)
    seen = set(reachable)
    for s, succ in zip(states, batched):
        plain = spec.successors(s)
        assert succ == plain, s
        assert all(t in seen for _a, t in plain), "the batched explorer missed a reachable state"


def test_every_update_reads_only_what_it_declares_and_a_placeholder_use_fails_loudly():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    bt = BatchedTransitions(spec)
    k = [str(a) for a in bt.actions].index("decode(0)")
    names = spec.layout.slot_names()
    assert [names[j] for j in bt.reads[k]] == ["dec[0]"]
    cols = bt.codec.unpack(bt.codec.pack_states([spec.initial()] * 3))
    sub = [c.copy() for c in cols]
    from flightcheck.checks.explore.transitions import _Unread, _UnreadUsed
    sub[spec.layout.fields["dec"][0]] = _Unread(0)
    with pytest.raises(_UnreadUsed):
        spec.apply(sub, bt.actions[k])


# ---------------------------------------------------------------- canonical forms
@pytest.mark.slow
@pytest.mark.parametrize("name", ["burst3-abort", "mixed3", "burst2-evict", "burst4-abort"])
def test_vectorized_canonical_forms_are_the_reference_representatives(name):
    spec = VARIANTS["draining"].build(SCENARIOS[name])
    states = sampled(reachable_states(spec), SAMPLE.get(name, 1))
    codec = StateCodec(spec.layout)
    cols = codec.unpack(codec.pack_states(states))
    BatchedSymmetry(spec).canonicalize(cols)
    ours = codec.unpack_states(codec.pack(cols, len(states)))
    sym = spec.symmetry()
    assert ours == [sym.canonical(s)[0] for s in states]


# ---------------------------------------------------------------- whole explorations
# Scenarios whose full (unreduced) graph costs the reference seconds per design.
BIG_FULL = {"burst3-abort", "burst3-fail", "burst3-expire", "doc3-abort", "doc3-expire"}


def _policy(scn):
    p = scn.policy
    return (p.release, p.publication, p.leader_loss)


def _cases():
    """(scenario, variant, policy, symmetry settings) to compare with the reference.

    By default every scenario and every variant is covered without the whole product (the reference
    explorer's time dominates here): each scenario for the correct design under its own policy (with
    and without symmetry, except for the largest full graphs), every variant on burst2-abort (the
    successor test above covers the variants on eviction), and every policy of burst2-abort's grid (spec.scenario.policy_grid) for
    the correct design; the other policies' counts are compared through the pins (below).
    FLIGHTCHECK_SLOW=1 runs the whole product, both symmetry settings, burst4-abort included."""
    if SLOW:
        return [(n, v, _policy(g), (True, False)) for n in sorted(SCENARIOS) for v in sorted(VARIANTS)
                for g in policy_grid(SCENARIOS[n])]
    out: dict = {}

    def add(n, v, pol, syms):
        out[(n, v, pol)] = tuple(sorted(set(out.get((n, v, pol), ())) | set(syms), reverse=True))

    for n in sorted(x for x in SCENARIOS if x != "burst4-abort"):
        add(n, "correct", _policy(SCENARIOS[n]), (True,) if n in BIG_FULL else (True, False))
    for v in VARIANTS:
        add("burst2-abort", v, _policy(SCENARIOS["burst2-abort"]), (True, False))
    for g in policy_grid(SCENARIOS["burst2-abort"]):
        add("burst2-abort", "correct", _policy(g), (True, False))
    return sorted(k + (syms,) for k, syms in out.items())


@pytest.mark.slow
@pytest.mark.parametrize("name,variant,policy,symmetries", _cases(), ids=lambda x: str(x))
def test_batched_equals_reference_on_every_scenario_policy_and_variant(name, variant, policy, symmetries):
    release, publication, leader_loss = policy
    scn = SCENARIOS[name].with_policy(release=release, publication=publication, leader_loss=leader_loss)
    spec = VARIANTS[variant].build(scn)
    for sym in symmetries:
        a, b = explore(spec, symmetry=sym), explore_batched(spec, symmetry=sym)
        assert summary(b) == summary(a), sym
        assert safety_paths(b) == safety_paths(a), sym


@pytest.mark.slow
def test_the_largest_default_scenario_equals_the_reference_for_every_variant():
    # One safety mutant by default (the correct design's counts are pinned below); every design with
    # FLIGHTCHECK_SLOW=1.
    for variant in sorted(VARIANTS) if SLOW else ["forget-at-release"]:
        spec = VARIANTS[variant].build(SCENARIOS["burst4-abort"])
        a, b = explore(spec), explore_batched(spec)
        assert summary(b) == summary(a), variant
        assert safety_paths(b) == safety_paths(a), variant


@pytest.mark.slow
def test_batched_reproduces_every_pinned_count_of_the_reference():
    # The first policy of each scenario's grid by default (the scenario's own, but for burst3-fail),
    # every policy of every grid with FLIGHTCHECK_SLOW=1; the PINNED ones below always.
    for name, counts in ALL_REDUCED.items():
        for k, (scn, n) in enumerate(zip(policy_grid(SCENARIOS[name]), counts)):
            if k and not SLOW:
                continue
            r = explore_batched(FlightSpec(scn))
            assert (r.stats.states, r.ok) == (n, True), (name, scn.policy.label())
    for (name, release, publication, leader_loss), (reduced, full) in PINNED.items():
        spec = FlightSpec(SCENARIOS[name].with_policy(release=release, publication=publication,
                                                      leader_loss=leader_loss))
        assert explore_batched(spec).stats.states == reduced
        if full is not None:
            assert explore_batched(spec, symmetry=False).stats.states == full
    # The full graphs of the largest default scenario, out of the reference's reach in the suite
    # (SPIN counts the same: scripts/bench_explore.py).
    for release, states, edges in FULL_BURST4:
        r = explore_batched(FlightSpec(SCENARIOS["burst4-abort"].with_policy(release=release)), symmetry=False)
        assert (r.stats.states, r.stats.edges, r.ok) == (states, edges, True)


class Toggling(FlightSpec):
    """A made-up design whose decode step flips a flag forever and whose finish is enabled only on
    one side of the flip: weak fairness does not force the finish, so a request can stay live on a
    cycle (a lasso, not a stutter)."""

    variant_name = "toggling"

    def g_decode(self, s, i):
        return s.ph[i] == DECODE

    def u_decode(self, s, i):
        e = s.edit()
        e.dec[i] = If(s.dec[i] == 1, 0, 1)
        return e.build()

    def g_finish(self, s, i):
        return And(s.ph[i] == DECODE, s.dec[i] == 1)


@pytest.mark.parametrize("sym", [True, False])
def test_a_fair_cycle_is_a_replayed_lasso_of_the_reference_length(sym):
    spec = Toggling(SCENARIOS["burst2"])
    a, b = explore(spec, symmetry=sym), explore_batched(spec, symmetry=sym)
    assert summary(b) == summary(a)
    cx = b.result("eventually_terminates").counterexample
    assert not cx.stutters and cx.loop and {str(s.action) for s in cx.loop} <= {"decode(0)", "decode(1)"}
    replay = Counterexample.from_actions(spec, cx.actions + [str(s.action) for s in cx.loop])
    end, back = replay.steps[len(cx) - 1].state, replay.steps[-1].state
    canon = (lambda s: spec.symmetry().canonical(s)[0]) if sym else (lambda s: s)
    assert canon(end) == canon(back)


# ---------------------------------------------------------------- results, limits, engine choice
def test_the_batched_result_gives_the_reference_networkx_graph():
    spec = FlightSpec(SCENARIOS["burst2-abort"])
    a, b = explore(spec), explore_batched(spec)
    assert list(b.graph.nodes) == list(a.graph.nodes)
    assert {(u, v): d["actions"] for u, v, d in b.graph.edges(data=True)} == \
        {(u, v): d["actions"] for u, v, d in a.graph.edges(data=True)}
    assert b.quiescent_states() == a.quiescent_states()


def test_safety_only_keeps_no_edges_and_refuses_liveness():
    spec = FlightSpec(SCENARIOS["burst3-abort"])
    props = [p for p in a_props(spec) if p.kind != "eventually"]
    r = explore_batched(spec, properties=props)
    assert not r.state_graph.has_edges and r.ok and r.stats.states == 767
    with pytest.raises(ValueError, match="liveness"):
        explore_batched(spec, keep_edges=False)


def a_props(spec):
    from flightcheck.spec.properties import properties_for
    return properties_for(spec)


def test_limits_are_clear_errors_naming_the_scope():
    spec = FlightSpec(SCENARIOS["burst3-abort"])
    with pytest.raises(StateLimitExceeded, match="more than 100 states"):
        explore_batched(spec, max_states=100)
    with pytest.raises(MemoryBoundExceeded, match=r"burst3-abort .* memory bound of 0 MiB .* try"):
        explore_batched(spec, memory_limit=10_000)


def test_progress_is_reported_with_states_depth_and_rate():
    seen = []
    r = explore_batched(FlightSpec(SCENARIOS["burst3-abort"]), symmetry=False, progress=seen.append, chunk=256)
    assert len(seen) > 10 and seen[-1].states == r.stats.states == 4172
    assert [p.depth for p in seen] == sorted(p.depth for p in seen) and seen[-1].states_per_second > 0


def test_auto_uses_the_reference_on_small_graphs_and_the_batched_explorer_above():
    small = explore_with(FlightSpec(SCENARIOS["burst2"]))
    assert small.stats.states <= AUTO_THRESHOLD and "engine" not in small.extra
    big = explore_with(FlightSpec(SCENARIOS["burst3-abort"]))
    assert big.stats.states > AUTO_THRESHOLD and big.extra["engine"] == "batched"
    with pytest.raises(ValueError, match="unknown engine"):
        explore_with(FlightSpec(SCENARIOS["burst2"]), engine="fast")


def test_numpy_dispatch_of_the_expression_layer_matches_plain_values():
    from flightcheck.spec.expr import Implies, Min, Not, Or, Sum, pick
    x = np.array([0, 1, 2, 3], dtype=np.int16)
    y = np.array([3, 1, 0, 2], dtype=np.int16)
    for k in range(4):
        a, b = int(x[k]), int(y[k])
        assert bool(And(x > 0, y < 3, True)[k]) == And(a > 0, b < 3, True)
        assert bool(Or(x > 2, y == 1, False)[k]) == Or(a > 2, b == 1, False)
        assert bool(Not(x == y)[k]) == Not(a == b) and bool(Implies(x > 1, y > 1)[k]) == Implies(a > 1, b > 1)
        assert int(If(x > y, x, 7)[k]) == If(a > b, a, 7) and int(Min(x, y)[k]) == Min(a, b)
        assert int(Sum([x > 0, y > 0, x == y, 2])[k]) == Sum([a > 0, b > 0, a == b, 2])
        assert int(pick([10, 20, 30], x, default=-1)[k]) == pick([10, 20, 30], a, default=-1)
    assert If(x > 0, 1, 0).dtype == np.int16 and And(x > 0, False) is False and Or(True, x > 0) is True


def test_the_two_thread_pipeline_and_any_chunk_size_give_the_same_result():
    spec = VARIANTS["forget-at-release"].build(SCENARIOS["burst3-abort"])
    base = explore_batched(spec, symmetry=False, threads=False)
    for kwargs in (dict(threads=True), dict(threads=True, chunk=97), dict(threads=False, chunk=500)):
        other = explore_batched(spec, symmetry=False, **kwargs)
        assert summary(other) == summary(base) and safety_paths(other) == safety_paths(base), kwargs
        assert (other.state_graph.keys == base.state_graph.keys).all()


class _DecodeThroughEdit(FlightSpec):
    """The correct design with decode's update reading its counter through the edit object only (a
    refactor a spec author may make): the batched explorer must find that read by probing, not crash."""

    def u_decode(self, s, i):
        e = s.edit()
        e.dec[i] = e.dec[i] + 1  # read via the copy: no recording view sees it
        return e.build()


def test_an_update_that_reads_through_its_edit_object_is_explored_like_the_original():
    spec, same = FlightSpec(SCENARIOS["burst2"]), _DecodeThroughEdit(SCENARIOS["burst2"])
    moved = BatchedTransitions(same)
    decode = [k for k, a in enumerate(moved.actions) if a.name == "decode"]
    dec_slots = {same.layout.fields["dec"][0] + i for i in range(same.layout.num_requests)}
    assert decode and all(set(moved.reads[k]) & dec_slots for k in decode)  # the read was found
    want, got = explore_batched(spec), explore_batched(same)
    assert (got.stats.states, got.stats.edges) == (want.stats.states, want.stats.edges)
    assert got.stats.states == PINNED[("burst2", "after-prefill", "incremental", "release-all")][0] == 52
