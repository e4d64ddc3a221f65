"""Loading a Llama GGUF file (SmolLM2-135M-Instruct) into ``llama.Model``.

``mx.load(path, return_metadata=True)`` reads the GGUF: quantized tensors come back in MLX's
affine format (``weight`` packed in uint32, ``scales``/``biases`` per group of 32), Q4_1 linears
as 4-bit and the token embedding as 8-bit; the architecture and the tokenizer are in the metadata.

Why dequantize to float32 on the CPU (measured here, 2 cores, mlx-cpu 0.32.4): MLX's CPU quantized
matmul runs at a few GFLOP/s while OpenBLAS's sgemm runs at 100-190, so with the fast BLAS a 512-token
prefill drops from about a minute to a few seconds, and decoding is faster too (float32 matvecs beat
the quantized ones even though they read 8x the bytes). Even on the slow reference BLAS float32 measured
faster (64-token prefill 8.3 s vs 9.3 s, decode 5.0-5.4 vs 3.9-4.4 tokens/s), so the CPU always gets
float32; on Metal/CUDA, where MLX's quantized kernels are fast and memory matters, weights stay quantized.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.nn as nn

from flightcheck.impl.blas import blas_status, mx, warn_if_slow
from flightcheck.impl.llama import Model, ModelArgs
from flightcheck.impl.model_file import ModelFileError, loading, locate

GROUP_SIZE = 32  # MLX's GGUF reader converts Q4_0/Q4_1/Q8_0 blocks of 32 into affine groups of 32

_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


@dataclass(frozen=True)
class ModelInfo:
    """What was loaded and how: shown by ``flightcheck doctor`` and the engine's info."""

    path: str
    args: ModelArgs
    is_dequantized: bool
    load_seconds: float
    blas: str
    name: str


def _scalar(meta: dict[str, Any], key: str) -> Any:
    if key not in meta:
        raise ModelFileError(f"has no {key!r} in its GGUF metadata (not a Llama GGUF file)")
    value = meta[key]
    return value.item() if hasattr(value, "item") else value


def args_from_metadata(meta: dict[str, Any]) -> ModelArgs:
    """ModelArgs from ``llama.*`` GGUF metadata keys."""
    arch = meta.get("general.architecture")
    if arch != "llama":
        raise ModelFileError(f"has GGUF general.architecture {arch!r}; only 'llama' is supported")
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = int(_scalar(meta, "llama.vocab_size")) if "llama.vocab_size" in meta else len(tokens)
    return ModelArgs(
        hidden_size=int(_scalar(meta, "llama.embedding_length")),
        num_hidden_layers=int(_scalar(meta, "llama.block_count")),
        intermediate_size=int(_scalar(meta, "llama.feed_forward_length")),
        num_attention_heads=int(_scalar(meta, "llama.attention.head_count")),
        num_key_value_heads=int(_scalar(meta, "llama.attention.head_count_kv")),
        vocab_size=vocab,
        rms_norm_eps=float(_scalar(meta, "llama.attention.layer_norm_rms_epsilon")),
        rope_theta=float(_scalar(meta, "llama.rope.freq_base")),
        max_position_embeddings=int(_scalar(meta, "llama.context_length")),
        tie_word_embeddings=False,  # decided below from the presence of output.weight
    )


def _rename(gguf_name: str) -> str:
    match = re.fullmatch(r"blk\.(\d+)\.(\w+)\.(weight|scales|biases)", gguf_name)
    if match:
        layer, part, leaf = match.groups()
        if part not in _LAYER_NAMES:
            raise ModelFileError(f"holds an unexpected GGUF tensor {gguf_name!r} (not a Llama layer weight)")
        return f"model.layers.{layer}.{_LAYER_NAMES[part]}.{leaf}"
    base, leaf = gguf_name.rsplit(".", 1)
    if base not in _TOP_NAMES:
        raise ModelFileError(f"holds an unexpected GGUF tensor {gguf_name!r}")
    return f"{_TOP_NAMES[base]}.{leaf}"


