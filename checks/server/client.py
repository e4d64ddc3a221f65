"""A raw HTTP/1.1 client on asyncio streams, for the server campaign's clients.

The OpenAI client cannot misbehave on purpose: it cannot close its socket after the second chunk, after
the response's headers or before the response, half-close it, stop reading for a while, or send a body
that is not JSON. This client speaks just enough HTTP/1.1 over loopback to do each of those, and records
what it saw: the status, the server-sent events of a stream (``data: {...}`` lines, ``[DONE]``), or a
whole JSON body. Every read has a deadline, so a client never waits for ever.

For example::

    >>> parse_sse(b'data: {"a": 1}\\n\\ndata: [DONE]\\n\\n')
    ([{'a': 1}, '[DONE]'], b'')
"""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from typing import Any


# The longest wait for the rest of a chunk whose size line has arrived (generous: a loaded machine).
CHUNK_TIMEOUT_S = 30.0


class ProtocolViolation(Exception):
    """The server sent something that is not HTTP/1.1 or not server-sent events as this client reads them."""


@dataclass
class Response:
    """What one exchange saw: the status and headers, the stream's events or the whole body, how it ended."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    events: list[Any] = field(default_factory=list)   # parsed ``data:`` payloads of a stream ("[DONE]" as text)
    body: Any = None                                   # a whole reply's JSON (or its text when not JSON)
    ended: str = "open"  # "done" ([DONE]), "error" (an error chunk), "eof" (closed by the server), "closed" (by us)

    @property
    def token_ids(self) -> list[int]:
        """The token ids the stream's chunks (or the whole reply's choice) carried, in order."""
        if self.body is not None and isinstance(self.body, dict):
            choices = self.body.get("choices") or []
            return list(choices[0].get("token_ids") or []) if choices else []
        out: list[int] = []
        for e in self.events:
            if isinstance(e, dict):
                for c in e.get("choices") or []:
                    out.extend(c.get("token_ids") or [])
        return out

    @property
    def error_chunk(self) -> dict | None:
        """The stream's error chunk, if it sent one."""
        return next((e for e in self.events if isinstance(e, dict) and "error" in e), None)

    @property
    def usage(self) -> dict | None:
        """The usage the reply carried (a whole reply's, or a stream's usage chunk)."""
        if isinstance(self.body, dict):
            return self.body.get("usage")
        return next((e["usage"] for e in self.events if isinstance(e, dict) and e.get("usage")), None)

    @property
    def extension(self) -> dict | None:
        """The ``flightcheck`` object of the last reply (request ID, role, timings), if any."""
        if isinstance(self.body, dict):
            return self.body.get("flightcheck")
        return next((e["flightcheck"] for e in self.events if isinstance(e, dict) and e.get("flightcheck")), None)


def request_bytes(path: str, body: bytes, host: str, *, content_length: int | None = None,
                  method: str = "POST") -> bytes:
    """A whole HTTP/1.1 request with ``Connection: close`` (``content_length`` may lie, to truncate a body)."""
    length = len(body) if content_length is None else content_length
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def parse_sse(buffer: bytes) -> tuple[list[Any], bytes]:
    """The complete events in ``buffer`` (JSON payloads, or the text ``[DONE]``) and what is left over."""
    events: list[Any] = []
    while b"\n\n" in buffer:
        block, buffer = buffer.split(b"\n\n", 1)
        for line in block.split(b"\n"):
            if not line.startswith(b"data: "):
                continue  # comments and other fields are not used by this server
            data = line[len(b"data: "):].decode()
            if data == "[DONE]":
                events.append("[DONE]")
                continue
            try:
                events.append(json.loads(data))
            except json.JSONDecodeError as error:
                raise ProtocolViolation(f"a stream event is not JSON: {data[:120]!r} ({error})") from None
    return events, buffer


