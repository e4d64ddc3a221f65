"""One vocabulary: the engine's event names are the spec's action names, in the same order, and every
refusal the spec can make is explained in specific words."""

import pytest

from flightcheck.checks.conform import explain
from flightcheck.checks.conform.explain import explain_guard
from flightcheck.checks.explore.explorer import explore
from flightcheck.impl.events import ACTIONS
from flightcheck.spec.model import ACTION_NAMES, FlightSpec
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES, SCENARIOS

from switches import SLOW  # noqa: E402


def test_the_engine_speaks_the_spec_vocabulary_in_its_order():
    assert ACTIONS == ACTION_NAMES


# The three largest graphs (doc3-expire: 7,362 states under one policy; doc3-abort and burst4-abort: 28 s
# together) run with FLIGHTCHECK_SLOW=1; the others always.
LARGEST = ("doc3-expire", "doc3-abort", "burst4-abort")


@pytest.mark.parametrize("name", sorted(n for n in SCENARIOS if SLOW or n not in LARGEST))
def test_every_disabled_action_of_every_explored_state_gets_a_specific_explanation(name, monkeypatch):
    # the correct design's words cover every guard: the false-conjunct words (a variant's fallback) never answer
    monkeypatch.setattr(explain, "guard_words", lambda *args: ["guard false"])
    seen = set()
    for release in RELEASES:
        for publication in PUBLICATIONS:
            spec = FlightSpec(SCENARIOS[name].with_policy(release=release, publication=publication))
            for state in explore(spec).graph:  # representatives are states too
                for action in spec.actions:
                    if spec.guard(state, action):
                        continue
                    reasons = explain_guard(spec, state, action)
                    assert reasons and "guard false" not in reasons, (release, publication, str(action), state)
                    seen.add(action.name)
    assert {"admit", "prefill", "publish", "release", "decode", "finish"} <= seen
