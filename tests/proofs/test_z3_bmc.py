"""BMC finds every mutant at exactly the shortest counterexample length a concrete BFS finds."""

from collections import deque

import pytest

from flightcheck.checks.proofs.bmc import check_bmc
from flightcheck.checks.proofs.symbolic import checked_properties
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS

from switches import SLOW  # noqa: E402


def bfs_shortest_violation(spec, prop):
    """Length of the shortest path from the initial state to a state violating ``prop`` (plain BFS)."""
    start = spec.initial()
    depth = {start: 0}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        if not prop.holds(spec, s):
            return depth[s]
        for _a, t in spec.successors(s):
            if t not in depth:
                depth[t] = depth[s] + 1
                queue.append(t)
    return None


# The same pinned (property, shortest length) per mutant as every other checker: tests/pinned.py.
from pinned import MUTANTS  # noqa: E402


DEEP = 9  # BMC past this depth takes a minute or more on these scenarios: the default run checks a short version


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_mutant_is_found_at_the_bfs_shortest_length(name):
    prop_name, length = MUTANTS[name]
    spec = VARIANTS[name].demo_spec()
    prop = next(p for p in checked_properties(spec) if p.name == prop_name)
    assert bfs_shortest_violation(spec, prop) == length
    if length <= DEEP or SLOW:
        (res,) = check_bmc(spec, [prop], depth=length + 2)
        assert res.status == "violated" and res.depth == length
    else:  # short version: nothing shorter than the explorer's path exists within the depth checked
        (res,) = check_bmc(spec, [prop], depth=6)
        assert res.status == "bounded" and res.depth == 6 and res.counterexample is None
        return
    cx = res.counterexample
    assert len(cx) == length
    assert not prop.holds(spec, cx.final_state(spec))
    # Printed like the explorer's paths: one numbered line per step.
    text = cx.format(spec)
    assert len(text.splitlines()) == length and text.lstrip().startswith("1. ")


def test_one_depth_short_of_the_bfs_length_finds_nothing():
    spec = VARIANTS["forget-at-release"].demo_spec()
    prop = next(p for p in checked_properties(spec) if p.name == "termination_validated")
    (res,) = check_bmc(spec, [prop], depth=8)
    assert res.status == "bounded" and res.depth == 8 and res.counterexample is None


def test_all_properties_of_a_mutant_at_once_agree_with_bfs():
    spec = VARIANTS["stranded-followers"].demo_spec()
    results = {r.property: r for r in check_bmc(spec, depth=4)}
    for prop in checked_properties(spec):
        expected = bfs_shortest_violation(spec, prop)
        r = results[prop.name]
        if expected is not None and expected <= 4:
            assert (r.status, r.depth) == ("violated", expected), prop.name
        else:
            assert (r.status, r.depth) == ("bounded", 4), prop.name
    assert {n for n, r in results.items() if r.status == "violated"} == {"quiescent_clean", "no_deadlock"}


@pytest.mark.parametrize("release", ["after-prefill", "on-completion"])
def test_correct_design_has_no_violation_to_depth_8(release):
    spec = VARIANTS["correct"].build(SCENARIOS["burst2"].with_policy(release=release))
    results = check_bmc(spec, depth=8)
    assert [r.status for r in results] == ["bounded"] * len(checked_properties(spec))
    assert {r.depth for r in results} == {8}


def test_bad_depth_is_rejected():
    with pytest.raises(ValueError, match="depth must be >= 0"):
        check_bmc(VARIANTS["correct"].demo_spec(), depth=-1)