class Connection:
    """One TCP connection to the server and the response read from it, piece by piece."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.response = Response()
        self._chunked = False
        self._remaining: int | None = None
        self._sse = b""
        self._body = b""

    @classmethod
    async def open(cls, address: tuple[str, int], timeout: float) -> "Connection":
        """Connects to ``address`` (within ``timeout`` seconds)."""
        reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), timeout)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        """Writes ``data`` and waits until it is handed to the kernel."""
        self.writer.write(data)
        await self.writer.drain()

    def half_close(self) -> None:
        """Shuts the sending side (a FIN to the server) and keeps reading."""
        if self.writer.can_write_eof():
            self.writer.write_eof()

    def close(self) -> None:
        """Closes the socket at once (a client going away); the response is marked closed if still open."""
        if self.response.ended == "open":
            self.response.ended = "closed"
        self.writer.close()

    async def read_head(self, timeout: float) -> None:
        """Reads the status line and the headers."""
        try:
            head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        except asyncio.IncompleteReadError as error:
            self.response.ended = "eof"
            if error.partial:
                raise ProtocolViolation(f"the connection closed inside the response's headers: {error.partial[:80]!r}")
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ProtocolViolation(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        self.response.status = int(parts[1])
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                self.response.headers[k.strip().lower()] = v.strip()
        self._chunked = self.response.headers.get("transfer-encoding", "").lower() == "chunked"
        length = self.response.headers.get("content-length")
        self._remaining = int(length) if length is not None and length.isdigit() else None

    @property
    def is_stream(self) -> bool:
        """Whether the response is server-sent events."""
        return self.response.headers.get("content-type", "").startswith("text/event-stream")

    async def _piece(self, timeout: float) -> bytes | None:
        """The next piece of the body (a chunk's data), or None at its end. ``timeout`` bounds the wait
        for the piece to start; a timeout then consumes nothing, so the caller may wait again."""
        if self._chunked:
            line = await asyncio.wait_for(self.reader.readuntil(b"\r\n"), timeout)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise ProtocolViolation(f"not a chunk size line: {line[:40]!r}") from None
            # Why a fixed bound here: the chunk's data follows its size line in the same write, and a
            # timeout inside it would lose the size already read.
            data = await asyncio.wait_for(self.reader.readexactly(size + 2), CHUNK_TIMEOUT_S)
            return None if size == 0 else data[:-2]
        if self._remaining is not None:
            if self._remaining == 0:
                return None
            data = await asyncio.wait_for(self.reader.read(self._remaining), timeout)
            if not data:
                raise asyncio.IncompleteReadError(b"", self._remaining)
            self._remaining -= len(data)
            return data
        data = await asyncio.wait_for(self.reader.read(65536), timeout)
        return data or None

    async def next_events(self, timeout: float) -> list[Any] | None:
        """The stream's next complete events (at least one), or None when the body ended. Raises
        ``asyncio.TimeoutError`` when nothing complete arrived within ``timeout`` (the events
        read so far are kept)."""
        while True:
            try:
                piece = await self._piece(timeout)
            except asyncio.IncompleteReadError:
                self.response.ended = "eof" if self.response.ended == "open" else self.response.ended
                return None
            if piece is None:
                if self.response.ended == "open":
                    self.response.ended = "eof"
                return None
            events, self._sse = parse_sse(self._sse + piece)
            if events:
                self.response.events.extend(events)
                for e in events:
                    if e == "[DONE]":
                        self.response.ended = "done"
                    elif isinstance(e, dict) and "error" in e and self.response.ended == "open":
                        self.response.ended = "error"
                return events

    async def read_whole(self, timeout: float) -> None:
        """Reads a whole (not streamed) body and parses it as JSON (or keeps its text)."""
        while True:
            try:
                piece = await self._piece(timeout)
            except asyncio.IncompleteReadError:
                break
            if piece is None:
                break
            self._body += piece
        self.response.ended = "done" if self.response.ended == "open" else self.response.ended
        text = self._body.decode("utf-8", "replace")
        try:
            self.response.body = json.loads(text)
        except json.JSONDecodeError:
            self.response.body = text


__all__ = ["Connection", "ProtocolViolation", "Response", "parse_sse", "request_bytes"]
