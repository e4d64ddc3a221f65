"""Probes of the serve options the HTTP side reads: the API key, the limits and timeouts, what is kept in
memory, the event log and the monitor. Each takes a started :class:`~.probe_server.ProbeServer`, reads
its option's value from ``server.options``, checks what the option says over real sockets, and returns
what it saw in a line; a server that does otherwise raises :class:`~.probe_server.ProbeFailed`.

A timeout is checked on both sides: the server acts after the option's seconds (not before 80% of
them, a server that cuts at once is wrong too) and before :func:`deadline` (well before the default,
so a server that ignores the option cannot pass by waiting out its own default).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from flightcheck.checks.server.probe_server import (
    BASELINE, PROMPT, WAIT_S, ProbeFailed, ProbeServer, expect, shown,
)
from flightcheck.checks.server.wire import connect, head, is_open, read_reply, send_chunked, wait_closed

JSON = {"Content-Type": "application/json"}
GIVE_WAY_S = 2.0  # the longest wait for an idle connection to be closed once a new one needs its place


def deadline(server: ProbeServer, option: str) -> float:
    """How long a probe waits for ``option``'s timeout to act: 3 s past it (a timer that late is not load, it
    is another timeout), and at most 60% of the default."""
    return min(server.options[option] + 3.0, 0.6 * BASELINE[option])


def _early(took: float, server: ProbeServer, option: str, what: str) -> None:
    limit = server.options[option]
    expect(took >= 0.8 * limit, f"{what} after {took:.2f} s, before the {limit:g} s of --{option.replace('_', '-')}")


# --- the API key -------------------------------------------------------------------------------------
def api_key(server: ProbeServer) -> str:
    """Every /v1 route: 401 without the key and with a wrong one, 200 with it; /health needs none."""
    key = server.options["api_key"]
    wrong = key[:-1] + chr(ord(key[-1]) ^ 1)  # as long as the key, one character off
    routes = [("GET", "/v1/models", None),
              ("POST", "/v1/completions", {"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 2}),
              ("POST", "/v1/chat/completions", {"model": "tiny", "max_tokens": 2,
                                                "messages": [{"role": "user", "content": "hi"}]})]
    for method, path, body in routes:
        for label, headers, want in (("no key", {}, 401), ("a wrong key", {"Authorization": f"Bearer {wrong}"}, 401),
                                     ("the key", {"Authorization": f"Bearer {key}"}, 200)):
            reply = server.request(method, path, body, headers)
            expect(reply.status == want, f"{method} {path} with {label}: {shown(reply)}, not {want}")
            expect(want != 401 or reply.error_code == "invalid_api_key",
                   f"{method} {path} with {label}: error code {reply.error_code!r}, not 'invalid_api_key'")
    health = server.request("GET", "/health")
    expect(health.status == 200, f"GET /health without a key: {shown(health)}, not 200 (it stays open)")
    return f"{len(routes)} routes: 401 without a key and with a wrong one, 200 with it; /health open"


# --- bodies and timeouts -----------------------------------------------------------------------------
def _body(size: int) -> bytes:
    """A valid completion request of exactly ``size`` bytes (JSON padded with spaces)."""
    base = json.dumps({"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 1}).encode()
    if size < len(base):
        raise ValueError(f"a body of {size} bytes cannot hold a request ({len(base)} bytes at least)")
    return base[:-1] + b" " * (size - len(base)) + b"}"


def max_body_bytes(server: ProbeServer) -> str:
    """A body of exactly the limit is served, one byte more is a 413, whether it comes in one write with
    its length declared or chunked in 64-byte writes (where only reading it can tell)."""
    limit = server.options["max_body_bytes"]
    for size, want in ((limit, 200), (limit + 1, 413)):
        body = _body(size)
        with connect(server.address) as sock:
            sock.sendall(head(b"POST", "/v1/completions", {**JSON, "Content-Length": str(size),
                                                           "Connection": "close"}) + body)
            whole = read_reply(sock)
        with connect(server.address) as sock:
            send_chunked(sock, "/v1/completions", body, 64, {**JSON, "Connection": "close"})
            chunked = read_reply(sock)
        for how, reply in (("in one write", whole), ("chunked in 64 B writes", chunked)):
            expect(reply is not None and reply.status == want, f"a {size} B body {how}: {shown(reply)}, not {want}")
            expect(want != 413 or reply.error_code == "body_too_large",
                   f"a {size} B body {how}: error code {reply.error_code!r}, not 'body_too_large'")
    return f"{limit} B served and {limit + 1} B refused (413), in one write and chunked in 64 B writes"


def body_timeout(server: ProbeServer) -> str:
    """Headers promising 100 bytes, then 10 of them and nothing more: a 408 once the body's time is up."""
    bound = deadline(server, "body_timeout")
    with connect(server.address) as sock:
        sock.sendall(head(b"POST", "/v1/completions", {**JSON, "Content-Length": "100"}) + b'{"model": ')
        started = time.monotonic()
        reply = read_reply(sock, bound)
        took = time.monotonic() - started
    expect(reply is not None and reply.status == 408 and reply.error_code == "body_timeout",
           f"a body stalled after 10 of 100 bytes: {shown(reply)} within {bound:g} s, not 408 (body_timeout)")
    _early(took, server, "body_timeout", "408")
    return f"a body stalled mid-way got its 408 after {took:.2f} s"