def _bits(weights: dict[str, mx.array], prefix: str) -> int:
    # Packed uint32 columns * 32 bits / input features, where input features = groups * group size.
    packed, scales = weights[prefix + ".weight"], weights[prefix + ".scales"]
    return packed.shape[1] * 32 // (scales.shape[1] * GROUP_SIZE)


def read_gguf(path: Path) -> tuple[dict[str, mx.array], dict[str, Any]]:
    """``mx.load`` with its failures turned into a ModelFileError naming the file."""
    try:
        weights, meta = mx.load(str(path), return_metadata=True)
    except Exception as exc:  # MLX raises RuntimeError/ValueError with a terse message
        raise ModelFileError(f"cannot be read as GGUF ({exc})", path) from exc
    return weights, meta


def build_model(weights: dict[str, mx.array], meta: dict[str, Any], dequantize: bool, fuse: bool = True) -> Model:
    """A ``Model`` holding the GGUF's weights, float32-dequantized or kept quantized; float32 weights
    get their q/k/v and gate/up projections stacked (``Model.fuse_projections``) unless ``fuse`` is False."""
    renamed = {_rename(k): v for k, v in weights.items()}
    args = args_from_metadata(meta)
    args = ModelArgs.from_dict({**args.__dict__, "tie_word_embeddings": "lm_head.weight" not in renamed})
    model = Model(args)
    quantized = sorted({k.rsplit(".", 1)[0] for k in renamed if k.endswith(".scales")})
    bits = {prefix: _bits(renamed, prefix) for prefix in quantized}
    if dequantize:
        for prefix in quantized:
            # float32 scales/biases: scale * q + bias is then computed and kept in float32, where a
            # float16 dequantize (the scales' own dtype) would round every weight once more.
            scales = renamed.pop(prefix + ".scales").astype(mx.float32)
            biases = renamed.pop(prefix + ".biases").astype(mx.float32)
            w = mx.dequantize(renamed.pop(prefix + ".weight"), scales, biases, group_size=GROUP_SIZE, bits=bits[prefix])
            mx.eval(w)  # one tensor at a time: peak memory stays one layer above the result
            renamed[prefix + ".weight"] = w
    else:
        nn.quantize(model, class_predicate=lambda path, _m: {"group_size": GROUP_SIZE, "bits": bits[path]}
                    if path in bits else False)
    model.load_weights(list(renamed.items()), strict=True)
    mx.eval(model.parameters())
    if dequantize and fuse:
        model.fuse_projections()
    return model


def load_model(path: str | Path | None = None, dequantize: bool | None = None,
               fuse: bool = True) -> tuple[Model, dict[str, Any], ModelInfo]:
    """Verifies and loads the GGUF; ``dequantize=None`` chooses float32 on the CPU (see the module docstring).

    Every failure of the file is a ModelFileError naming it, with the fix for where its path came from.
    """
    start = time.perf_counter()
    with loading(path):
        file = locate(path)
        status = blas_status()
        if dequantize is None:
            dequantize = mx.default_device() == mx.cpu
            warn_if_slow()
        weights, meta = read_gguf(file)
        model = build_model(weights, meta, dequantize, fuse)
    info = ModelInfo(path=str(file), args=model.args, is_dequantized=dequantize,
                     load_seconds=time.perf_counter() - start, blas=status.describe(),
                     name=str(meta.get("general.name", file.name)))
    return model, meta, info


def load_smollm2(path: str | Path | None = None, dequantize: bool | None = None):
    """The real model: ``(model, tokenizer, info)`` from the cached, verified SmolLM2 GGUF."""
    from flightcheck.impl.tokenizer import GGUFTokenizer

    model, meta, info = load_model(path, dequantize)
    with loading(path):
        return model, GGUFTokenizer.from_metadata(meta), info
