"""Paged forward (impl/runner.py) against a plain contiguous forward of the same tiny model.

Tolerance: float32 throughout; the two paths differ only in summation order (gathered vs
concatenated keys, per-token vs offset RoPE), so logits agree to ~1e-5; we allow 1e-4 absolute.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from flightcheck.impl.blas import mx
from flightcheck.impl.runner import ModelRunner, SeqChunk
from flightcheck.impl.tiny import tiny_model

ATOL = 1e-4


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0)


def _prompt(seed: int, length: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(256) for _ in range(length)]


def _reference_logits(model, tokens: list[int]) -> np.ndarray:
    """Logits at every position from one contiguous, cache-less forward."""
    return np.array(model(mx.array([tokens]))[0])


def _pages(first: int, count: int) -> list[int]:
    # Scattered, non-monotonic page ids, so a block-table mix-up cannot pass by accident.
    return [(first + 7 * k) % 61 for k in range(count)]


def test_tiny_model_is_deterministic_and_seed_dependent(model):
    tokens = mx.array([_prompt(1, 8)])
    assert np.array_equal(np.array(model(tokens)), np.array(tiny_model(seed=0)(tokens)))
    assert not np.allclose(np.array(model(tokens)), np.array(tiny_model(seed=1)(tokens)), atol=1e-2)


@pytest.mark.parametrize("length", [1, 15, 16, 17, 33, 48, 70])
def test_single_prefill_equals_contiguous(model, length):
    tokens = _prompt(length, length)
    runner = ModelRunner(model, num_pages=64)
    logits = runner.forward([SeqChunk(tokens, 0, _pages(3, -(-length // 16)))])
    assert logits.shape == (1, 256) and logits.dtype == mx.float32
    np.testing.assert_allclose(np.array(logits[0]), _reference_logits(model, tokens)[-1], atol=ATOL)


def test_chunked_prefill_then_decodes_equals_contiguous(model):
    tokens = _prompt(2, 53)
    ref = _reference_logits(model, tokens)
    runner = ModelRunner(model, num_pages=64)
    table = _pages(11, 4)
    pos = 0
    for size in (16, 5, 19, 9, 1, 1, 1, 1):  # chunk edges inside and on page boundaries
        logits = runner.forward([SeqChunk(tokens[pos: pos + size], pos, table)])
        pos += size
        np.testing.assert_allclose(np.array(logits[0]), ref[pos - 1], atol=ATOL)
    assert pos == 53


def test_batched_mixed_prefill_and_decode_equals_alone(model):
    """Three sequences at different stages in one pass, in an order that mixes decodes and prefills."""
    a, b, c, d = _prompt(10, 40), _prompt(11, 18), _prompt(12, 33), _prompt(13, 3)
    runner = ModelRunner(model, num_pages=64)
    ta, tb, tc, td = [0, 1, 2], [10, 11], [20, 21, 22], [30]
    # Round 1: prefill everything except the last token of a, b and c.
    runner.forward([SeqChunk(a[:39], 0, ta), SeqChunk(b[:17], 0, tb), SeqChunk(c[:20], 0, tc)])
    # Round 2: decode a, decode b, prefill the rest of c, prefill d from scratch.
    logits = runner.forward([SeqChunk(a[39:], 39, ta), SeqChunk(c[20:], 20, tc),
                             SeqChunk(b[17:], 17, tb), SeqChunk(d, 0, td)])
    assert logits.shape == (4, 256)
    for row, tokens in enumerate([a, c, b, d]):
        np.testing.assert_allclose(np.array(logits[row]), _reference_logits(model, tokens)[-1], atol=ATOL)


def test_batch_of_decodes_with_different_lengths(model):
    prompts = [_prompt(20 + i, n) for i, n in enumerate([5, 16, 17, 31, 32, 47, 64, 2])]
    runner = ModelRunner(model, num_pages=64)
    tables = [[8 * i + k for k in range(5)] for i in range(len(prompts))]
    runner.forward([SeqChunk(p[:-1], 0, t) for p, t in zip(prompts, tables)])
    logits = runner.forward([SeqChunk(p[-1:], len(p) - 1, t) for p, t in zip(prompts, tables)])
    for row, tokens in enumerate(prompts):
        np.testing.assert_allclose(np.array(logits[row]), _reference_logits(model, tokens)[-1], atol=ATOL)


def test_shared_prefix_pages_are_read_not_written(model):
    """A second sequence reuses the first one's full pages (a prefix-cache hit) and computes only its
    tail; the shared pages are bit-identical afterwards and its logits equal the contiguous ones."""
    prefix = _prompt(30, 32)
    first, second = prefix + _prompt(31, 7), prefix + _prompt(32, 12)
    runner = ModelRunner(model, num_pages=64)
    runner.forward([SeqChunk(first, 0, [4, 5, 6])])
    shared = [[np.array(a) for page in (4, 5) for a in runner.page_kv(layer, page)] for layer in range(2)]
    logits = runner.forward([SeqChunk(second[32:], 32, [4, 5, 9])])
    np.testing.assert_allclose(np.array(logits[0]), _reference_logits(model, second)[-1], atol=ATOL)
    for layer, before in enumerate(shared):
        after = [np.array(a) for page in (4, 5) for a in runner.page_kv(layer, page)]
        assert all(np.array_equal(x, y) for x, y in zip(after, before))
        assert all(np.abs(x).sum() > 0 for x in after)


def test_copy_page_copies_every_layer(model):
    runner = ModelRunner(model, num_pages=8)
    runner.forward([SeqChunk(_prompt(40, 16), 0, [2])])
    runner.copy_page(2, 7)
    for layer in range(2):
        for copied, original in zip(runner.page_kv(layer, 7), runner.page_kv(layer, 2)):
            assert copied.shape == (16, 2, 16)
            assert np.array_equal(np.array(copied), np.array(original))
            assert np.abs(np.array(copied)).sum() > 0


@pytest.mark.parametrize("chunks, message", [
    ([], "at least one"),
    ([SeqChunk([], 0, [0])], "token_ids is empty"),
    ([SeqChunk([1, 2], -1, [0])], "start_pos -1"),
    ([SeqChunk([1] * 17, 0, [0])], "need 2"),
    ([SeqChunk([1], 0, [8])], "page id 8"),
    ([SeqChunk([999], 0, [0])], "token id 999"),
    ([SeqChunk([1], 0, [3]), SeqChunk([2], 0, [3])], "also written by chunk 0"),
    ([SeqChunk([1], 2048, [0] * 129)], "exceeds the context"),
])
def test_bad_chunks_are_rejected_and_pools_untouched(model, chunks, message):
    runner = ModelRunner(model, num_pages=8)
    runner.forward([SeqChunk(_prompt(50, 20), 0, [0, 1])])
    before = [np.array(p) for p in runner.k_pools]
    with pytest.raises(ValueError, match=message):
        runner.forward(chunks)
    for pool, old in zip(runner.k_pools, before):
        assert np.array_equal(np.array(pool), old)


def test_runner_rejects_bad_sizes(model):
    with pytest.raises(ValueError, match="num_pages"):
        ModelRunner(model, num_pages=0)


@pytest.mark.parametrize("numpy_route", [True, False])
def test_paged_equals_contiguous_on_both_attention_routes(model, numpy_route):
    """fastops sends big softmax/SiLU calls to numpy on the CPU; both routes must give the same logits."""
    from flightcheck.impl import fastops

    tokens = _prompt(60, 150)  # 4 heads x 150 x 150 scores: above fastops.MIN_NUMPY_SCORES
    saved = fastops.NUMPY_ROUTE
    fastops.set_numpy_route(numpy_route)
    try:
        runner = ModelRunner(model, num_pages=16)
        first = runner.forward([SeqChunk(tokens[:149], 0, list(range(10)))])
        last = runner.forward([SeqChunk(tokens[149:], 149, list(range(10)))])
        ref = _reference_logits(model, tokens)
    finally:
        fastops.set_numpy_route(saved)
    np.testing.assert_allclose(np.array(first[0]), ref[148], atol=ATOL)
    np.testing.assert_allclose(np.array(last[0]), ref[149], atol=ATOL)


def test_attention_equals_mlx_sdpa_on_both_routes():
    """fastops.attention (KV-head-major keys, numpy or MLX softmax) against MLX's own fused attention."""
    from flightcheck.impl import fastops

    keys = mx.random.split(mx.random.key(3), 4)
    q = mx.random.normal((2, 6, 40, 16), key=keys[0])
    k = mx.random.normal((2, 3, 300, 16), key=keys[1])  # [B, Hkv, S, d], sdpa's layout
    v = mx.random.normal((2, 3, 300, 16), key=keys[2])
    causal = (mx.arange(260, 300)[:, None] >= mx.arange(300)[None, :])
    padded = mx.random.uniform(shape=(2, 1, 1, 300), key=keys[3]) > 0.3
    saved = fastops.NUMPY_ROUTE
    try:
        for mask in (causal, None):
            expected = np.array(mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask=mask))
            for route in (True, False):
                fastops.set_numpy_route(route)
                got = fastops.attention(q, k.transpose(1, 0, 2, 3), v.transpose(1, 0, 2, 3), 0.25, mask)
                np.testing.assert_allclose(np.array(got), expected, atol=1e-5)
        q1 = q[:, :, :1]
        expected = np.array(mx.fast.scaled_dot_product_attention(q1, k, v, scale=0.25, mask=padded))
        for route in (True, False):
            fastops.set_numpy_route(route)
            got = fastops.attention(q1, k.transpose(1, 0, 2, 3), v.transpose(1, 0, 2, 3), 0.25, padded)
            np.testing.assert_allclose(np.array(got), expected, atol=1e-5)
        fastops.set_numpy_route(True)
        silu_numpy = fastops.silu_mul(q, q * 0.5)
        fastops.set_numpy_route(False)
        silu_mlx = fastops.silu_mul(q, q * 0.5)
    finally:
        fastops.set_numpy_route(saved)
    np.testing.assert_allclose(np.array(silu_numpy), np.array(silu_mlx), atol=1e-5)


