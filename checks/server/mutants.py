"""Server bugs planted in-process (monkeypatches of ``impl/server/``), for showing that the campaign catches them.

The campaign runs the server in this process, so a patched function is what it serves. Each mutant is a
context manager that patches one function of the app or the engine loop and restores it on exit:

- ``stream-disconnect-not-aborted``: a streaming reply whose client went away is counted, but its
  request is not aborted (it runs to ``max_tokens`` for nobody): the bug the held-out suite planted;
- ``stream-left-open``: a stream whose request ended sends its last chunk but never ``[DONE]`` and
  never closes;
- ``abort-lost``: the engine loop drops every abort a handler asks for (``EngineLoop.abort_soon``), so
  neither a stream's nor a whole reply's disconnect reaches the engine;
- ``follower-abort-lost``: the engine loop drops the abort of a follower (a client of a flight that is
  not its leader): the abort lost in a race with the flight's release.
- ``abort-raced-release``: the abort is a check-then-act across threads: the handler reads the request's
  phase, and the engine thread aborts only if the phase is still that one, so an abort that lands just
  after a release (or an admission) moved the request on is dropped. Only some interleavings show it:
  the handler must notice the disconnect between the engine's drain and a step that moves the request.

For example::

    >>> sorted(SERVER_MUTANTS)
    ['abort-lost', 'abort-raced-release', 'follower-abort-lost', 'stream-disconnect-not-aborted', 'stream-left-open']
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def _patched(owner: Any, name: str, replacement: Any) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


def stream_disconnect_not_aborted() -> contextlib.AbstractContextManager:
    """``_Reply.close`` counts how a stream closed but never aborts a request whose client left."""
    from flightcheck.impl.server.app import _Reply

    def close(self: Any, how: str) -> None:
        if self.how is not None:
            return
        self.how = how
        self.app.metrics.streams.labels(how).inc()

    return _patched(_Reply, "close", close)


def stream_left_open() -> contextlib.AbstractContextManager:
    """``_Reply.events`` holds the stream open instead of sending ``[DONE]``."""
    from flightcheck.impl.server.app import _Reply

    original = _Reply.events

    async def events(self: Any, out: asyncio.Queue) -> Any:
        async for piece in original(self, out):
            if piece.startswith("data: [DONE]"):
                await asyncio.Event().wait()  # until the client gives up (cancelled then)
            yield piece

    return _patched(_Reply, "events", events)


def abort_lost() -> contextlib.AbstractContextManager:
    """``EngineLoop.abort_soon`` does nothing: every abort a handler asks for is lost."""
    from flightcheck.impl.server.loop import EngineLoop

    def abort_soon(self: Any, request_id: int) -> None:
        return None

    return _patched(EngineLoop, "abort_soon", abort_soon)


def _lossy_abort_soon(loses: Callable[[Any, int], Callable[[Any], bool]]) -> contextlib.AbstractContextManager:
    """``EngineLoop.abort_soon`` whose command, on the engine thread, drops the abort of a live request for
    which ``loses(loop, request_id)`` (asked on the handler's side) returns true."""
    from flightcheck.impl.errors import UnknownRequestError
    from flightcheck.impl.server.loop import EngineLoop, ServerError

    def abort_soon(self: Any, request_id: int) -> None:
        lost = loses(self, request_id)

        def abort(engine: Any) -> None:
            request = engine.scheduler.requests.get(request_id)
            if request is not None and lost(request):
                return  # lost
            try:
                engine.abort(request_id)
            except UnknownRequestError:
                pass

        try:
            self._put(abort, None)
        except ServerError:
            pass

    return _patched(EngineLoop, "abort_soon", abort_soon)


def follower_abort_lost() -> contextlib.AbstractContextManager:
    """The engine loop drops the abort of a request whose role is follower (an abort lost in the race with
    its flight's release: the client's disconnect is noticed, the abort never reaches the engine)."""
    return _lossy_abort_soon(lambda loop, request_id: lambda request: request.role == "follower")


def abort_raced_release() -> contextlib.AbstractContextManager:
    """``EngineLoop.abort_soon`` reads the request's phase on the handler's side; its command aborts only
    if the phase has not changed since (a stale check-then-act: a release in between loses the abort)."""

    def loses(loop: Any, request_id: int) -> Callable[[Any], bool]:
        record = loop.engine.scheduler.requests.get(request_id)
        seen = None if record is None else record.phase
        return lambda request: request.phase is not seen  # "it moved on since the handler looked"

    return _lossy_abort_soon(loses)


# name -> (a context manager factory, the property the campaign must report)
SERVER_MUTANTS = {
    "stream-disconnect-not-aborted": (stream_disconnect_not_aborted, "disconnect_aborts"),
    "stream-left-open": (stream_left_open, "stream_ends"),
    "abort-lost": (abort_lost, "disconnect_aborts"),
    "follower-abort-lost": (follower_abort_lost, "disconnect_aborts"),
    "abort-raced-release": (abort_raced_release, "disconnect_aborts"),
}

# Mutants only some interleavings show: the socket campaign finds them when the machine's timing happens
# to split a handler's look from the engine's drain, the controlled scheduler whenever its schedule does.
RACE_MUTANTS = frozenset({"abort-raced-release"})

__all__ = ["RACE_MUTANTS", "SERVER_MUTANTS", "abort_lost", "abort_raced_release", "follower_abort_lost", "stream_disconnect_not_aborted", "stream_left_open"]
