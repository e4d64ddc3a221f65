"""Server-side failures: every 5xx is logged with its path and message, an error mid-stream carries the
same body a whole reply does, and /metrics is a valid exposition (each family declared once)."""

import http.client
import json
import logging

from tests.server.conftest import PROMPT, raw


def failing_step(server):
    """Makes the engine's next forward pass raise (an engine bug, as the loop sees it), once."""
    engine = server.engine

    def step():
        del engine.step  # once: the instance attribute hid the method
        raise RuntimeError("boom in the forward pass")

    engine.step = step


def stream_events(server, body):
    """The ``data:`` payloads of one streamed reply, parsed (``[DONE]`` kept as the string)."""
    conn = http.client.HTTPConnection(*server.address, timeout=60)
    conn.request("POST", "/v1/completions", json.dumps({**body, "stream": True}), {"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    text = response.read().decode()
    conn.close()
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    return [p if p == "[DONE]" else json.loads(p) for p in payloads]


def test_engine_failures_are_logged_with_the_path_and_carry_the_same_body_whole_or_streamed(server, caplog):
    caplog.set_level(logging.WARNING, logger="flightcheck.server")
    body = {"model": "tiny", "prompt": PROMPT, "max_tokens": 3}

    failing_step(server)
    status, whole = raw(server, "POST", "/v1/completions", body)
    assert status == 500 and "boom in the forward pass" in whole["error"]["message"]

    failing_step(server)
    events = stream_events(server, {**body, "prompt": [5] * 40})
    streamed = events[-1]
    assert "[DONE]" not in events and "boom in the forward pass" in streamed["error"]["message"]
    # The same fields and kinds of values: code is null in both (it was the HTTP status, 500, when streamed).
    assert whole["error"]["code"] is None and streamed["error"]["code"] is None
    assert whole["error"]["type"] == streamed["error"]["type"] == "server_error"

    logged = [r.getMessage() for r in caplog.records
              if r.name == "flightcheck.server" and "/v1/completions" in r.getMessage()]
    assert len(logged) == 2, logged
    assert all("500" in line and "boom in the forward pass" in line for line in logged), logged
    assert raw(server, "POST", "/v1/completions", body)[0] == 200  # and the server keeps serving


def test_an_unexpected_error_in_a_handler_is_a_logged_500_in_openai_shape(server, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("submit exploded")

    server.loop.submit = broken  # in a completion's handler, caught there
    server.metrics.render = broken  # in /metrics, caught by the app's last-resort handler
    for path, body in (("/v1/completions", {"model": "tiny", "prompt": [1, 2], "max_tokens": 1}), ("/metrics", None)):
        status, reply = raw(server, "POST" if body else "GET", path, body)
        assert status == 500 and reply["error"]["type"] == "server_error", reply
        assert "submit exploded" in reply["error"]["message"]
        assert any(path in r.getMessage() and "submit exploded" in r.getMessage()
                   for r in caplog.records if r.name == "flightcheck.server"), path


def test_metrics_declare_every_family_once(server):
    from prometheus_client.parser import text_string_to_metric_families

    raw(server, "POST", "/v1/completions", {"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 2})
    status, text = raw(server, "GET", "/metrics")
    assert status == 200
    names = [family.name for family in text_string_to_metric_families(text)]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    declared = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(declared) == len(set(declared)), declared
    assert "flightcheck_engine_failures" in names and "flightcheck_engine_failed_requests" in names
