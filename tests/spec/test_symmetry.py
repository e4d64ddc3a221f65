"""Symmetry reduction: the representative is a renaming of the state and the same for its whole orbit."""

import itertools
import random

import pytest

from flightcheck.spec.model import FlightSpec, parse_action
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS
from flightcheck.spec.symmetry import Symmetry


def reachable(spec, limit=None):
    seen, frontier = {spec.initial()}, [spec.initial()]
    while frontier and (limit is None or len(seen) < limit):
        nxt = []
        for s in frontier:
            for _a, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return seen


def group_perms(sym, rng=None, count=None):
    """Renamings that permute each group of interchangeable requests (all of them, or ``count`` drawn)."""
    per_group = [list(itertools.permutations(g)) for g in sym.groups] if rng is None else None
    if per_group is not None:
        choices = itertools.product(*per_group)
    else:
        choices = (tuple(tuple(rng.sample(g, len(g))) for g in sym.groups) for _ in range(count))
    for choice in choices:
        perm = list(range(sym.n))
        for g, image in zip(sym.groups, choice):
            for old, new in zip(g, image):
                perm[old] = new
        yield perm


@pytest.mark.parametrize("name", ["burst3-abort", "mixed3", "doc3-abort", "burst2-evict"])
def test_every_state_of_an_orbit_gets_the_same_representative(name):
    spec = FlightSpec(SCENARIOS[name])
    sym = Symmetry(spec)
    for s in reachable(spec):
        rep, perm = sym.canonical(s)
        assert sym.rename(s, perm) == rep  # the representative is in the orbit, reached by the perm returned
        for p in group_perms(sym):
            assert sym.canonical(sym.rename(s, p))[0] == rep


def test_many_interchangeable_followers_are_ordered_without_trying_every_order():
    # Eight identical requests: seven followers of one flight tie and are linked, 7! orders of which
    # an exhaustive tie-break would rename each state with. Random walks reach such states; every
    # renaming of them must still give one representative.
    spec = FlightSpec(SCALE_SCENARIOS["burst8-abort"])
    sym = Symmetry(spec)
    rng = random.Random(8)
    states = []
    for _walk in range(30):
        s = spec.initial()
        for _step in range(40):
            succ = spec.successors(s)
            if not succ:
                break
            s = rng.choice(succ)[1]
            states.append(s)
    lay = spec.layout
    followers = max(sum(1 for i in range(sym.n) if s[lay.fields["mem"][0] + i] not in (0, i + 1)) for s in states)
    assert followers >= 5  # the walks do reach wide flights
    for s in states:
        rep, perm = sym.canonical(s)
        assert sym.rename(s, perm) == rep
        for p in group_perms(sym, rng, 6):
            assert sym.canonical(sym.rename(s, p))[0] == rep


def test_a_path_replays_through_representatives():
    spec = FlightSpec(SCENARIOS["burst3-abort"])
    sym = Symmetry(spec)
    s = spec.initial()
    for text in ["arrive(2)", "arrive(0)", "arrive(1)", "admit(2)"]:
        t = spec.apply(s, parse_action(text))
        rep, perm = sym.canonical(s)
        step = sym.rename_action(parse_action(text), perm)
        assert sym.canonical(spec.apply(rep, step))[0] == sym.canonical(t)[0]
        s = t


@pytest.mark.parametrize("name", ["burst5", "burst8-abort"])
def test_the_representative_is_orbit_invariant_on_arbitrary_slot_values(name):
    # Reachable states seldom hold two tied followers with different rows (followers of two tied
    # leaders, say). Here every request's own slots copy one drawn row, so all of them tie on those,
    # and the slots that name a request take any value; the renaming must still not care.
    spec = FlightSpec(SCALE_SCENARIOS[name])
    sym = Symmetry(spec)
    bounds = spec.layout.bounds()
    rng = random.Random(name)
    for _ in range(200):
        s = [rng.randint(lo, hi) for lo, hi in bounds]
        row = [rng.randint(*bounds[o]) for o in sym.key_offsets]
        for i in range(sym.n):
            for o, v in zip(sym.key_offsets, row):
                s[o + i] = v
            for o in sym.role_offsets:
                s[o + i] = rng.choice([0, i + 1, rng.randint(1, sym.n)])
        s = tuple(s)
        rep, perm = sym.canonical(s)
        assert sym.rename(s, perm) == rep
        for p in group_perms(sym, rng, 8):
            assert sym.canonical(sym.rename(s, p))[0] == rep
