"""The HTTP front end on 127.0.0.1 with a real client (http.client): concurrent identical requests
stream their tokens and meet in one flight; bad input is a 400 naming the problem; a client that
disconnects has its request aborted."""

import http.client
import json
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.sampling import SamplingParams
from flightcheck.impl.server import Server
from flightcheck.impl.tiny import TINY_ARGS, tiny_model

PROMPT = [int(t) for t in np.random.default_rng(3).integers(0, 256, size=100)]  # H = 6 shareable pages


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False))


@pytest.fixture()
def server(model):
    engine = Engine(ModelRunner(model, num_pages=256), config=EngineConfig(num_pages=256))
    srv = Server(engine, port=0).start()
    yield srv
    srv.close()


def post(server, path, body):
    conn = http.client.HTTPConnection(*server.address, timeout=30)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read().decode()
    conn.close()
    lines = [json.loads(line) for line in data.splitlines() if line]
    return response.status, lines


def test_concurrent_identical_requests_stream_and_share_one_prefill(server, model):
    reference = Engine(ModelRunner(model, num_pages=64), config=EngineConfig(num_pages=64, coordination="none",
                                                                             prefix_caching=False))
    expected = reference.generate([PROMPT], SamplingParams(max_tokens=10))[0].output_token_ids
    replies = [None] * 4

    def client(k):
        replies[k] = post(server, "/generate", {"token_ids": PROMPT, "max_tokens": 10})

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for status, lines in replies:
        assert status == 200
        assert "request_id" in lines[0] and lines[-1]["done"] and lines[-1]["finish_reason"] == "length"
        assert [line["token"] for line in lines[1:-1]] == expected
    assert sorted(lines[-1]["recovered_tokens"] for _, lines in replies) == [0, 96, 96, 96]
    conn = http.client.HTTPConnection(*server.address, timeout=10)
    conn.request("GET", "/stats")
    stats = json.loads(conn.getresponse().read())
    conn.request("GET", "/info")
    info = json.loads(conn.getresponse().read())
    conn.close()
    assert info["config"]["coordination"] == "single-flight" and info["num_pages"] == 256 and "BLAS" in info["blas"]
    assert stats["num_recovered_tokens"] == 288 and stats["num_prefill_tokens"] == 100 + 3 * 4


@pytest.mark.parametrize("body, message", [
    ({"token_ids": []}, "prompt is empty"),
    ({"token_ids": [1], "temperature": -2}, "sampling.temperature"),
    ({"token_ids": [1], "max_tokens": 0}, "sampling.max_tokens"),
    ({"prompt": "hi"}, "needs a tokenizer"),
    ({"token_ids": [1], "prompt": "x"}, "exactly one of"),
    ({"token_ids": [1], "temprature": 1}, "unknown field.*temprature"),
])
def test_bad_input_is_a_400_naming_the_problem(server, body, message):
    import re

    status, lines = post(server, "/generate", body)
    assert status == 400 and re.search(message, lines[0]["error"])
    assert server.loop.call(lambda e: len(e.scheduler.requests)) == 0  # nothing was enqueued


def test_unknown_abort_and_endpoint(server):
    status, lines = post(server, "/abort", {"request_id": 41})
    assert status == 404 and "unknown request ID 41" in lines[0]["error"]
    status, lines = post(server, "/nowhere", {})
    assert status == 404 and "no such endpoint" in lines[0]["error"]


def test_client_disconnect_aborts_its_request(server):
    conn = http.client.HTTPConnection(*server.address, timeout=30)
    conn.request("POST", "/generate", json.dumps({"token_ids": [5, 6, 7], "max_tokens": 1900}))
    response = conn.getresponse()
    request_id = json.loads(response.readline())["request_id"]
    assert "token" in json.loads(response.readline())  # streaming has begun
    conn.sock.shutdown(2)
    conn.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.loop.call(lambda e: e.phase(request_id)) == "aborted":
            break
        time.sleep(0.05)
    assert server.loop.call(lambda e: e.phase(request_id)) == "aborted"
    assert len(server.loop.call(lambda e: e.result(request_id).output_token_ids)) < 1900
