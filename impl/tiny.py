"""A tiny random-weight model of SmolLM2's architecture, for fast tests of the runner and engine.

Same structure as the real model (Llama, grouped-query attention with fewer KV heads than query
heads, traditional RoPE with base 100000, tied embeddings), small enough that a forward pass takes
milliseconds. Weights come from a fixed seed, so two calls give identical models.
"""

from __future__ import annotations

from mlx.utils import tree_flatten, tree_unflatten  # after flightcheck/impl/__init__.py loaded the BLAS

from flightcheck.impl.blas import mx
from flightcheck.impl.llama import Model, ModelArgs

TINY_ARGS = ModelArgs(
    hidden_size=64,
    num_hidden_layers=2,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,
    rms_norm_eps=1e-5,
    rope_theta=100000.0,
    max_position_embeddings=2048,
    tie_word_embeddings=True,
)


def tiny_model(seed: int = 0, args: ModelArgs = TINY_ARGS) -> Model:
    """Returns a float32 random-weight Llama with the given seed (deterministic)."""
    model = Model(args)
    flat = tree_flatten(model.parameters())
    keys = mx.random.split(mx.random.key(seed), len(flat))
    params = []
    for i, (name, value) in enumerate(flat):
        if name.endswith("norm.weight"):
            # Why not 1.0: random norm gains make the test sensitive to a mixed-up norm.
            new = 1.0 + 0.1 * mx.random.normal(value.shape, key=keys[i])
        else:
            # Why 0.5 for embeddings: larger activations make attention non-uniform, so a wrong
            # position or a wrong page shows up in the logits instead of averaging out.
            std = 0.5 if "embed" in name else value.shape[-1] ** -0.5
            new = std * mx.random.normal(value.shape, key=keys[i])
        params.append((name, new.astype(mx.float32)))
    model.update(tree_unflatten(params))
    mx.eval(model.parameters())
    return model
