"""The z3 reading of the spec agrees with the concrete spec, edge by edge, on every reachable state.

Reachable states come from a plain BFS over ``spec.successors`` (no symmetry), so the check does not
lean on the explorer. For each state: every concrete edge satisfies the symbolic transition relation
(evaluated by substitution), z3 finds no (action, successor) pair outside the concrete ones, and every
property and lemma evaluates the same on the substituted state as on the tuple.
"""

from collections import deque

import pytest
import z3

from flightcheck.checks.proofs.symbolic import IN_BOUNDS, TransitionSystem, checked_properties
from flightcheck.spec.lemmas import lemmas_for
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS


def reachable(spec):
    seen = {spec.initial()}
    queue = deque(seen)
    while queue:
        s = queue.popleft()
        for _a, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return seen


def _subst(ts, t, state):
    return [(v, z3.IntVal(x)) for v, x in zip(ts.at_time(t), state)]


CASES = [
    ("correct", "burst2", "after-prefill"),
    ("correct", "burst2", "on-completion"),
    ("correct", "burst2-abort", "after-prefill"),
    ("correct", "burst2-abort", "on-completion"),
    ("correct", "burst2-evict", "after-prefill"),
    ("correct", "notail", "on-completion"),
    ("draining", "burst2-abort", "after-prefill"),
    ("forget-at-release", "burst2-abort", "after-prefill"),
    ("insert-on-miss", "burst2-abort", "on-completion"),
    ("early-release", "burst2-abort", "after-prefill"),
    ("stranded-followers", "burst2-abort", "after-prefill"),
    ("no-unknown-check", "burst2-abort", "after-prefill"),
]


@pytest.mark.parametrize("variant,scenario,release", CASES, ids=lambda x: str(x))
def test_symbolic_transition_relation_equals_the_concrete_successors(variant, scenario, release):
    spec = VARIANTS[variant].build(SCENARIOS[scenario].with_policy(release=release))
    ts = TransitionSystem(spec)
    index = {a: k for k, a in enumerate(spec.actions)}
    trans = ts.trans(0)
    solver = z3.Solver()
    solver.add(trans)
    states = reachable(spec)
    num_edges = 0
    for s in sorted(states):
        succ = spec.successors(s)
        num_edges += len(succ)
        assert IN_BOUNDS.holds(spec, s), "a reachable state leaves the layout's declared ranges"
        # (1) every concrete edge satisfies the symbolic relation.
        from_s = z3.simplify(z3.substitute(trans, *_subst(ts, 0, s)))
        for a, t in succ:
            edge = z3.substitute(from_s, *_subst(ts, 1, t), (ts.act(0), z3.IntVal(index[a])))
            assert z3.is_true(z3.simplify(edge)), f"{a} from {s} is not a z3 transition"
        # (2) z3 has no other (action, successor) pair from s.
        solver.push()
        solver.add(ts.equal(0, s))
        solver.add(*[z3.Not(z3.And(ts.act(0) == index[a], ts.equal(1, t))) for a, t in succ])
        assert solver.check() == z3.unsat, f"z3 finds a successor of {s} the spec does not have"
        solver.pop()
    assert num_edges >= len(states) - 1


@pytest.mark.parametrize("variant,scenario", [("correct", "burst2-abort"), ("draining", "burst2-evict")])
def test_properties_and_lemmas_read_the_same_symbolically(variant, scenario):
    spec = VARIANTS[variant].build(SCENARIOS[scenario])
    ts = TransitionSystem(spec)
    preds = checked_properties(spec) + lemmas_for(spec)
    symbolic = {p.name: ts.holds(p, 0) for p in preds}
    for s in sorted(reachable(spec)):
        for p in preds:
            concrete = bool(p.holds(spec, s))
            value = z3.simplify(z3.substitute(symbolic[p.name], *_subst(ts, 0, s)))
            assert z3.is_true(value) == concrete and (concrete or z3.is_false(value)), (p.name, s)


def test_a_state_outside_the_ranges_is_caught_by_in_bounds():
    spec = VARIANTS["correct"].build(SCENARIOS["burst2"])
    bad = list(spec.initial())
    bad[spec.layout.fields["ref"][0]] = -1
    assert not IN_BOUNDS.holds(spec, tuple(bad))
    assert IN_BOUNDS.holds(spec, spec.initial())


def test_reachable_state_counts_are_pinned():
    # Same numbers as the explorer's full (unreduced) graphs.
    assert len(reachable(VARIANTS["correct"].build(SCENARIOS["burst2"]))) == 102
    assert len(reachable(VARIANTS["correct"].build(SCENARIOS["burst2-abort"]))) == 221


def test_pysmt_style_formulas():
    import z3 as _z3
    from flightcheck.spec.properties import get_property

    prop = get_property("termination_validated")
    ts = TransitionSystem(VARIANTS["forget-at-release"].demo_spec())
    s = _z3.Solver()
    s.add(ts.get_bmc(8, prop))
    assert s.check() == _z3.unsat  # no violation in exactly 8 steps...
    s = _z3.Solver()
    s.add(ts.get_bmc(9, prop))
    assert s.check() == _z3.sat  # ...but one in 9
    assert len(ts.actions_of(s.model(), 9)) == 9
    # Alone, termination_validated is not 1-inductive (it needs live_is_known).
    ts = TransitionSystem(VARIANTS["correct"].demo_spec())
    s = _z3.Solver()
    s.add(ts.get_k_induction(1, prop))
    assert s.check() == _z3.sat
    s = _z3.Solver()
    s.add(ts.get_simple_path(2), ts.equal(0, ts.spec.initial()), ts.equal(1, ts.spec.initial()))
    assert s.check() == _z3.unsat
