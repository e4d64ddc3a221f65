"""The engine on its own thread, and the bridge between it and the asyncio HTTP handlers.

MLX and the scheduler are used from one thread only: the engine thread. HTTP handlers (coroutines on
uvicorn's event loop) hand it commands through a thread-safe queue and receive their request's output
as :class:`Delivery` items on an ``asyncio.Queue``, filled from the engine thread with
``call_soon_threadsafe``. Between two forward passes the thread drains every queued command, so new
arrivals join the next batch and identical prompts that arrive together meet in one flight.

What this loop guarantees, each kept by a test in tests/server/:

- every request's stream ends: output is delivered after every command batch as well as after every
  step, so a request aborted while it is the only live one (nothing left to step) still gets its end;
- a client that goes away has its request aborted (``abort_soon``), so its pages return to the pool;
- at shutdown every live request (waiting for admission or running) ends with a clean error;
- an exception out of the engine (the online conformance monitor's ``ConformanceError``, or a bug) is
  logged, counted, and fails the request(s) it concerns; the loop keeps serving unless the engine's
  own invariants no longer hold, in which case every request fails and new ones are refused;
- finished requests are forgotten beyond ``history`` (the engine's record and the event list), so a
  long-running server's memory stays bounded.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flightcheck.impl.engine import Engine, Result
from flightcheck.impl.errors import EngineError, UnknownRequestError
from flightcheck.impl.sampling import SamplingParams

log = logging.getLogger("flightcheck.server")


@dataclass(frozen=True, slots=True)
class Delivery:
    """One item on a request's output queue: new ``tokens``, then a final ``result`` or ``error``."""

    tokens: tuple[int, ...] = ()
    result: Result | None = None
    error: "ServerError | None" = None

    @property
    def is_final(self) -> bool:
        return self.result is not None or self.error is not None


class ServerError(Exception):
    """A request the server cannot complete: HTTP ``status`` and an OpenAI-style error ``kind``."""

    def __init__(self, status: int, message: str, kind: str = "server_error", param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.param = status, message, kind, param


@dataclass(slots=True)
class _Sink:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue
    num_sent: int = 0

    def put(self, item: Delivery) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:
            pass  # the event loop is closed: nobody is listening any more


@dataclass(slots=True)
class Snapshot:
    """What /metrics and /health read without waiting for the engine thread (swapped atomically)."""

    counters: dict[str, int] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)
    num_requests_kept: int = 0
    num_events_kept: int = 0


