"""Blocking HTTP/1.1 over loopback sockets, for the server stage's option probes (:mod:`.option_probes`).

A probe of ``serve --body-timeout`` or ``--header-timeout`` must stall half-way through a request, one of
``--max-body-bytes`` must send a body in many small writes, one of ``--keep-alive`` must watch a socket
for the server to close it: each needs the socket itself, which neither ``http.client`` nor the
``openai`` client hands over. Every read here has a deadline, so a probe never waits for ever.

For example::

    >>> head(b"POST", "/v1/completions", {"Content-Length": "2"})
    b'POST /v1/completions HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: 2\\r\\n\\r\\n'
    >>> parse_reply(b'HTTP/1.1 413 Payload Too Large\\r\\ncontent-length: 2\\r\\n\\r\\n{}').status
    413
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

# The longest wait for a reply the server owes at once (generous: the machine may be loaded).
REPLY_TIMEOUT_S = 30.0


@dataclass
class Reply:
    """One HTTP response: its status, headers (lower-case names) and body (parsed JSON, else text)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None

    @property
    def error_code(self) -> str | None:
        """The ``error.code`` of an OpenAI-shaped error body, if it is one."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error.get("code") if isinstance(error, dict) else None


def connect(address: tuple[str, int], timeout: float = REPLY_TIMEOUT_S) -> socket.socket:
    """A TCP connection to ``address``, each write sent at once (no Nagle delay)."""
    sock = socket.create_connection(address, timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def head(method: bytes, path: str, headers: dict[str, str]) -> bytes:
    """A request's status line and headers, up to and with the blank line."""
    lines = [method + b" " + path.encode() + b" HTTP/1.1", b"Host: 127.0.0.1"]
    lines += [f"{k}: {v}".encode() for k, v in headers.items()]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def parse_reply(data: bytes) -> Reply:
    """The response whose bytes are ``data`` (a whole one: its headers and its body)."""
    top, _, body = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    text = body.decode("utf-8", "replace")
    try:
        parsed: Any = json.loads(text)
    except json.JSONDecodeError:
        parsed = text
    return Reply(int(parts[1]), headers, parsed)


def read_reply(sock: socket.socket, timeout: float = REPLY_TIMEOUT_S) -> Reply | None:
    """The next response on ``sock`` (a ``Content-Length`` body, or one read until the server closes);
    None when the server closed the connection without one, or sent none within ``timeout``."""
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        top, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = next((int(line.split(b":", 1)[1]) for line in top.split(b"\r\n")[1:]
                           if line.lower().startswith(b"content-length:")), None)
            if length is not None and len(body) >= length:
                return parse_reply(top + sep + body[:length])
        chunk = _recv(sock, deadline)
        if chunk is None:  # the deadline passed
            return None
        if not chunk:  # the server closed: what came is the reply, if any
            return parse_reply(data) if sep else None
        data += chunk


def _recv(sock: socket.socket, deadline: float) -> bytes | None:
    """Bytes from ``sock``: b"" when the server closed it (or reset it), None at the deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    sock.settimeout(left)
    try:
        return sock.recv(65536)
    except socket.timeout:
        return None
    except (ConnectionResetError, BrokenPipeError):
        return b""


def wait_closed(sock: socket.socket, timeout: float) -> float | None:
    """Seconds until the server closed ``sock`` (anything it sends meanwhile is read and dropped), or None
    when it is still open after ``timeout``."""
    started = time.monotonic()
    deadline = started + timeout
    while True:
        chunk = _recv(sock, deadline)
        if chunk is None:
            return None
        if not chunk:
            return time.monotonic() - started


def is_open(sock: socket.socket) -> bool:
    """Whether the server has not closed ``sock`` (nothing is waiting to be read and it is not at its end)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def exchange(address: tuple[str, int], method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None, timeout: float = REPLY_TIMEOUT_S) -> Reply:
    """One request on a connection of its own (closed after), ``body`` JSON unless it is bytes; raises
    ``TimeoutError`` when no reply came within ``timeout``."""
    data = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    fields = {"Content-Type": "application/json", "Content-Length": str(len(data)), "Connection": "close",
              **(headers or {})}
    with connect(address, timeout) as sock:
        sock.sendall(head(method.encode(), path, fields) + data)
        reply = read_reply(sock, timeout)
    if reply is None:
        raise TimeoutError(f"no reply to {method} {path} within {timeout:g} s")
    return reply


def send_chunked(sock: socket.socket, path: str, body: bytes, piece: int, headers: dict[str, str]) -> None:
    """A request whose body goes as ``Transfer-Encoding: chunked``, one write per ``piece`` bytes; a
    server that answers (and closes) before the end is no error here."""
    try:
        sock.sendall(head(b"POST", path, {**headers, "Transfer-Encoding": "chunked"}))
        for i in range(0, len(body), piece):
            part = body[i:i + piece]
            sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        sock.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass


__all__ = ["REPLY_TIMEOUT_S", "Reply", "connect", "exchange", "head", "is_open", "parse_reply", "read_reply",
           "send_chunked", "wait_closed"]
