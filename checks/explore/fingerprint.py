"""A fingerprint of each safety property: on how many states near the reachable ones it holds.

Exploration tells whether a property holds on every reachable state; it cannot tell a property that
holds because the design is right from one that holds because it was weakened until it says nothing
(a conjunct dropped, an ``Implies`` whose consequent became true, a guard on ``applies`` that switches
it off). Four of the correct design's properties are violated by no design-history variant, so a
weakened one would pass every stage unseen. The fingerprint closes that gap: take a sample of the
reachable states, change one slot of each to another value in its range (states one step outside
what the design reaches, where each conjunct of a property is tested on its own), and count, for each
safety property, the states on which it holds. ``check`` records the counts per scenario and policy;
a property whose meaning changed moves its count and fails the row, naming the property.

A refactor of a property that keeps its meaning on every state keeps its counts; one that keeps it
only on reachable states moves them, and is reviewed and re-recorded like any other figure.

Everything is seeded and the states are taken in sorted order, so the counts are the same on every
run and every machine.

For example::

    >>> from flightcheck.checks.explore.explorer import explore
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> fp = property_fingerprint(spec, list(explore(spec).graph.nodes))
    >>> sorted(fp)[:3], all(0 < n <= SAMPLES for n in fp.values())
    (['blocked_in_open_flight', 'follower_waits_for_release', 'in_use_never_evicted'], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flightcheck.checks.explore.transitions import as_mask

SAMPLES = 4000  # perturbed states per scenario and policy: milliseconds of numpy, each slot about a hundred times
SEED = 20261202


def perturbed_states(spec: Any, states: Sequence[tuple], samples: int = SAMPLES, seed: int = SEED) -> list[np.ndarray]:
    """``samples`` states as columns (one array per slot): each a reachable state (drawn from ``states``
    in sorted order) with one slot set to a value drawn from that slot's range."""
    bounds = spec.layout.bounds()
    rng = np.random.default_rng(seed)
    base = np.array(sorted(states), dtype=np.int64).reshape(len(states), len(bounds))
    rows = base[rng.integers(0, len(base), size=samples)]
    slots = rng.integers(0, len(bounds), size=samples)
    lo = np.array([b[0] for b in bounds], dtype=np.int64)[slots]
    hi = np.array([b[1] for b in bounds], dtype=np.int64)[slots]
    rows[np.arange(samples), slots] = lo + (rng.random(samples) * (hi - lo + 1)).astype(np.int64)
    return [rows[:, j].copy() for j in range(len(bounds))]


def property_fingerprint(spec: Any, states: Sequence[tuple], samples: int = SAMPLES,
                         seed: int = SEED) -> dict[str, int]:
    """For each safety property that applies to ``spec``: on how many of :func:`perturbed_states` it
    holds (``states``: the reachable states, or any sample of them)."""
    from flightcheck.spec.properties import safety_properties

    if not states:
        return {}
    cols = perturbed_states(spec, states, samples, seed)
    return {p.name: int(as_mask(p.holds(spec, cols), samples).sum()) for p in safety_properties(spec)}