class EngineLoop:
    """Runs ``engine`` on a thread named ``flightcheck-engine``; every other thread talks to it here.

    ``on_finish(result)`` is called on the engine thread for every terminated request (metrics);
    ``on_failure(kind, error)`` for every exception out of the engine.
    """

    def __init__(self, engine: Engine, *, history: int | None = 256,
                 on_finish: Callable[[Result], None] | None = None,
                 on_failure: Callable[[str, BaseException], None] | None = None) -> None:
        self.engine = engine
        self.history = history
        self.on_finish = on_finish or (lambda result: None)
        self.on_failure = on_failure or (lambda kind, error: None)
        self.snapshot = Snapshot()
        self.failure: str | None = None      # set when the engine can no longer be trusted
        self.conformance: str | None = None  # the first conformance failure, if any
        self._commands: queue.Queue = queue.Queue()
        self._sinks: dict[int, _Sink] = {}
        self._finished: deque[int] = deque()     # terminated and reported, oldest first
        self._reported: set[int] = set()
        self._closing = False
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flightcheck-engine", daemon=True)

    # --- other threads -------------------------------------------------------------------------
    def start(self) -> "EngineLoop":
        self._publish_snapshot()
        self._thread.start()
        return self

    @property
    def is_running(self) -> bool:
        return self._thread.is_alive() and not self._closing

    def call(self, fn: Callable[[Engine], Any], timeout: float | None = 60.0) -> Any:
        """Runs ``fn(engine)`` on the engine thread and returns its value (or raises its error)."""
        # Why ``fn`` itself: ``_execute`` puts its value (or error) on ``reply``, once. Putting it here as
        # well left a second item on a queue of one: after a caller that had timed out, the engine thread
        # blocked on it for ever.
        reply: queue.Queue = queue.Queue(maxsize=1)
        self._put(fn, reply)
        ok, value = reply.get(timeout=timeout)
        if not ok:
            raise value
        return value

    async def submit(self, token_ids: list[int], sampling: SamplingParams) -> tuple[int, asyncio.Queue]:
        """Enqueues a request (from a coroutine); returns its ID and the queue its output arrives on.
        Bad input raises the engine's ``EngineError`` with nothing enqueued."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        sink = _Sink(loop, asyncio.Queue())

        def add(engine: Engine) -> None:
            try:
                request_id = engine.add_request(token_ids, sampling)
            except EngineError as error:
                loop.call_soon_threadsafe(_settle, future, False, error)
                return
            self._sinks[request_id] = sink
            loop.call_soon_threadsafe(_settle, future, True, request_id)

        def refuse(error: BaseException) -> None:
            loop.call_soon_threadsafe(_settle, future, False, error)

        self._put(add, None, refuse)
        return await future, sink.queue

    def abort_soon(self, request_id: int) -> None:
        """Aborts a request if it is still live (a client went away); never blocks, never raises."""

        def abort(engine: Engine) -> None:
            # Why the sink stays: its final item (finish reason "abort") is delivered right after this
            # command, like any other end, whether or not anyone still reads it.
            try:
                engine.abort(request_id)
            except UnknownRequestError:
                pass  # it terminated meanwhile

        try:
            self._put(abort, None)
        except ServerError:
            pass  # shutting down: every live request is being aborted anyway

    def begin_close(self) -> None:
        """Starts the shutdown without waiting: every live request ends with a 503, new ones are refused."""
        if not self._closing:
            self._closing = True
            self._commands.put((self._shutdown, None, None))

    def close(self, timeout: float = 30.0) -> None:
        """Ends every live request with a 503 (shutting down), then stops the thread."""
        self.begin_close()
        if self._thread.is_alive():
            self._stopped.wait(timeout)
            self._thread.join(timeout)

    def _put(self, fn: Callable[[Engine], Any], reply: queue.Queue | None,
             refuse: Callable[[BaseException], None] | None = None) -> None:
        if self._closing or self._stopped.is_set():
            raise ServerError(503, "the server is shutting down", "server_error")
        if self.failure is not None:
            raise ServerError(503, f"the engine failed and serves no more requests: {self.failure}")
        self._commands.put((fn, reply, refuse))

    # --- the engine thread ---------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                # Why block only when idle: while requests run, commands are drained between steps so
                # that new arrivals join the next forward pass.
                is_busy = self.engine.has_unfinished() and self.failure is None
                try:
                    command = self._commands.get_nowait() if is_busy else self._commands.get(timeout=0.5)
                except queue.Empty:
                    command = None
                if command is not None:
                    self._execute(*command)
                    if self._stopped.is_set() or self.drain():
                        return
                self.advance()
        finally:
            self._stopped.set()
            self._drain_refused()

    # Why the turn is two public halves: the thread above runs them in turn, and the server's controlled
    # scheduler (checks/server/interleave.py) runs them itself, one at a time, between the event loop's
    # callbacks, so that every interleaving of handlers and engine the thread allows can be replayed.
    @property
    def has_commands(self) -> bool:
        """Whether a command (an arrival, an abort, a call) waits for the engine thread."""
        return not self._commands.empty()

    @property
    def num_commands(self) -> int:
        """How many commands wait for the engine thread (approximately, as ``queue.Queue.qsize``)."""
        # Why: the server stage's option probes hold the engine thread until a burst's arrivals have all
        # queued, so that they meet in one drain, as identical requests arriving together do.
        return self._commands.qsize()

    def drain(self) -> bool:
        """Executes every queued command on the calling thread (the engine's); returns whether one of
        them stopped the loop (the shutdown)."""
        ran = False
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                break
            ran = True
            self._execute(*command)
            if self._stopped.is_set():
                return True
        if ran:
            # Why here as well: a long prefill follows, and /health and /metrics must count the requests
            # that just arrived during it, not one forward pass late.
            self._publish_snapshot()
        return False

    def advance(self) -> None:
        """One engine step when a request is unfinished (and the engine is trusted), then every
        request's new output is delivered and the snapshot published."""
        if self.failure is None and self.engine.has_unfinished():
            try:
                self.engine.step()
            except Exception as error:  # the monitor's ConformanceError, or a bug
                self._engine_failed(error)
        self._deliver()
        self._publish_snapshot()

    def _execute(self, fn: Callable[[Engine], Any], reply: queue.Queue | None,
                 refuse: Callable[[BaseException], None] | None = None) -> None:
        try:
            value = fn(self.engine)
        except Exception as error:
            if not isinstance(error, EngineError):
                self._engine_failed(error)
            if reply is not None:
                reply.put((False, error))
            elif refuse is not None:
                refuse(error)
            return
        finally:
            self._deliver()  # an abort of the only live request ends its stream here
        if reply is not None:
            reply.put((True, value))

    def _deliver(self) -> None:
        requests = self.engine.scheduler.requests
        for request_id, sink in list(self._sinks.items()):
            request = requests[request_id]
            tokens = request.output_token_ids
            if request.finish_reason == "eos":
                tokens = tokens[:-1]
            new = tuple(tokens[sink.num_sent:])
            sink.num_sent = len(tokens)
            if not request.phase.is_live:
                # Why one item: a stop string is found in the step of its last token, and the reply must
                # see the end with those tokens, or it would stream text the stop string cuts off.
                del self._sinks[request_id]
                sink.put(Delivery(tokens=new, result=self.engine.result(request_id)))
            elif new:
                sink.put(Delivery(tokens=new))
        self._collect_finished()

    def _collect_finished(self) -> None:
        """Reports every newly terminated request once, and forgets the oldest beyond ``history``."""
        for request_id, request in list(self.engine.scheduler.requests.items()):
            if request.phase.is_live or request_id in self._reported:
                continue
            self._reported.add(request_id)
            self._finished.append(request_id)
            try:
                self.on_finish(self.engine.result(request_id))
            except Exception:  # metrics must never take the engine down
                log.exception("on_finish failed for request %d", request_id)
        while self.history is not None and len(self._finished) > self.history:
            old = self._finished.popleft()
            self._reported.discard(old)
            self.engine.forget(old)

    def _engine_failed(self, error: BaseException) -> None:
        diagnosis = getattr(error, "diagnosis", None)
        kind = "conformance" if diagnosis is not None else "internal"
        summary = _first_line(error)
        log.error("engine %s failure: %s", kind, error, exc_info=diagnosis is None)
        self.on_failure(kind, error)
        affected = _affected_requests(diagnosis, self.engine)
        if kind == "conformance":
            self.conformance = self.conformance or summary
            message = (f"the online monitor found the engine departing from the spec; "
                       f"this request was failed: {summary}")
        else:
            message = f"internal engine error: {summary}"
        try:
            self.engine.check_invariants()
        except Exception as broken:
            self.failure = f"{summary} (and then: {_first_line(broken)})"
            affected = set(self._sinks)
        for request_id in affected:
            sink = self._sinks.pop(request_id, None)
            if sink is not None:
                sink.put(Delivery(error=ServerError(500, message)))
            if self.failure is None:
                try:
                    self.engine.abort(request_id)
                except Exception:
                    pass  # already terminated, or the abort fails as well: the request is failed anyway

    def _shutdown(self, engine: Engine) -> None:
        error = ServerError(503, "the server is shutting down; the request was not completed")
        for request_id, sink in list(self._sinks.items()):
            sink.put(Delivery(error=error))
            del self._sinks[request_id]
            try:
                engine.abort(request_id)
            except Exception:
                pass  # terminated already, or the engine failed earlier
        self._stopped.set()

    def _drain_refused(self) -> None:
        error = ServerError(503, "the server is shutting down", "server_error")
        while True:
            try:
                fn, reply, refuse = self._commands.get_nowait()
            except queue.Empty:
                return
            if reply is not None:
                reply.put((False, error))
            elif refuse is not None:
                refuse(error)

    def _publish_snapshot(self) -> None:
        engine = self.engine
        pool = engine.scheduler.pool
        num_in_use = sum(1 for page in pool.pages if page.ref_count > 0)
        num_cached = pool.num_evictable
        phases: dict[str, int] = {}
        for request in engine.scheduler.requests.values():
            if request.phase.is_live:
                phases[request.phase.value] = phases.get(request.phase.value, 0) + 1
        self.snapshot = Snapshot(
            counters=engine.counters,
            pages={"free": pool.num_free, "cached": num_cached, "in_use": num_in_use},
            phases=phases, num_requests_kept=len(engine.scheduler.requests),
            num_events_kept=len(engine.events.events))


def _settle(future: asyncio.Future, ok: bool, value: Any) -> None:
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _affected_requests(diagnosis: Any, engine: Engine) -> set[int]:
    """The requests a conformance diagnosis names (its event's request, a release's leader and
    followers); every live request when it names none or for any other error."""
    event = getattr(diagnosis, "event", None) or {}
    named = {event[k] for k in ("request", "leader") if isinstance(event.get(k), int)}
    named.update(r for r in event.get("followers") or () if isinstance(r, int))
    if named:
        return named
    return {rid for rid, r in engine.scheduler.requests.items() if r.phase.is_live}
