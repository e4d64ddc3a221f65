"""The connection limits uvicorn lacks: a deadline for a request's headers, idle connections that give
way to new ones at capacity, and a cap on one client's connections.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but a new connection that
sends nothing, or sends its headers a byte at a time, is kept open for ever (each one costs a socket
and a file descriptor; a few thousand of them exhaust the process). This subclass of uvicorn's h11
protocol arms a timer when a connection opens and again when a response completes; the timer is
cancelled when a request's headers are complete and closes the connection when it fires first.
The body's own deadline is the handlers' (:func:`flightcheck.impl.server.app.read_body`), since only
they know when they need it.

uvicorn's ``limit_concurrency`` counts every open connection, idle or not: 256 sockets that send
nothing made every new request a 503 until their deadline, and reopening them kept the server
unavailable. Here a connection is *idle* while its header timer runs (open with no request, or
between requests); when a new connection arrives at the limit, the idle connection that has waited
longest is closed to make room, so capacity goes to clients with requests. And one client address may
hold at most ``per_client`` connections: beyond that its idle ones give way first, and a new one is
refused with a 503 when all of its others are busy (nginx's ``limit_conn`` does the same).
"""

from __future__ import annotations

import asyncio
import json
import logging

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("flightcheck.server")


def _refusal(message: str) -> bytes:
    body = json.dumps({"error": {"message": message, "type": "server_error", "param": None,
                                 "code": "too_many_connections"}}).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def with_header_deadline(seconds: float, per_client: int | None = None) -> type[H11Protocol]:
    """An h11 protocol class that closes any connection whose request headers take over ``seconds``,
    makes idle connections give way at ``limit_concurrency``, and caps one client's connections at
    ``per_client`` (None: no cap)."""

    class DeadlineH11Protocol(H11Protocol):
        header_timeout = seconds
        _header_timer: asyncio.TimerHandle | None = None
        _idle_since = 0.0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_header_timer()
            host = self.client[0] if self.client else None
            if per_client is not None and host is not None:
                mine = [c for c in self.connections if c is not self and getattr(c, "client", None)
                        and c.client[0] == host]
                if len(mine) >= per_client and not self._make_room(mine):
                    # Why a reply before the request: the client learns why, and the socket goes at once.
                    log.warning("refused a connection from %s: %d open, the limit per client is %d",
                                host, len(mine), per_client)
                    transport.write(_refusal(f"too many connections from {host}: at most {per_client} per "
                                             "client, and all of them are busy"))
                    self._cancel_header_timer()
                    transport.close()
                    return
            limit = self.limit_concurrency
            if limit is not None and len(self.connections) > limit - 1:
                self._make_room([c for c in self.connections if c is not self])

        def _make_room(self, among: list) -> bool:
            """Closes the connection of ``among`` that has been idle longest; whether there was one."""
            idle = [c for c in among if getattr(c, "_header_timer", None) is not None
                    and not c.transport.is_closing()]
            if not idle:
                return False
            oldest = min(idle, key=lambda c: c._idle_since)
            oldest._cancel_header_timer()
            oldest.transport.close()
            return True

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:  # a request's headers arrived: the handler owns the time now
                self._cancel_header_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_header_timer()  # the next request on this connection gets the same deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_timer()
            super().connection_lost(exc)

        def _arm_header_timer(self) -> None:
            self._cancel_header_timer()
            self._idle_since = self.loop.time()
            self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

    return DeadlineH11Protocol
