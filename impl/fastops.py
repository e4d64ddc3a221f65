"""Attention and the SwiGLU activation, routed around MLX's slow CPU transcendental functions.

Why this module exists (measured on the project's 2-core x86 machine, mlx-cpu 0.32.4): MLX's CPU
``exp`` runs at about 12-25 ns an element, single-threaded, while numpy's vectorised ``exp`` runs at
under 1 ns. A 512-token prefill of SmolLM2 computes 30 x 9 x 512 x 512 softmax exponentials and
30 x 512 x 1536 sigmoids, so with MLX's own kernels the exponentials alone cost about 2 s, more
than all the (OpenBLAS) matmuls together. On the CPU the softmax and the sigmoid therefore run in
numpy (an ``mx.eval`` and two copies per call); the matmuls stay in MLX. Even for one-token decode
steps, where each call is small, the numpy route measured faster (median 11.4 vs 6.5 tokens/s for
one sequence, 59 vs 39 for eight, interleaved runs on a loaded machine), so there is no size cut-off
by default. Off the CPU (Metal, CUDA) MLX's kernels serve unchanged.

``FLIGHTCHECK_NUMPY_OPS=0`` turns the numpy route off (for comparison in scripts/bench_model.py).
"""

from __future__ import annotations

import os

import numpy as np

from flightcheck.impl.blas import mx

# Smallest calls sent to numpy (0: all of them; raise to keep small calls in MLX, e.g. to compare).
MIN_NUMPY_SCORES = 0  # heads x queries x keys
MIN_NUMPY_SILU = 0  # elements


def _numpy_route_enabled() -> bool:
    return os.environ.get("FLIGHTCHECK_NUMPY_OPS", "1") != "0" and mx.default_device() == mx.cpu


NUMPY_ROUTE = _numpy_route_enabled()


def set_numpy_route(enabled: bool) -> None:
    """Switches the numpy route on or off for this process (tests and benchmarks compare both)."""
    global NUMPY_ROUTE
    NUMPY_ROUTE = enabled and mx.default_device() == mx.cpu


def silu_mul(gate: mx.array, up: mx.array) -> mx.array:
    """``silu(gate) * up``, the SwiGLU of the Llama MLP."""
    if not NUMPY_ROUTE or gate.size < MIN_NUMPY_SILU or gate.dtype != mx.float32:
        return gate * mx.sigmoid(gate) * up
    mx.eval(gate, up)
    g, u = np.asarray(gate), np.asarray(up)
    # g / (1 + exp(-g)) overflows harmlessly to g / inf = -0 for very negative g.
    with np.errstate(over="ignore"):
        return mx.array(g / (1.0 + np.exp(-g)) * u)


def attention(queries: mx.array, keys: mx.array, values: mx.array, scale: float, mask: mx.array | None) -> mx.array:
    """Scaled dot-product attention with grouped KV heads, keys in KV-head-major layout.

    ``queries`` [B, H, L, d]; ``keys``/``values`` [Hkv, B, S, d] (the layout a gather from the
    runner's [Hkv, slots, d] pools gives without a copy); ``mask`` boolean, broadcastable to
    [B, 1, L, S] (True = attend), or None. Returns [B, H, L, d].

    Written out in matmuls rather than ``mx.fast.scaled_dot_product_attention`` (which on the CPU is
    the same ops, but wants [B, Hkv, S, d] keys, i.e. a transposed copy of every gathered key):
    the queries of the ``H // Hkv`` heads sharing a KV head form one block, one matmul per KV head
    and sequence.
    """
    B, H, L, d = queries.shape
    Hkv, S = keys.shape[0], keys.shape[2]
    group = H // Hkv
    q = (queries * scale).reshape(B, Hkv, group * L, d).transpose(1, 0, 2, 3)  # [Hkv, B, group*L, d]
    scores = (q @ keys.swapaxes(-1, -2)).reshape(Hkv, B, group, L, S)
    if mask is not None:
        scores = mx.where(mask.reshape(1, B if mask.ndim == 4 else 1, 1, L, S), scores, -np.inf)
    probs = _softmax(scores).reshape(Hkv, B, group * L, S)
    out = probs @ values  # [Hkv, B, group*L, d]
    return out.transpose(1, 0, 2, 3).reshape(B, H, L, d)


def _softmax(scores: mx.array) -> mx.array:
    if not NUMPY_ROUTE or scores.size < MIN_NUMPY_SCORES or scores.dtype != mx.float32:
        return mx.softmax(scores, axis=-1)
    mx.eval(scores)
    s = np.array(scores)  # writable copy: the softmax runs in place
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return mx.array(s)
