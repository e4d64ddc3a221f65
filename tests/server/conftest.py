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


__all__ = ["PROMPT", "Limits", "client", "make_server", "metrics", "page_gauges", "raw", "re", "tiny_engine",
           "wait_for"]
