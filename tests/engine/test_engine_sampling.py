"""Sampling: validation errors name the field; greedy, seeded, top-p and temperature behave."""

import numpy as np
import pytest

from flightcheck.impl.errors import InvalidSamplingError
from flightcheck.impl.sampling import Sampler, SamplingParams, find_stop


@pytest.mark.parametrize("kwargs, field", [
    ({"temperature": -0.1}, "temperature"), ({"temperature": float("nan")}, "temperature"),
    ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": 2.0}, "max_tokens"), ({"stop": ("",)}, "stop"),
    ({"stop": "x"}, "stop"),
])
def test_invalid_values_name_the_field(kwargs, field):
    with pytest.raises(InvalidSamplingError, match=f"sampling.{field}"):
        SamplingParams(**kwargs)


def test_greedy_is_argmax():
    logits = np.array([0.1, 3.0, 2.9, -1.0], dtype=np.float32)
    assert Sampler(SamplingParams(), 0).sample(logits) == 1


def test_same_seed_same_draws_and_different_seeds_differ():
    logits = np.zeros(50, dtype=np.float32)
    params = SamplingParams(temperature=1.0, seed=3)
    draws = lambda s: [s.sample(logits) for _ in range(20)]
    assert draws(Sampler(params, 0)) == draws(Sampler(params, 99))  # the request's seed wins
    assert draws(Sampler(SamplingParams(temperature=1.0, seed=4), 0)) != draws(Sampler(params, 0))


def test_top_p_keeps_only_the_nucleus():
    logits = np.log(np.array([0.6, 0.3, 0.05, 0.05]))
    sampler = Sampler(SamplingParams(temperature=1.0, top_p=0.8, seed=0), 0)
    draws = {sampler.sample(logits) for _ in range(300)}
    assert draws == {0, 1}  # 0.6 < 0.8 <= 0.9: two tokens kept


def test_low_temperature_concentrates_mass():
    logits = np.array([1.0, 0.0, 0.0, 0.0])
    sampler = Sampler(SamplingParams(temperature=0.05, seed=0), 0)
    assert {sampler.sample(logits) for _ in range(100)} == {0}


def test_find_stop_returns_earliest():
    assert find_stop("abc STOP def END", ("END", "STOP")) == 4
    assert find_stop("abc", ("x",)) is None
