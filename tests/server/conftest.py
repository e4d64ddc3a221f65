"""Servers on 127.0.0.1 (any free port) over the tiny random-weight model, and small HTTP helpers."""

import http.client
import json
import re
import time
from dataclasses import replace

import numpy as np
import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.server import Limits, Server
from flightcheck.impl.tiny import TINY_ARGS, tiny_model

PROMPT = [int(t) for t in np.random.default_rng(3).integers(0, 256, size=100)]  # H = 6 shareable pages


@pytest.fixture(scope="session")
def model():
    # Untied embeddings: the random model then does not repeat one token for ever, so outputs differ.
    return tiny_model(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False))


def tiny_engine(model, **config):
    config = EngineConfig(**{"num_pages": 256, **config})
    return Engine(ModelRunner(model, num_pages=config.num_pages), config=config, model_name="tiny random Llama")


def make_server(model, *, limits=None, history=256, **config):
    return Server(tiny_engine(model, **config), port=0, limits=limits, history=history).start()


CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def byte_tokenizer():
    """A real ``GGUFTokenizer`` sized for the tiny model's 256 ids, built in milliseconds: SmolLM2's three
    control tokens at 0-2 (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``), then one token a byte
    (no merges), ChatML without a default system turn. Bytes 0-2 are left out (no test sends them)."""
    from tokenizers import pre_tokenizers

    from flightcheck.impl.tokenizer import GGUFTokenizer

    dropped = {chr(256), chr(257), chr(258)}  # byte-level's characters for bytes 0, 1, 2
    alphabet = sorted(set(pre_tokenizers.ByteLevel.alphabet()) - dropped)
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + alphabet
    meta = {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt2", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.merges": [], "tokenizer.ggml.token_type": [3, 3, 3] + [1] * len(alphabet),
            "tokenizer.ggml.eos_token_id": 2, "tokenizer.chat_template": CHATML}
    return GGUFTokenizer.from_metadata(meta)


def make_chat_server(model, *, limits=None, **config):
    """The tiny model with :func:`byte_tokenizer`: chat and text prompts (random text out, no EOS)."""
    config = EngineConfig(**{"num_pages": 256, **config})
    engine = Engine(ModelRunner(model, num_pages=config.num_pages), byte_tokenizer(), config, model_name="tiny")
    return Server(engine, port=0, limits=limits).start()


@pytest.fixture()
def server(model):
    srv = make_server(model)
    yield srv
    srv.close()


def client(server, **kwargs):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=60, **kwargs)


def raw(server, method, path, body=None, headers=None, timeout=30):
    """(status, parsed JSON or text) of one plain HTTP request; ``body`` bytes are sent as they are."""
    conn = http.client.HTTPConnection(*server.address, timeout=timeout)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, data, {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    try:
        return response.status, json.loads(text)
    except json.JSONDecodeError:
        return response.status, text


def metrics(server):
    """The /metrics samples as {"name{labels}": value}."""
    status, text = raw(server, "GET", "/metrics")
    assert status == 200
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def wait_for(condition, what, timeout=60.0):
    """Polls ``condition()`` until true; the bound is generous (machines here are loaded), never tight."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def page_gauges(server):
    m = metrics(server)
    return {state: m[f'flightcheck_pages{{state="{state}"}}'] for state in ("free", "cached", "in_use")}


__all__ = ["PROMPT", "Limits", "byte_tokenizer", "client", "make_chat_server", "make_server", "metrics", "page_gauges",
           "raw", "re", "tiny_engine", "wait_for"]
