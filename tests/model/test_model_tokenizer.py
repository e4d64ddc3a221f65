"""The tokenizer built from SmolLM2's GGUF metadata, against llama.cpp's ids (tests/fixtures/tokenizer_ids.json,
produced by scripts/tokenizer_fixture_llamacpp.py; its docstring says how)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import pre_tokenizers

from flightcheck.impl.gguf import read_gguf
from flightcheck.impl.model_file import FILE_SHA256, locate
from flightcheck.impl.tokenizer import ChatMessage, GGUFTokenizer, TokenizerError

FIXTURE = json.loads((Path(__file__).parent.parent / "fixtures" / "tokenizer_ids.json").read_text())


@pytest.fixture(scope="module")
def meta():
    return read_gguf(locate())[1]


@pytest.fixture(scope="module")
def tok(meta):
    return GGUFTokenizer.from_metadata(meta)


def test_fixture_is_for_this_model_file():
    assert FIXTURE["model_sha256"] == FILE_SHA256
    assert len(FIXTURE["cases"]) == 11


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: c["text"][:24])
def test_ids_equal_llama_cpp(tok, case):
    assert tok.encode(case["text"]) == case["ids"]
    assert tok.decode(case["ids"]) == case["text"]


def test_special_ids(tok):
    assert (tok.eos_id, tok.bos_id) == (FIXTURE["eos_id"], FIXTURE["bos_id"]) == (2, 1)
    assert tok.encode("<|im_start|><|im_end|><|endoftext|>") == [1, 2, 0]
    assert tok.vocab_size == 49152


def test_fixture_tells_the_smollm_pre_tokenizer_from_plain_gpt2(meta):
    """Without the per-digit split, spaces before digits come out different: the fixture can catch a wrong
    pre-tokenizer, so the test above is not vacuous."""
    plain = GGUFTokenizer.from_metadata(meta)
    plain.tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    digits = FIXTURE["cases"][2]
    assert digits["text"].startswith("Total:   42")
    assert plain.encode(digits["text"]) != digits["ids"]


def test_chat_template_is_chatml_with_default_system(tok):
    text = tok.apply_chat_template([ChatMessage("user", "Hi")])
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    custom = tok.apply_chat_template([ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")],
                                     add_generation_prompt=False)
    assert custom == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    ids = tok.encode_chat("Hi")
    assert ids[0] == 1 and ids[-3:] == tok.encode("<|im_start|>assistant\n")[-3:] and ids.count(2) == 2


def test_chat_template_matches_jinja_rendering_of_the_metadata(tok, meta):
    import jinja2
    messages = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
                {"role": "user", "content": "And 3+3?"}]
    rendered = jinja2.Template(meta["tokenizer.chat_template"]).render(messages=messages, add_generation_prompt=True)
    assert tok.apply_chat_template([ChatMessage(**m) for m in messages]) == rendered


def test_stream_decoder_holds_back_split_characters(tok):
    text = "emoji 🙂👍 and 東京"
    decoder = tok.stream_decoder()
    pieces = [decoder.push(i) for i in tok.encode(text)]
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)
    assert "" in pieces  # at least one token ended inside a multi-byte character


def test_unsupported_metadata_is_named(meta):
    with pytest.raises(TokenizerError, match="tokenizer.ggml.pre 'mystery'"):
        GGUFTokenizer.from_metadata({**meta, "tokenizer.ggml.pre": "mystery"})
    with pytest.raises(TokenizerError, match="'llama'"):
        GGUFTokenizer.from_metadata({**meta, "tokenizer.ggml.model": "llama"})