def header_timeout(server: ProbeServer) -> str:
    """A connection whose headers stop half-way, and one that sends nothing, are both closed."""
    bound = deadline(server, "header_timeout")
    partial, silent = connect(server.address), connect(server.address)
    started = time.monotonic()
    try:
        partial.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        first = wait_closed(partial, bound)
        second = wait_closed(silent, max(0.0, started + bound - time.monotonic()))
    finally:
        partial.close()
        silent.close()
    expect(first is not None, f"a connection whose headers stopped half-way is still open after {bound:g} s")
    expect(second is not None, f"a connection that sent nothing is still open after {bound:g} s")
    _early(first, server, "header_timeout", "unfinished headers closed")
    return f"unfinished headers closed after {first:.2f} s, a silent connection too"


def keep_alive(server: ProbeServer) -> str:
    """After a reply on a keep-alive connection, the idle connection is closed."""
    bound = deadline(server, "keep_alive")
    with connect(server.address) as sock:
        sock.sendall(head(b"GET", "/health", {}))
        reply = read_reply(sock)
        expect(reply is not None and reply.status == 200, f"GET /health: {shown(reply)}")
        expect(reply.headers.get("connection", "").lower() != "close", "the server closed a keep-alive reply at once")
        took = wait_closed(sock, bound)
    expect(took is not None, f"an idle keep-alive connection is still open after {bound:g} s")
    # Why half: the server's timer starts as it sends the reply, a little before it is read here.
    expect(took >= 0.5 * server.options["keep_alive"], f"an idle keep-alive connection closed after {took:.2f} s")
    return f"an idle keep-alive connection closed after {took:.2f} s"


def _give_way(server: ProbeServer, num_idle: int, what: str) -> str:
    """``num_idle`` idle connections opened one by one, then a request: it is served, and the first idle
    connection (idle longest) is the one closed for it."""
    state = server.server.uvicorn.server_state
    idle = []
    try:
        for i in range(num_idle):
            idle.append(connect(server.address))
            # Why wait: the server must have taken each in turn, so "idle longest" is the first.
            end = time.monotonic() + WAIT_S
            while len(state.connections) < i + 1 and time.monotonic() < end:
                time.sleep(0.005)
        reply = server.request("GET", "/health")
        expect(reply.status == 200, f"a new request at {what}: {shown(reply)}, not 200")
        took = wait_closed(idle[0], GIVE_WAY_S)
        expect(took is not None, f"at {what} the connection idle longest is still open {GIVE_WAY_S:g} s after a "
               "new request")
        still = [i for i, sock in enumerate(idle[1:], 1) if not is_open(sock)]
        expect(not still, f"at {what} idle connections {still} were closed too, not only the longest idle")
    finally:
        for sock in idle:
            sock.close()
    return f"at {what} a new request was served and the connection idle longest closed for it"


def max_connections(server: ProbeServer) -> str:
    """At the limit of open connections, the one idle longest gives way to a new one."""
    limit = server.options["max_connections"]
    return _give_way(server, limit - 1, f"{limit} open connections")


def max_connections_per_client(server: ProbeServer) -> str:
    """At one address's limit, its connection idle longest gives way to its new one."""
    limit = server.options["max_connections_per_client"]
    return _give_way(server, limit, f"{limit + 1} connections from one address")


def shutdown_timeout(server: ProbeServer) -> str:
    """At shutdown, a request still receiving its body is cut once the shutdown's time is up."""
    bound = deadline(server, "shutdown_timeout")
    tasks = server.server.uvicorn.server_state.tasks
    with connect(server.address) as sock:
        sock.sendall(head(b"POST", "/v1/completions", {**JSON, "Content-Length": "100"}) + b'{"model": ')
        end = time.monotonic() + WAIT_S
        while not tasks and time.monotonic() < end:  # its headers read: a reply is open
            time.sleep(0.005)
        quiet = _Quiet()
        logging.getLogger("uvicorn.error").addFilter(quiet)
        try:
            closer = threading.Thread(target=server.stop, daemon=True)
            closer.start()
            took = wait_closed(sock, bound)
            closer.join(60)
        finally:
            logging.getLogger("uvicorn.error").removeFilter(quiet)
    expect(took is not None, f"a reply still open at shutdown was not cut within {bound:g} s")
    _early(took, server, "shutdown_timeout", "a reply open at shutdown was cut")
    return f"a reply still open at shutdown was cut after {took:.2f} s"


