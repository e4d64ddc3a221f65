"""The outside probe's HTTP side: an OpenAI-compatible endpoint over plain HTTP/1.1 on asyncio streams.

Only the URL the user gave is contacted: its ``/models`` and ``/completions`` (under the URL's path,
normally ``/v1``) and, at the server's root, ``/metrics`` and ``/info`` when they exist. Each exchange
has a deadline; every failure becomes a :class:`ProbeError` whose message is one line naming the URL and
what went wrong (the command prints it and exits 2).

A burst is sent so that its requests reach the server together: every connection is opened and every
request written but its last byte, then the last bytes go out in one loop. Streams are read with the
raw client of the server campaign (:class:`flightcheck.checks.server.client.Connection`); closing a
connection is how a stream is cancelled, and :func:`send_burst` closes all of its own in any case
(finished, failed, timed out or cancelled), so the probe never leaves a request running.

For example::

    >>> Endpoint.parse("http://127.0.0.1:8000/v1").root
    'http://127.0.0.1:8000'
    >>> parse_metrics("# HELP x\\nx_total 3.0\\ny{a=\\"b\\"} 2\\ny{a=\\"c\\"} 1\\n")
    {'x_total': 3.0, 'y': 3.0}
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from flightcheck.checks.server.client import Connection, ProtocolViolation

MAX_RESPONSE_BYTES = 8 << 20   # a reply (or /metrics page) beyond this is not what an OpenAI server sends


class ProbeError(Exception):
    """The server cannot be probed: unreachable, erroring, too slow, or not OpenAI-compatible (one line)."""


@dataclass(frozen=True)
class Endpoint:
    """Where the server is: ``base`` is the URL given (…/v1), ``root`` the same host without the path."""

    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str) -> "Endpoint":
        """The endpoint of ``http[s]://HOST[:PORT]/PATH``, or a ProbeError saying what is wrong with it."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ProbeError(f"--url must look like http://HOST:PORT/v1, got {url!r}")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ProbeError(f"--url has a bad port: {url!r}") from None
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def root(self) -> str:
        """``scheme://host:port``: where /metrics and /info live."""
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def base(self) -> str:
        """The URL as given (without a trailing slash)."""
        return self.root + self.path


