"""The connection limits uvicorn lacks: a deadline for a request's headers.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but a new connection that
sends nothing, or sends its headers a byte at a time, is kept open for ever (each one costs a socket
and a file descriptor; a few thousand of them exhaust the process). This subclass of uvicorn's h11
protocol arms a timer when a connection opens and again when a response completes; the timer is
cancelled when a request's headers are complete and closes the connection when it fires first.
The body's own deadline is the handlers' (:func:`flightcheck.impl.server.app.read_body`), since only
they know when they need it.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol


def with_header_deadline(seconds: float) -> type[H11Protocol]:
    """An h11 protocol class that closes any connection whose request headers take over ``seconds``."""

    class DeadlineH11Protocol(H11Protocol):
        header_timeout = seconds
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_header_timer()

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