@pytest.mark.parametrize("query_block", [1, 7, 16, 1000])
def test_query_blocks_give_the_same_logits(model, query_block):
    """Long prefill chunks attend in causal query blocks; every block size gives the contiguous logits."""
    tokens = _prompt(70, 90)
    runner = ModelRunner(model, num_pages=16)
    runner.query_block = query_block
    runner.forward([SeqChunk(tokens[:21], 0, list(range(6)))])
    logits = runner.forward([SeqChunk(tokens[21:], 21, list(range(6)))])
    np.testing.assert_allclose(np.array(logits[0]), _reference_logits(model, tokens)[-1], atol=ATOL)


def test_fused_projections_give_the_same_logits():
    """Model.fuse_projections stacks q/k/v and gate/up weights: same logits, 4 matmuls a layer instead of 7."""
    tokens = mx.array([_prompt(80, 40)])
    plain = tiny_model(seed=2)
    fused = tiny_model(seed=2).fuse_projections()
    assert fused.layers[0].self_attn.is_fused and not hasattr(fused.layers[0].self_attn, "q_proj")
    assert fused.layers[1].mlp.gate_up_proj.weight.shape == (256, 64)
    np.testing.assert_allclose(np.array(fused(tokens)), np.array(plain(tokens)), atol=ATOL)
    runner = ModelRunner(fused, num_pages=8)
    logits = runner.forward([SeqChunk(_prompt(80, 40), 0, [3, 1, 4])])
    np.testing.assert_allclose(np.array(logits[0]), np.array(plain(tokens))[0, -1], atol=ATOL)