@dataclass
class Exchange:
    """One streamed completion as the probe saw it (seconds from the moment its last byte was sent)."""

    index: int
    prompt_sent: int                       # tokens sent (token-id prompts) or 0 for text
    status: int | None = None
    ttft_s: float | None = None
    completion_s: float | None = None
    num_chunks: int = 0
    num_outputs: int = 0                   # chunks that carried output (text, token ids, chat content)
    usage: dict | None = None
    timings: dict | None = None            # llama.cpp's per-response timings (prompt_n, cache_n)
    extension: dict | None = None          # flightcheck's reply extension (prompt_tokens_computed, role)
    error: str | None = None
    done: bool = False
    first_token: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (the event left out)."""
        return {k: v for k, v in self.__dict__.items() if k != "first_token"}


async def _open(endpoint: Endpoint, timeout: float) -> Connection:
    context = ssl.create_default_context() if endpoint.scheme == "https" else None
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(endpoint.host, endpoint.port, ssl=context,
                                    server_hostname=endpoint.host if context else None), timeout)
    except asyncio.TimeoutError:
        raise ProbeError(f"{endpoint.root} did not accept a connection within {timeout:g} s") from None
    except OSError as error:
        # asyncio's own message ("Connect call failed (...)") hides the reason its errno names
        reason = os.strerror(error.errno) if error.errno else str(error) or type(error).__name__
        raise ProbeError(f"cannot reach {endpoint.root}: {reason.lower()}") from None
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Connection(reader, writer)


def _request(endpoint: Endpoint, method: str, path: str, body: dict | None) -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    head = (f"{method} {path} HTTP/1.1\r\nHost: {endpoint.host}:{endpoint.port}\r\n"
            f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer none\r\n"
            + (f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n" if body is not None else "")
            + "Connection: close\r\n\r\n")
    return head.encode() + data


def error_text(body: Any) -> str:
    """The message of an OpenAI-shaped error body, or the start of whatever came."""
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body))
        message = error.get("message") if isinstance(error, dict) else error
        return " ".join(str(message).split())[:200]
    return " ".join(str(body).split())[:200] or "(empty body)"


async def fetch(endpoint: Endpoint, path: str, *, timeout: float, body: dict | None = None,
                want_json: bool = True) -> tuple[int, Any]:
    """(status, JSON body or text) of one whole exchange with ``path`` under the server's root."""
    conn = await _open(endpoint, timeout)
    try:
        async with asyncio.timeout(timeout):
            await conn.send(_request(endpoint, "GET" if body is None else "POST", path, body))
            await conn.read_head(timeout)
            if conn.response.status is None:
                raise ProbeError(f"{endpoint.root}{path}: the server closed the connection without answering")
            await conn.read_whole(timeout)
    except asyncio.TimeoutError:
        raise ProbeError(f"{endpoint.root}{path} did not answer within {timeout:g} s") from None
    except (ProtocolViolation, asyncio.IncompleteReadError, ConnectionError) as error:
        raise ProbeError(f"{endpoint.root}{path} did not speak HTTP/1.1: {error}") from None
    finally:
        conn.close()
    result = conn.response.body
    if want_json and not isinstance(result, (dict, list)) and conn.response.status == 200:
        raise ProbeError(f"{endpoint.root}{path} answered 200 but not JSON: {error_text(result)!r}")
    return conn.response.status, result


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text as {metric name: value summed over its labels}; lines that do not parse are skipped."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name = head.split("{", 1)[0].strip()
        try:
            number = float(value)
        except ValueError:
            continue
        if name and math.isfinite(number):
            out[name] = out.get(name, 0.0) + number
    return out


async def scrape(endpoint: Endpoint, timeout: float) -> dict[str, float] | None:
    """The server's /metrics counters, or None when it has no Prometheus page."""
    try:
        status, text = await fetch(endpoint, "/metrics", timeout=timeout, want_json=False)
    except ProbeError:
        return None
    if status != 200 or not isinstance(text, str):
        return None
    samples = parse_metrics(text)
    return samples or None


def _first_token(chunk: dict, *, ends: bool = True) -> bool:
    """Whether a stream chunk carries output: text, token ids, a chat delta's content, or (``ends``) an end."""
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        if choice.get("text") or choice.get("token_ids") or delta.get("content") or (ends and choice.get("finish_reason")):
            return True
    return False


async def stream_completion(endpoint: Endpoint, body: dict, exchange: Exchange, *, timeout: float,
                            conn: Connection | None = None, sent_at: float | None = None) -> Exchange:
    """Streams one completion into ``exchange`` (opening a connection unless one with the request already
    written is given). Errors are recorded on ``exchange``, not raised, except cancellation."""
    start = time.perf_counter() if sent_at is None else sent_at
    try:
        async with asyncio.timeout(timeout):
            if conn is None:
                conn = await _open(endpoint, timeout)
                await conn.send(_request(endpoint, "POST", endpoint.path + "/completions", body))
                start = time.perf_counter()
            await conn.read_head(timeout)
            exchange.status = conn.response.status
            if exchange.status != 200 or not conn.is_stream:
                await conn.read_whole(timeout)
                what = (f"answered {exchange.status}" if exchange.status != 200
                        else "answered 200 without a server-sent event stream")
                exchange.error = f"POST {endpoint.path}/completions {what}: {error_text(conn.response.body)}"
                return exchange
            while True:
                events = await conn.next_events(timeout)
                if events is None:
                    break
                for event in events:
                    if event == "[DONE]":
                        continue
                    if not isinstance(event, dict):
                        continue
                    if "error" in event:
                        exchange.error = f"the stream ended with an error: {error_text(event)}"
                        continue
                    exchange.num_chunks += 1
                    exchange.num_outputs += _first_token(event, ends=False)
                    if exchange.ttft_s is None and _first_token(event):
                        exchange.ttft_s = time.perf_counter() - start
                        exchange.first_token.set()
                    if isinstance(event.get("usage"), dict):
                        exchange.usage = event["usage"]
                    if isinstance(event.get("timings"), dict):
                        exchange.timings = event["timings"]
                    if isinstance(event.get("flightcheck"), dict):
                        exchange.extension = event["flightcheck"]
            exchange.completion_s = time.perf_counter() - start
            if conn.response.ended not in ("done",) and exchange.error is None:
                exchange.error = "the stream ended without data: [DONE]"
    except asyncio.TimeoutError:
        exchange.error = f"no complete reply within {timeout:g} s"
    except ProbeError as error:
        exchange.error = str(error)
    except (ProtocolViolation, asyncio.IncompleteReadError, ConnectionError, OSError, UnicodeDecodeError) as error:
        exchange.error = f"the stream broke: {type(error).__name__}: {error}"
    finally:
        exchange.done = True
        exchange.first_token.set()  # a waiter for the first token never waits on a request that ended
        if conn is not None:
            conn.close()  # closing is cancelling: a server aborts a request whose client went away
    return exchange


async def send_burst(endpoint: Endpoint, bodies: list[dict], exchanges: list[Exchange], *, timeout: float
                     ) -> list[asyncio.Task]:
    """Starts one stream per body, the requests arriving together; returns their tasks (the caller awaits
    them and must cancel them on failure: :func:`settle`)."""
    conns: list[Connection] = []
    try:
        conns = list(await asyncio.gather(*(_open(endpoint, timeout) for _ in bodies)))
        payloads = [_request(endpoint, "POST", endpoint.path + "/completions", b) for b in bodies]
        for conn, data in zip(conns, payloads):
            await conn.send(data[:-1])
        for conn, data in zip(conns, payloads):
            conn.writer.write(data[-1:])
        sent = time.perf_counter()
        await asyncio.gather(*(c.writer.drain() for c in conns))
    except BaseException:
        for conn in conns:
            conn.close()
        raise
    return [asyncio.create_task(stream_completion(endpoint, b, e, timeout=timeout, conn=c, sent_at=sent))
            for b, e, c in zip(bodies, exchanges, conns)]


async def settle(tasks: list[asyncio.Task]) -> None:
    """Waits for the tasks; if this wait is cancelled or fails, cancels every one first (their
    connections close, so the server aborts the requests)."""
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


__all__ = ["Endpoint", "Exchange", "ProbeError", "error_text", "fetch", "parse_metrics", "scrape", "send_burst", "settle",
           "stream_completion"]
