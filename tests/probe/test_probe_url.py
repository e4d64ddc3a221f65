"""`flightcheck probe --url`: flightcheck's own server read from outside, exactly, and servers that cannot
be probed refused with one line and exit 2.

The servers run in this process on 127.0.0.1 (a free port) over the tiny random-weight model. A test
barrier stands in for the internal probe's ``hold``: when a request reaches an idle engine, the engine
thread waits until no further request has been queued for a moment, so a burst the probe sent together
is admitted in one step however the loaded machine schedules uvicorn's thread (without it, a request of
an uncoordinated burst that arrives after the first one's forward pass is, correctly, a cache hit).
The probe itself only speaks HTTP.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.outside.client import ProbeError
from flightcheck.checks.outside.probe import Options
from flightcheck.checks.outside.run import expectation_met, probe_url
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.server import Server
from flightcheck.impl.tiny import TINY_ARGS, tiny_model

QUIET_S = 0.03      # a burst is complete once no request has been queued for this long
MAX_WAIT_S = 0.5    # the barrier never holds the engine longer than this


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False))


def serve(model, *, barrier=True, slow_s=0.0, **config):
    config = EngineConfig(**{"num_pages": 256, **config})
    runner = ModelRunner(model, num_pages=config.num_pages)
    engine = Engine(runner, config=config, model_name="tiny random Llama")
    server = Server(engine, port=0)
    if barrier:
        add = engine.add_request

        def add_after_burst(*args, **kwargs):
            if not engine.has_unfinished():  # the first of a burst: let the rest reach the queue
                commands, start, seen, last = server.loop._commands, time.monotonic(), -1, time.monotonic()
                while time.monotonic() - last < QUIET_S and time.monotonic() - start < MAX_WAIT_S:
                    if commands.qsize() != seen:
                        seen, last = commands.qsize(), time.monotonic()
                    time.sleep(0.002)
            return add(*args, **kwargs)

        engine.add_request = add_after_burst
    if slow_s:
        forward = runner.forward

        def slow_forward(chunks):
            time.sleep(slow_s)
            return forward(chunks)

        runner.forward = slow_forward
    return server.start()


def health(server):
    conn = http.client.HTTPConnection(*server.address, timeout=10)
    conn.request("GET", "/health")
    body = json.loads(conn.getresponse().read())
    conn.close()
    return body


def assert_nothing_live(server, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = health(server)
        if not body["live_requests"] and body["pages"]["in_use"] == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"requests left live after the probe: {health(server)}")


def shapes(report):
    return {s.shape: s for s in report.shapes}


OPTS = Options(repeats=2, seed=7)


def test_single_flight_reads_one_computation_per_shared_page(model):
    server = serve(model, coordination="single-flight")
    try:
        report = probe_url(server.url + "/v1", None, OPTS)
        assert_nothing_live(server)
    finally:
        server.close()
    got = shapes(report)
    for n in (2, 4, 8):
        shape = got[f"identical-{n}"]
        assert shape.per_repeat == [[1, 1, 1, 1]] * 2, shape.evidence
        assert shape.kind == "coalesces" and shape.exact
        assert shape.verdict == f"coalesces identical cold requests: the shared 64 tokens were prefilled once for {n} requests"
        for computed, cached in zip(shape.computed, shape.cached):  # one leader computes all 85, followers 5
            assert sorted(computed) == [5] * (n - 1) + [85] and sorted(cached) == [0] + [80] * (n - 1)
    # single-flight keys on the whole prompt: prompts that share only a prefix each compute it
    assert got["shared-prefix-8"].per_repeat == [[8, 8, 8, 8]] * 2
    assert got["shared-prefix-8"].verdict == "recomputes: 8 of 8 requests prefilled the shared 64 tokens"
    assert got["late-arrival"].kind == "recovered" and got["late-arrival"].control_cached == [80, 80]
    assert report.page_size == 16 and report.prompts == "token ids"
    assert any(s.startswith("/metrics counters") and "flightcheck_engine_prefill_tokens_total" in s for s in report.sources)
    assert expectation_met(report, "coalesce") and not expectation_met(report, "recompute")


def test_no_coordination_reads_eight_computations_per_shared_page(model):
    server = serve(model, coordination="none")
    try:
        report = probe_url(server.url + "/v1", None, OPTS)
        assert_nothing_live(server)
    finally:
        server.close()
    got = shapes(report)
    assert got["identical-8"].per_repeat == [[8, 8, 8, 8]] * 2
    assert got["identical-8"].computations_per_page == [8, 8, 8, 8]
    assert got["identical-8"].verdict == "recomputes: 8 of 8 requests prefilled the shared 64 tokens"
    assert got["identical-2"].computations_per_page == [2, 2, 2, 2]
    for inst in got["identical-8"].metrics_delta:  # the counters agree: 8 x 85 prompt tokens computed
        assert inst["flightcheck_engine_prefill_tokens_total"] == 8 * 85
    assert expectation_met(report, "recompute")


def test_prefix_coordination_coalesces_the_shared_prefix(model):
    server = serve(model, coordination="prefix")
    try:
        report = probe_url(server.url + "/v1", None, replace(OPTS, repeats=1))
    finally:
        server.close()
    shape = shapes(report)["shared-prefix-8"]
    assert shape.per_repeat == [[1, 1, 1, 1]], shape.evidence
    assert shape.verdict.startswith("coalesces prefix-sharing cold requests")


def run_cli(*args):
    result = CliRunner().invoke(app, ["probe", *map(str, args)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_command_json_report_and_expect(model, tmp_path):
    server = serve(model, coordination="single-flight")
    try:
        url = server.url + "/v1"
        ok = run_cli("--url", url, "--json", "--repeats", 1, "--expect", "coalesce", "--report", tmp_path / "r")
        assert ok.exit_code == 0, ok.output
        body = json.loads(ok.stdout)
        assert body["expectation_met"] is True
        assert {s["shape"]: s["computations_per_page"] for s in body["shapes"]}["identical-8"] == [1, 1, 1, 1]
        page = (tmp_path / "r" / "index.html").read_text()
        assert "data:image/png;base64," in page and "coalesces identical cold requests" in page
        assert json.loads((tmp_path / "r" / "probe.json").read_text())["model"] == "tiny"
        wrong = run_cli("--url", url, "--repeats", 1, "--expect", "recompute")
        assert wrong.exit_code == 1 and "--expect recompute: NOT met" in wrong.stdout
        assert_nothing_live(server)
    finally:
        server.close()


class _Stub:
    """A loopback HTTP server answering every request with one canned response (or never)."""

    def __init__(self, response: bytes | None) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.response = response
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.response is not None:
                conn.recv(65536)
                conn.sendall(self.response)
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


def _http(status: str, body: bytes, kind: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


@pytest.mark.parametrize("response, message", [
    (_http("404 Not Found", b'{"detail": "Not Found"}'), "answered 404: not an OpenAI-compatible endpoint"),
    (_http("500 Internal Server Error", b'{"error": {"message": "boom"}}'), "answered 500"),
    (_http("200 OK", b"<html>hello</html>", "text/html"), "answered 200 but not JSON"),
    (None, "did not answer within 1 s"),
])
def test_servers_that_cannot_be_probed_exit_2_with_one_line(response, message):
    stub = _Stub(response)
    try:
        result = run_cli("--url", stub.url, "--timeout", 1)
    finally:
        stub.close()
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("error:"), result.stderr


def test_a_port_nobody_listens_on_exits_2():
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    result = run_cli("--url", f"http://127.0.0.1:{port}/v1")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"error: cannot reach http://127.0.0.1:{port}: connection refused"]


def test_a_slow_server_is_left_with_no_request_running(model):
    # 0.4 s per forward pass: a request of 4 tokens takes over a second, the probe's limit is 1 s
    server = serve(model, barrier=False, slow_s=0.4, coordination="single-flight")
    try:
        with pytest.raises(ProbeError, match="no complete reply within 1 s"):
            probe_url(server.url + "/v1", None, Options(repeats=1, timeout_s=1.0))
        assert_nothing_live(server)  # the probe closed its streams: the server aborted them
        assert health(server)["status"] == "ok"
    finally:
        server.close()


def test_cancelled_probe_closes_its_streams(model):
    server = serve(model, barrier=False, slow_s=0.2, coordination="none")

    async def cancel_midway():
        from flightcheck.checks.outside.probe import run

        task = asyncio.create_task(run(server.url + "/v1", None, Options(repeats=1)))
        deadline = time.monotonic() + 20
        while not any(health(server)["live_requests"].values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        task.cancel()  # what Ctrl-C does to asyncio.run's main task
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(cancel_midway())
        assert_nothing_live(server)
    finally:
        server.close()
