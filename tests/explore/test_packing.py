"""The batched explorer's building blocks against plain Python: packed keys and the visited set."""

import numpy as np
import pytest

from flightcheck.checks.explore.packing import StateCodec
from flightcheck.checks.explore.visited import VisitedSet
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS


@pytest.mark.parametrize("scn", [SCENARIOS["burst2"], SCENARIOS["mixed3"], SCALE_SCENARIOS["burst8-abort"]],
                         ids=lambda s: s.name)
def test_keys_round_trip_and_order_like_the_state_tuples(scn):
    lay = FlightSpec(scn).layout
    codec = StateCodec(lay)
    rng = np.random.default_rng(0)
    states = sorted({tuple(int(rng.integers(lo, hi + 1)) for lo, hi in lay.bounds()) for _ in range(500)})
    keys = codec.pack_states(states)
    assert codec.unpack_states(keys) == states
    order = np.lexsort(keys[::-1])  # word 0 most significant
    assert order.tolist() == list(range(len(states)))


@pytest.mark.parametrize("words", [1, 3])
def test_the_visited_set_numbers_states_like_a_breadth_first_queue(words):
    rng = np.random.default_rng(words)
    v = VisitedSet(words, capacity=4)
    seen: dict[tuple, int] = {}
    for _batch in range(30):
        num = int(rng.integers(1, 3000))
        # Few distinct values, so that batches repeat keys inside themselves and across batches.
        keys = rng.integers(0, 40, size=(words, num)).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        rank = rng.permutation(num * 3)[:num]
        ids, finder = v.insert(keys, rank)
        rows = [tuple(int(w) for w in keys[:, c]) for c in range(num)]
        for c in np.argsort(rank).tolist():  # the order a queue would meet them
            seen.setdefault(rows[c], len(seen))
        assert ids.tolist() == [seen[r] for r in rows]
        assert v.size == len(seen)
        new = [r for r, i in seen.items() if i >= v.size - len(finder)]
        assert [rows[c] for c in finder.tolist()] == new
    assert v.lookup(v.block(0, v.size)).tolist() == list(range(v.size))
    assert v.lookup(np.full((words, 1), 12345, dtype=np.uint64)).tolist() == [-1]
