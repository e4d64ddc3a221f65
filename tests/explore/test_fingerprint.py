"""A property weakened until it says nothing fails check's explore row, naming it.

Four safety properties of the correct design are violated by no design-history variant, so exploration
alone would let a weakened one pass: these weakenings (the kind a spec edit makes by mistake) must move
the recorded fingerprint of the property, and only of that property."""

from __future__ import annotations

import dataclasses

import pytest

from flightcheck.checks.suite.expect import Expectations
from flightcheck.checks.suite.context import Context
from flightcheck.checks.suite.context import scenario_key as _key
from flightcheck.checks.suite.stage_explore import explore_one as _explore_one
from flightcheck.checks.suite.stage_explore import fingerprint_change as _fingerprint_change
from flightcheck.checks.explore.explorer import explore
from flightcheck.checks.explore.fingerprint import SAMPLES, perturbed_states, property_fingerprint
from flightcheck.spec import properties as P
from flightcheck.spec.expr import And, Implies, Sum
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import SCENARIOS, policy_grid
from flightcheck.spec.state import BLOCKED, OPEN


def only_the_first_flight(spec, s):
    n = spec.num_requests
    return And(*[Implies(And(s.mem[i] == 1, s.fl[0] == OPEN), s.ph[i] == BLOCKED) for i in range(1, n)])


def without_the_index(spec, s):
    n, lay = spec.num_requests, spec.layout
    return And(*[Sum(s.fl[f] == OPEN for f in range(n) if lay.req_class[f] == c) <= 1 for c in range(len(lay.classes))])


WEAKENED = [
    ("follower_waits_for_release", only_the_first_flight, "burst3", "after-prefill"),
    ("one_flight_per_input", without_the_index, "burst2", "after-prefill"),
    ("expired_never_blocked", lambda spec, s: True, "burst3-expire", "after-prefill"),
    ("release_on_completion", lambda spec, s: True, "burst2", "on-completion"),
]


def scenario(name, release):
    return next(s for s in policy_grid(SCENARIOS[name]) if s.policy.release == release)


@pytest.mark.parametrize("name, weak, scn, release", WEAKENED, ids=[w[0] for w in WEAKENED])
def test_a_weakened_property_moves_its_fingerprint_and_fails_the_row(monkeypatch, name, weak, scn, release):
    sc = scenario(scn, release)
    ctx = Context(expect=Expectations.load())
    key, ok, _states, _bad, _s, _n, evidence = _explore_one(sc)
    assert ok and _fingerprint_change(ctx, key, evidence["fingerprint"]) is None  # today's spec: as recorded
    i = P.PROPERTIES.index(P.get_property(name))
    monkeypatch.setattr(P, "PROPERTIES", P.PROPERTIES[:i] + (dataclasses.replace(P.PROPERTIES[i], check=weak),)
                        + P.PROPERTIES[i + 1:])
    key, ok, _states, _bad, _s, _n, evidence = _explore_one(sc)
    assert ok  # every reachable state still satisfies the weakened property: exploration cannot tell
    moved = _fingerprint_change(Context(expect=Expectations.load()), key, evidence["fingerprint"])
    assert moved is not None and moved.startswith("a property's meaning changed on states near the reachable ones (")
    assert f"({name}: " in moved and ";" not in moved  # that property, and no other


def test_a_property_switched_off_is_named_as_absent(monkeypatch):
    sc = scenario("burst2", "after-prefill")
    i = P.PROPERTIES.index(P.get_property("follower_waits_for_release"))
    off = dataclasses.replace(P.PROPERTIES[i], applies=lambda spec: False)
    monkeypatch.setattr(P, "PROPERTIES", P.PROPERTIES[:i] + (off,) + P.PROPERTIES[i + 1:])
    key, *_rest, evidence = _explore_one(sc)
    moved = _fingerprint_change(Context(expect=Expectations.load()), key, evidence["fingerprint"])
    assert moved is not None and "follower_waits_for_release: " in moved and "-> absent" in moved


def test_the_fingerprint_is_seeded_and_perturbs_one_slot_within_its_range():
    spec = FlightSpec(SCENARIOS["burst2"])
    states = list(explore(spec).graph.nodes)
    cols = perturbed_states(spec, states)
    bounds = spec.layout.bounds()
    assert len(cols) == len(bounds) and all(len(c) == SAMPLES for c in cols)
    assert all(lo <= c.min() and c.max() <= hi for c, (lo, hi) in zip(cols, bounds))
    assert property_fingerprint(spec, states) == property_fingerprint(spec, list(reversed(states)))
    assert property_fingerprint(spec, states) != property_fingerprint(spec, states, seed=1)
    assert _key(scenario("burst2", "after-prefill")) in Expectations.load().recorded["fingerprint"]
