"""Refactor equivalence: correct == draining (proved), each buggy variant differs, shortest sequence."""

from collections import deque

import pytest

from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.proofs.equivalence import check_equivalence, observe
from flightcheck.spec.scenario import RELEASES, SCENARIOS
from flightcheck.spec.variants import VARIANTS

from switches import SLOW  # noqa: E402


def bfs_distinguishing_length(spec_a, spec_b):
    """Shortest lockstep sequence after which the two differ, by a plain BFS over product states.

    A product state at depth d whose phases/g_term differ gives length d; one whose offers (enabled
    actions, termination verdicts) differ gives d + 1.
    """
    n = spec_a.num_requests + 1
    start = (spec_a.initial(), spec_b.initial())
    depth = {start: 0}
    queue = deque([start])
    best = None
    while queue:
        sa, sb = queue.popleft()
        d = depth[(sa, sb)]
        if best is not None and d >= best:
            break
        oa, ob = observe(spec_a, sa), observe(spec_b, sb)
        if oa[-n:] != ob[-n:]:
            best = d if best is None else min(best, d)
            continue
        if oa[:-n] != ob[:-n]:
            best = d + 1 if best is None else min(best, d + 1)
            continue
        for a in spec_a.enabled(sa):
            nxt = (spec_a.apply(sa, a), spec_b.apply(sb, a))
            if nxt not in depth:
                depth[nxt] = d + 1
                queue.append(nxt)
    return best


# buggy variant -> shortest distinguishing length against "correct" on the variant's demo scenario
DIFFERENT = {
    "forget-at-release": 9,
    "no-unknown-check": 1,
    "insert-on-miss": 4,
    "early-release": 6,
    "stranded-followers": 3,
}
# the later variants: z3's BMC takes minutes on three requests, so by default only the explicit search
DIFFERENT_LATER = {
    "unpinned-release": 11,
    "promote-released": 11,
    "promote-loses-followers": 7,
    "expire-forgets": 10,
    "admit-ignores-reservations": 4,
    "evict-referenced": 5,
}


@pytest.mark.parametrize("name", sorted(DIFFERENT | DIFFERENT_LATER))
def test_buggy_variant_differs_from_correct_with_the_shortest_sequence(name):
    length = (DIFFERENT | DIFFERENT_LATER)[name]
    v = VARIANTS[name]
    scenario = SCENARIOS[v.demo].with_policy(**dict(v.demo_policy))
    spec_a, spec_b = VARIANTS["correct"].build(scenario), v.build(scenario)
    assert bfs_distinguishing_length(spec_a, spec_b) == length
    r = check_equivalence("correct", name, scenario, depth=length + 1, prove_unbounded=False)
    assert r.verdict == "different" and not r.equivalent
    assert len(r.sequence) == length
    # The search is deterministic: the same sequence on every run.
    assert r.sequence == check_equivalence("correct", name, scenario, depth=length + 1, prove_unbounded=False).sequence
    # z3's bounded search on the symbolic product finds a sequence of the same length (minutes on the
    # later, three-request variants: FLIGHTCHECK_SLOW=1 only).
    if name in DIFFERENT or SLOW:
        z = check_equivalence("correct", name, scenario, depth=length + 1, prove_unbounded=False, search="z3")
        assert z.verdict == "different" and len(z.sequence) == length
    # The sequence is concrete: its prefix runs in both designs, and the stated difference is real.
    prefix = r.sequence[:-1] if ("enabled" in r.difference or "accepted" in r.difference) else r.sequence
    Counterexample.from_actions(spec_a, prefix)
    Counterexample.from_actions(spec_b, prefix)
    assert name in r.difference and "correct" in r.difference


def test_an_unknown_search_is_refused():
    with pytest.raises(ValueError, match="search must be"):
        check_equivalence("correct", "draining", SCENARIOS["burst2"], search="smt")


def test_no_unknown_check_accepts_a_termination_the_correct_design_rejects():
    r = check_equivalence("correct", "no-unknown-check", SCENARIOS["burst2-abort"], depth=2, prove_unbounded=False)
    assert r.sequence == ["notify(0)"]
    assert r.difference == "notify(0) is rejected by correct but accepted by no-unknown-check"


def test_forget_at_release_rejects_a_released_followers_termination():
    scenario = SCENARIOS["burst2-abort"]
    r = check_equivalence("correct", "forget-at-release", scenario, depth=6, prove_unbounded=False)
    # Both arrive, the leader aborts, its flight is released, then the follower's termination.
    assert len(r.sequence) == 5
    assert bfs_distinguishing_length(VARIANTS["correct"].build(scenario), VARIANTS["forget-at-release"].build(scenario)) == 5
    assert "accepted by correct but rejected by forget-at-release" in r.difference


def test_correct_and_draining_are_equivalent_and_proved_by_induction_on_the_product():
    r = check_equivalence("correct", "draining", SCENARIOS["burst2"], depth=6)
    assert r.verdict == "proved" and r.equivalent
    # The coupling that carries the proof keeps every slot but the flight/membership bookkeeping.
    assert sorted(r.failed_couplings) == ["fl[0] equal", "fl[1] equal", "mem[0] equal", "mem[1] equal",
                                          "rel[0] equal", "rel[1] equal"]


def test_early_release_is_unobservable_under_incremental_publication():
    # With incremental publication the leader publishes each page before computing the next, so at the
    # end of its prefill everything is already published: the early guard never fires early.
    r = check_equivalence("correct", "early-release", SCENARIOS["burst2"], depth=6)
    assert r.verdict == "proved"


def test_variants_over_different_scenarios_are_refused():
    from flightcheck.checks.proofs.equivalence import Product
    a = VARIANTS["correct"].build(SCENARIOS["burst2"])
    b = VARIANTS["correct"].build(SCENARIOS["burst3"])
    with pytest.raises(ValueError, match="action vocabulary"):
        Product(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_correct_and_draining_equivalent_on_the_default_scenarios(release):
    # FLIGHTCHECK_SLOW=1: every default scenario; by default one per release point (aborts after the
    # prefill, eviction with aborts on completion).
    names = list(SCENARIOS) if SLOW else [{"after-prefill": "burst2-abort", "on-completion": "burst2-evict"}[release]]
    for name in names:
        r = check_equivalence("correct", "draining", SCENARIOS[name].with_policy(release=release), depth=4)
        assert r.verdict == "proved", (name, r.summary())


@pytest.mark.parametrize("name", ["forget-at-release", "no-unknown-check", "stranded-followers"])
def test_the_product_induction_never_proves_a_buggy_pair(name):
    # With no BMC at all (depth 0), the induction alone must not call them equivalent.
    r = check_equivalence("correct", name, SCENARIOS["burst2-abort"], depth=0)
    assert r.verdict in ("bounded", "different") and r.verdict != "proved"
    assert "same observations" in r.failed_couplings or r.verdict == "different"
