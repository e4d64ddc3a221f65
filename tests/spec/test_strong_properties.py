"""Properties as strong as their names: each is stated against what the design does, not against the
spec's own reading of its guards, so a planted bug in that reading is caught (issue 42)."""

from flightcheck.checks.explore.explorer import explore
from flightcheck.spec.expr import Or
from flightcheck.spec.model import FlightSpec, parse_action
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.state import DECODE


class ReleasePointMisread(FlightSpec):
    """The release point read wrongly: the leader's prefill done stands for its pages published (under
    on-completion publication they are published only when it terminates)."""

    def at_release_point(self, s, f):
        if self.policy.release == "after-prefill":
            return Or(self.is_terminated(s, f), s.ph[f] == DECODE)
        return super().at_release_point(s, f)


def test_release_after_publication_is_read_from_the_published_pages_not_the_release_guard():
    scn = SCENARIOS["burst2"].with_policy(release="after-prefill", publication="on-completion")
    assert explore(FlightSpec(scn)).result("release_after_publication").holds
    spec = ReleasePointMisread(scn)
    res = explore(spec).result("release_after_publication")
    assert not res.holds
    path = res.counterexample
    release = parse_action(path.actions[-1])
    assert release.name == "release"
    # The old definition set its ghost only where the guard's own reading said "not at the release
    # point": on this path that reading says the release is on time, so the old property accepted the run.
    before = spec.view(path.steps[-2].state if len(path.steps) > 1 else spec.initial())
    assert spec.at_release_point(before, release.arg) and spec.released_early(before, release.arg)


def test_single_prefill_excuses_only_the_requests_coordinated_on_the_page():
    """A follower's expired wait in one prompt's flight excuses no duplicate in another prompt's flight: the
    old definition (any expired wait anywhere excused every duplicate of the run) accepted this run."""
    from flightcheck.spec.scenario import Request, Scenario
    from flightcheck.spec.variants import VARIANTS

    variant = VARIANTS["unpinned-release"]  # released followers pin nothing: an eviction makes both compute
    demo = variant.demo_scenario()
    cx = explore(variant.build(demo)).result("single_prefill").counterexample
    assert {parse_action(a).arg for a in cx.actions if parse_action(a).name == "arrive"} == {0, 1, 2}
    a, b = Request(cls=0, num_pages=2), Request(cls=1, num_pages=2)
    scn = Scenario(name="two-prompts-expire", requests=(a, a, a, b, b), eviction=True, expiry=True)
    spec = variant.build(scn)
    # the other prompt's follower waits out its wait first, then the demo's run, request for request
    path = ["arrive(3)", "arrive(4)", "expire(4)", *cx.actions]
    state = spec.initial()
    for k, name in enumerate(path):
        action = parse_action(name)
        assert spec.guard(state, action), f"{name} (step {k + 1}) is not enabled"
        before, state = state, spec.apply(state, action)
    view = spec.view(state)
    assert view.g_dup == 1  # caught: the duplicate is in class 0, whose requests excuse nothing
    assert spec.duplicates_excused(spec.view(before))  # while the old, run-wide excuse held
    assert not any(spec.excuses(spec.view(before), j) for j in (0, 1, 2))