class _Quiet(logging.Filter):
    """Drops uvicorn's report of the task it cancelled (the probe's own stalled request) and its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not ("timeout graceful shutdown exceeded" in text or "Exception in ASGI application" in text)


# --- chat ----------------------------------------------------------------------------------------------
def default_max_tokens(server: ProbeServer) -> str:
    """A chat naming no max_tokens generates that many tokens (the tiny model has no EOS to stop sooner)."""
    limit = server.options["default_max_tokens"]
    reply = server.request("POST", "/v1/chat/completions", {"model": "tiny", "messages": [
        {"role": "user", "content": "Tell me a long story."}]})
    expect(reply.status == 200, f"a chat without max_tokens: {shown(reply)}")
    usage, choice = reply.body.get("usage") or {}, (reply.body.get("choices") or [{}])[0]
    expect((usage.get("completion_tokens"), choice.get("finish_reason")) == (limit, "length"),
           f"a chat without max_tokens generated {usage.get('completion_tokens')} tokens "
           f"(finish {choice.get('finish_reason')!r}), not {limit} (finish 'length')")
    return f"a chat naming no max_tokens generated {limit} tokens, finish 'length'"


# --- what is kept --------------------------------------------------------------------------------------
def history(server: ProbeServer) -> str:
    """After more requests than the history, only the history's records are kept (/metrics)."""
    limit = server.options["history"]
    for i in range(limit + 3):
        reply = server.complete([i + 1] * 20, 1)
        expect(reply.status == 200, f"request {i}: {shown(reply)}")
    kept = server.settle('flightcheck_records_kept{kind="requests"}', limit)
    expect(kept == limit, f"after {limit + 3} requests {kept:g} records are kept, not {limit}")
    return f"after {limit + 3} requests {limit} records are kept"


def event_history(server: ProbeServer) -> str:
    """After more events than the event history, only that many are kept in memory (/metrics)."""
    limit = server.options["event_history"]
    for i in range(3):
        expect(server.complete([i + 1] * 20, 4).status == 200, f"request {i} failed")
    # 3 requests emit 21 events at least (arrive, admit, prefill, 3 decodes, finish).
    kept = server.settle('flightcheck_records_kept{kind="events"}', limit)
    expect(kept == limit, f"after 21 events or more, {kept:g} are kept in memory, not {limit}")
    return f"after 21 events or more, {limit} are kept in memory"


def events(server: ProbeServer) -> str:
    """The event log is written, with its policy header, and is a run of the spec (``flightcheck validate``)."""
    from flightcheck.checks.conform.eventlog import header_policy, read_events, validate_events

    server.burst([{"model": "tiny", "prompt": PROMPT, "max_tokens": 3}] * 3)
    server.complete(PROMPT[:40], 2)
    server.stop()  # the whole log, as a stopped server leaves it
    path = server.options["events"]
    try:
        evs, header = read_events(path)
    except (ValueError, OSError) as error:  # an InputError (checks/inputs) is a ValueError
        raise ProbeFailed(f"the event log {path} cannot be read: {error}") from None
    report = validate_events(evs, header_policy(header), num_pages=((header or {}).get("pool") or {}).get("num_pages"),
                             context=(header or {}).get("context"), source=path)
    expect(report.ok, f"flightcheck validate rejects the log at event {report.num_events}: {report.diagnosis}")
    arrivals = sum(e["action"] == "arrive" for e in evs)
    expect(arrivals == 4, f"the log holds {arrivals} arrivals, not the 4 requests served")
    return f"the log of 4 requests ({len(evs)} events) is a run of the spec"


def monitor(server: ProbeServer) -> str:
    """A burst conforms; then an event planted on the engine's log that no run of the spec has (a request
    that never arrived finishing) is caught: counted in /metrics, reported by /health."""
    server.burst([{"model": "tiny", "prompt": PROMPT, "max_tokens": 3}] * 3)
    failures = 'flightcheck_engine_failures_total{kind="conformance"}'
    expect(server.metric(failures) == 0, "the monitor rejected a plain burst")

    def plant(engine: Any) -> None:
        engine.events.emit("finish", request=10**6, reason="length", published=[])

    try:
        server.server.loop.call(plant)
    except Exception:  # the monitor's ConformanceError, out of the engine call that emitted it
        pass
    counted = server.settle(failures, 1)
    health = server.request("GET", "/health")
    expect(counted == 1, f"a planted departure from the spec was not counted ({failures} is {counted:g}): "
           "no monitor checks the events")
    expect(health.body.get("status") == "degraded" and health.body.get("conformance_failure"),
           f"/health after a departure says {health.body.get('status')!r}, not 'degraded' with the failure")
    return "a burst of 3 conformed; a planted departure was counted and /health says degraded"


__all__ = ["api_key", "body_timeout", "deadline", "default_max_tokens", "event_history", "events", "header_timeout",
           "history", "keep_alive", "max_body_bytes", "max_connections", "max_connections_per_client", "monitor",
           "shutdown_timeout"]
