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
