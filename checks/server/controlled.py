"""The server's concurrency under a controlled scheduler: every interleaving reproducible from its schedule.

:func:`run_schedule` runs a server program (:mod:`.program`) with nothing left to chance. The real
ASGI app of ``impl/server/`` (Starlette, the routes, the replies), the real engine loop
(:class:`~flightcheck.impl.server.loop.EngineLoop`, its queue, its delivery) and the real engine (the
tiny model) run in this thread, in the manner of Coyote or Loom:

- the event loop is a :class:`VirtualLoop`: its clock is virtual, and it runs only when the scheduler
  says ``tick`` (one pass over the callbacks that are ready, in asyncio's own order);
- the engine thread does not exist: the scheduler runs its turn in two halves, ``engine`` to drain the
  command queue and ``engine`` again for one step and its delivery, as the thread would, with any
  number of ticks between them (the thread runs beside the event loop);
- the clients speak ASGI directly, as uvicorn would for them (the same ``receive`` and ``send``
  semantics, a ``http.disconnect`` once gone, a send that waits while a slow reader's buffer is full),
  and each of their moves (send, read one message, leave) is a scheduler choice.

A chooser (:mod:`.schedule`) picks among the enabled actions at every point, so a seed, a list of
numbers from Hypothesis or a recorded schedule decides the whole run, and the same schedule gives the
same run. The oracle, checked as the run goes and at its end (no action left):

- ``disconnect_aborts``: once a client has gone away, the event loop has had nothing left to run and the
  engine has drained its commands twice (once to take the request in if it was still on its way, once
  for the abort), the request is no longer live: at most one engine step after its handler could know;
- ``stream_ends``: every client still reading has its reply ended ([DONE], an error chunk, or the whole
  body) when nothing can move any more;
- ``log_valid``: every event the engine emits is a step of the spec, checked online by the conform
  room's monitor (a departure is reported at the scheduler step that caused it);
- ``pages_return``: at the end every page is back in the pool and the engine's invariants hold;
- ``output_matches``, ``greedy_agrees``, ``no_5xx``, ``malformed_refused``: as in the socket campaign
  (:mod:`.harness`), on what each client read; an exception out of a handler is a ``no_5xx``.

For example::

    >>> from flightcheck.checks.server.program import random_program
    >>> from flightcheck.checks.server.schedule import RandomChooser
    >>> run = run_schedule(random_program(0), RandomChooser(1))
    >>> run.ok, run.schedule.actions[0].endswith(":send")
    (True, True)
"""

from __future__ import annotations

import asyncio
import heapq
import json
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from flightcheck.checks.server.client import ProtocolViolation, Response, parse_sse
from flightcheck.checks.server.harness import (
    Outcome, Violation, Watcher, _check_outputs, _ClientRun, decodes_match, make_engine,
)
from flightcheck.checks.server.program import TAG_BASE, Client, Program
from flightcheck.checks.server.schedule import Schedule
from flightcheck.spec.actions import CANCELS

MAX_STEPS = 20_000    # scheduler points in one run; a run that needs more is reported (it is not ending)
HIGH_WATER = 2_048    # bytes a client leaves unread before the server's send waits (a small socket buffer)
LOW_WATER = 512       # the send goes on once the client has read down to this
ROUNDS_TO_ABORT = 2   # quiet loop + engine drain rounds after a client left by which its request must be over


class VirtualLoop(asyncio.SelectorEventLoop):
    """An asyncio loop that runs one pass at a time, on a clock that moves only when told to.

    Why CPython's ``_ready`` and ``_scheduled`` are read: they are the loop's ready queue and timer heap,
    the only way to know, without running it, whether the loop has anything to do.
    """

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def time(self) -> float:
        """The virtual clock (timers and ``asyncio.timeout`` read it)."""
        return self.now

    def tick(self) -> None:
        """One pass: the callbacks ready now (and timers due), in asyncio's order, then back."""
        self.stop()
        self.run_forever()

    @property
    def has_ready(self) -> bool:
        """Whether a callback is ready to run."""
        return bool(self._ready)  # type: ignore[attr-defined]

    def next_timer(self) -> float | None:
        """When the earliest live timer is due (None: no timer)."""
        live = [h.when() for h in self._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        return min(live) if live else None

    def advance(self) -> None:
        """Moves the clock to the earliest live timer."""
        when = self.next_timer()
        if when is not None:
            self.now = max(self.now, when)
        heapq.heapify(self._scheduled)  # type: ignore[attr-defined]


_END = object()  # the last item of a reply, as the client reads it


class SimClient:
    """One client and its connection, as the ASGI app sees it (uvicorn's ``receive`` and ``send``)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        body = client.request_body()
        self.complete = not (client.kind == "malformed" and client.truncate)
        self.body = body if self.complete else body[: len(body) // 3]
        self.declared = len(body)
        self.sent = self.left = self.done = False
        self.body_taken = False
        self.disconnected = False
        self.response_complete = False
        self.unread: deque[Any] = deque()
        self.unread_bytes = 0
        self.response = Response()
        self.status_read = False
        self.is_stream = False
        self.chunks = 0
        self.raw = b""
        self.left_at: int | None = None
        self.crash: str | None = None
        self._message: asyncio.Event | None = None
        self._writable: asyncio.Event | None = None

    # --- the server's side (ASGI) ---------------------------------------------------------------
    def scope(self) -> dict[str, Any]:
        """The ASGI scope uvicorn builds for this request."""
        i = self.client.index
        return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 40000 + i), "scheme": "http",
                "method": "POST", "root_path": "", "path": "/v1/completions", "raw_path": b"/v1/completions",
                "query_string": b"", "state": {},
                "headers": [(b"host", b"flightcheck"), (b"content-type", b"application/json"),
                            (b"content-length", str(self.declared).encode()), (b"connection", b"close")]}

    async def receive(self) -> dict[str, Any]:
        """The body (in one message, or its first third when truncated), then ``http.disconnect`` once
        the client is gone or the response complete."""
        assert self._message is not None
        if not self.body_taken and not self.disconnected:
            self.body_taken = True
            return {"type": "http.request", "body": self.body, "more_body": not self.complete}
        while not self.disconnected and not self.response_complete:
            await self._message.wait()
            self._message.clear()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        """Queues a message for the client to read; waits while the client has too much unread."""
        assert self._writable is not None
        if not self._writable.is_set() and not self.disconnected:
            await self._writable.wait()
        if self.disconnected:
            return  # uvicorn drops what is sent to a connection that is gone
        kind = message["type"]
        if kind == "http.response.start":
            self.unread.append(("start", message["status"], dict(message.get("headers") or [])))
        elif kind == "http.response.body":
            chunk = bytes(message.get("body", b""))
            if chunk:
                self.unread.append(chunk)
                self.unread_bytes += len(chunk)
            if not message.get("more_body", False):
                self.unread.append(_END)
                self.response_complete = True
                self._message.set()  # type: ignore[union-attr]
        if self.unread_bytes > HIGH_WATER:
            self._writable.clear()

    async def serve(self, app: Any) -> None:
        """The app on this connection, as uvicorn's ``run_asgi`` runs it (a 500 if it raises first)."""
        try:
            await app(self.scope(), self.receive, self.send)
        except asyncio.CancelledError:
            raise  # the run is over (see ``_Run.close``)
        except BaseException as error:  # noqa: BLE001 - uvicorn logs it and answers 500 if it can
            self.crash = f"{type(error).__name__}: {error}"
            if not any(isinstance(m, tuple) for m in self.unread) and not self.disconnected:
                await self.send({"type": "http.response.start", "status": 500, "headers": []})
                await self.send({"type": "http.response.body", "body": b"Internal Server Error"})
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise

    # --- the client's side ----------------------------------------------------------------------
    def moves(self) -> list[str]:
        """What this client can do now, by its kind and behaviour (see :class:`~.program.Client`)."""
        c = self.client
        if not self.sent:
            return ["send"]
        if self.left or self.done:
            return []
        if c.kind == "malformed" and c.truncate:
            return ["leave"]
        due = {"disconnect-before-response": not self.status_read,
               "disconnect-after-headers": self.status_read,
               "disconnect-after": self.status_read and self.chunks >= c.chunks}.get(c.behaviour, False)
        if due and c.behaviour != "disconnect-before-response":
            return ["leave"]  # its script says go now: only when is the scheduler's
        out = ["read"] if self.unread else []
        return out + (["leave"] if due else [])

    def start(self, loop: VirtualLoop, app: Any) -> None:
        """``send``: the request goes out whole (the server's task starts)."""
        self.sent = True
        self._message, self._writable = asyncio.Event(), asyncio.Event()
        self._writable.set()
        loop.create_task(self.serve(app), name=f"client {self.client.index}")

    def read(self) -> None:
        """``read``: one message of the reply (its head, a chunk of its body, or its end)."""
        item = self.unread.popleft()
        r = self.response
        if isinstance(item, tuple):
            _, r.status, headers = item
            r.headers = {k.decode().lower(): v.decode() for k, v in headers.items()}
            self.is_stream = r.headers.get("content-type", "").startswith("text/event-stream")
            self.status_read = True
        elif item is _END:
            self.done = True
            if self.is_stream:
                events, _ = parse_sse(self.raw + b"\n\n") if self.raw.strip() else ([], b"")
                self._take(events)
                if r.ended == "open":
                    r.ended = "eof"
            else:
                try:
                    r.body = json.loads(self.raw) if self.raw else None
                except (json.JSONDecodeError, UnicodeDecodeError):
                    r.body = self.raw.decode(errors="replace")
                r.ended = "done"
        else:
            self.unread_bytes -= len(item)
            if self.is_stream:
                events, self.raw = parse_sse(self.raw + item)
                self._take(events)
            else:
                self.raw += item
        if self.unread_bytes <= LOW_WATER and self._writable is not None:
            self._writable.set()

    def _take(self, events: list[Any]) -> None:
        r = self.response
        for e in events:
            r.events.append(e)
            if e == "[DONE]":
                r.ended = "done"
            elif isinstance(e, dict) and "error" in e:
                r.ended = "error"
            elif isinstance(e, dict) and e.get("choices"):
                self.chunks += 1

    def leave(self, step: int) -> None:
        """``leave``: the connection closes (uvicorn marks the cycle disconnected and wakes ``receive``)."""
        self.left, self.left_at = True, step
        self.disconnected = True
        if self.response.ended == "open":
            self.response.ended = "closed"
        if self._message is not None:
            self._message.set()
        if self._writable is not None:
            self._writable.set()


@dataclass
class Interleaving(Outcome):
    """A controlled run's outcome: the violations, and the schedule that produced them."""

    schedule: Schedule | None = None
    events: list[str] = field(default_factory=list)  # the engine's actions, in order (for replay identity)
    choices: list[int] = field(default_factory=list)  # the index chosen at each point (``FromList`` replays it)

    def report(self) -> str:
        """The violations under the program, then the schedule (departures from order marked ``*``)."""
        text = super().report()
        if self.schedule is not None:
            text += (f"\n  schedule: {len(self.schedule.actions)} steps, {len(self.schedule.departures)} "
                     f"out of order: {self.schedule.describe()}")
        return text


@dataclass
class _Pending:
    """A client that went away while its request may be live: the rounds since (loop idle, engine drain)."""

    client: SimClient
    quiet: bool = False
    rounds: int = 0


class _Run:
    def __init__(self, program: Program, chooser: Callable[[list[str]], int], events_path: str,
                 monitor: bool) -> None:
        from flightcheck.impl.server import model_id_of
        from flightcheck.impl.server.app import Limits, OpenAIApp
        from flightcheck.impl.server.loop import EngineLoop
        from flightcheck.impl.server.metrics import ServerMetrics

        self.program, self.chooser = program, chooser
        self.engine = make_engine(program.config, events_path)
        self.watcher = Watcher(self.engine)
        self.engine.events.add_listener(self.watcher)
        self.actions_seen: list[str] = []
        self.engine.events.add_listener(lambda e: self.actions_seen.append(
            f"{e['action']}({e.get('request', '')})"))
        self.monitor = None
        if monitor:
            from flightcheck.checks.conform.monitor import Monitor

            self.monitor = Monitor(self.engine)
        self.loop = VirtualLoop()
        metrics = ServerMetrics(lambda: self.engine_loop.snapshot)
        self.engine_loop = EngineLoop(self.engine, history=None, on_finish=metrics.observe)
        self.app = OpenAIApp(self.engine_loop, metrics, Limits(), model_id_of(self.engine)).app
        self.clients = [SimClient(c) for c in program.clients]
        self.half = "drain"
        self.actions: list[str] = []
        self.departures: list[int] = []
        self.choices: list[int] = []
        self.violations: list[Violation] = []
        self.pending: list[_Pending] = []
        self.ended_at: dict[int, int] = {}  # request -> the step its terminal event came in
        self.conformance_seen = False

    def enabled(self) -> list[str]:
        out = ["tick"] if self.loop.has_ready else []
        if self.engine_loop.has_commands or (self.engine_loop.failure is None and self.engine.has_unfinished()):
            out.append("engine")
        for sim in self.clients:
            out += [f"c{sim.client.index}:{m}" for m in sim.moves()]
        if not out and self.loop.next_timer() is not None:
            out.append("clock")
        return out

    def perform(self, name: str, step: int) -> None:
        if name == "tick":
            self.loop.tick()
        elif name == "engine":
            if self.half == "drain":
                self.half = "step"
                self.engine_loop.drain()
                for p in self.pending:
                    if p.quiet:
                        p.rounds, p.quiet = p.rounds + 1, False
            else:
                self.half = "drain"
                self.engine_loop.advance()
        elif name == "clock":
            self.loop.advance()
        else:
            who, move = name.split(":")
            sim = self.clients[self._index(int(who[1:]))]
            if move == "send":
                sim.start(self.loop, self.app)
            elif move == "read":
                try:
                    sim.read()
                except ProtocolViolation as error:
                    sim.done = True
                    self.violations.append(Violation("no_5xx", sim.client.index, f"at step {step + 1}: {error}"))
            else:
                sim.leave(step)
                self.pending.append(_Pending(sim))

    def _index(self, index: int) -> int:
        return next(i for i, sim in enumerate(self.clients) if sim.client.index == index)

    def observe(self, step: int) -> None:
        """The checks made as the run goes: the monitor's verdict, and each departed client's abort."""
        for rid, seen in self.watcher.requests.items():
            if seen.end is not None and rid not in self.ended_at:
                self.ended_at[rid] = step
        if self.engine_loop.conformance and not self.conformance_seen:
            self.conformance_seen = True
            self.violations.append(Violation("log_valid", None, f"at step {step + 1} ({self.actions[-1]}): the "
                                             f"online monitor: {self.engine_loop.conformance}"))
        idle = not self.loop.has_ready
        for p in list(self.pending):
            rid, seen = self.watcher.of_tag(p.client.client.tag)
            if seen is not None and seen.end is not None:
                self.pending.remove(p)
                continue
            if idle:
                p.quiet = True
            if p.rounds >= ROUNDS_TO_ABORT:
                self.pending.remove(p)
                if seen is None:
                    continue  # its request never reached the engine: nothing to abort
                c = p.client.client
                self.violations.append(Violation(
                    "disconnect_aborts", c.index,
                    f"the client went away at step {p.client.left_at + 1}; since then the event loop ran out of "
                    f"work and the engine drained its commands {p.rounds} times (last at step {step + 1}), yet "
                    f"request {rid} ({seen.role}) is still live with {seen.tokens} token(s)"))

    def run(self, stop_early: bool, max_steps: int = MAX_STEPS) -> bool:
        """Runs until nothing can move (True), or until the first violation found on the way when
        ``stop_early`` (False: the end's checks are then left out)."""
        step = 0
        while step < max_steps:
            enabled = self.enabled()
            if not enabled:
                return True
            choice = self.chooser(enabled)
            name = enabled[choice]
            if choice:
                self.departures.append(step)
            self.choices.append(choice)
            self.actions.append(name)
            self.perform(name, step)
            self.observe(step)
            step += 1
            if stop_early and self.violations:
                return False
        if max_steps >= MAX_STEPS:
            self.violations.append(Violation("stream_ends", None, f"the run had not ended after {MAX_STEPS} steps "
                                             f"(still enabled: {', '.join(self.enabled()[:8])})"))
        return False

    def finish(self) -> tuple[list[Violation], dict[str, Any], dict[int, Any]]:
        out: list[Violation] = []
        stats: dict[str, Any] = {"steps": len(self.actions), "departures": len(self.departures)}
        last = len(self.actions)
        for sim in self.clients:
            c, r = sim.client, sim.response
            if sim.crash is not None:
                out.append(Violation("no_5xx", c.index, f"the handler raised {sim.crash}"))
            if sim.left or sim.done or not sim.sent:
                continue
            rid, seen = self.watcher.of_tag(c.tag)
            if seen is not None and seen.end is not None:
                what = "[DONE]" if c.kind == "stream" else "its reply"
                out.append(Violation("stream_ends", c.index, f"request {rid} ended ({seen.end}) at step "
                                     f"{self.ended_at.get(rid, 0) + 1}, yet when nothing could move any more "
                                     f"(step {last}) the client had not got {what} (status {r.status}, "
                                     f"{len(r.events)} events read)"))
            else:
                out.append(Violation("stream_ends", c.index, f"no reply when nothing could move any more (step "
                                     f"{last}; status {r.status}; request {rid} {seen.end if seen else 'never arrived'})"))
        live = {rid: r for rid, r in self.engine.scheduler.requests.items() if r.phase.is_live}
        for rid, r in sorted(live.items()):
            tag = r.sampling.seed
            out.append(Violation("nothing_left_live", tag - TAG_BASE if isinstance(tag, int) else None,
                                 f"request {rid} is still {r.phase.value} when the run ends"))
        pool = self.engine.scheduler.pool
        in_use = sum(1 for p in pool.pages if p.ref_count > 0)
        stats["pages"] = {"in_use": in_use, "free": pool.num_free, "cached": pool.num_evictable}
        if not live and (in_use or pool.num_free + pool.num_evictable != self.engine.config.num_pages):
            out.append(Violation("pages_return", None, f"at the end {in_use} page(s) are in use, {pool.num_free} "
                                 f"free and {pool.num_evictable} cached of {self.engine.config.num_pages}"))
        if self.engine_loop.failure is None:
            try:
                self.engine.check_invariants()
            except Exception as error:  # noqa: BLE001 - reported as the property it breaks
                out.append(Violation("pages_return", None, f"the engine's invariants fail at the end: {error}"))
        results = {rid: self.engine.result(rid) for rid in self.engine.scheduler.requests}
        runs = []
        for sim in self.clients:
            if sim.client.kind != "malformed" and not sim.sent:
                continue
            if not (sim.left or sim.done):
                sim.response.ended = "hung"  # its reply never ended: reported above, once
            run = _ClientRun(sim.client, sim.response)
            if sim.left:
                run.closed_at, run.live_at_close = float(sim.left_at or 0), False  # judged above, by rounds
            runs.append(run)
        out += _check_outputs(runs, self.watcher, results, stats)
        out += decodes_match(self.engine.events.events, results, self.watcher)
        stats["requests"] = len(self.watcher.requests)
        stats["aborted"] = sum(s.end in CANCELS for s in self.watcher.requests.values())
        stats["events"] = len(self.actions_seen)
        return out, stats, results

    def close(self) -> None:
        for sim in self.clients:  # every connection goes, so no handler waits on a full buffer
            if sim.sent and not sim.disconnected:
                sim.leave(len(self.actions))
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        for _ in range(1_000):  # cancelled handlers unwind (Starlette's task groups take a few passes)
            if not self.loop.has_ready:
                break
            self.loop.tick()
        self.loop.close()
        self.engine.events.close()


def run_schedule(program: Program, chooser: Callable[[list[str]], int], *, monitor: bool = True,
                 stop_early: bool = True, max_steps: int = MAX_STEPS, origin: str = "",
                 work_dir: str | Path | None = None) -> Interleaving:
    """Runs ``program`` under the controlled scheduler, ``chooser`` picking at every point (see the module).
    With ``stop_early`` a violation found on the way (an abort that did not come, the monitor's verdict)
    ends the run there: the schedule is then as long as the failure needs. A ``max_steps`` below
    :data:`MAX_STEPS` cuts the run short without a verdict on its end (the shrinker's tries)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="flightcheck-interleave-") as own:
        events_path = str(Path(work_dir or own) / f"server-seed{program.seed}.events.jsonl")
        run = _Run(program, chooser, events_path, monitor)
        try:
            if run.run(stop_early, max_steps):
                violations, stats, _ = run.finish()
            else:
                violations = []
                stats = {"steps": len(run.actions), "departures": len(run.departures), "stopped_early": True,
                         "requests": len(run.watcher.requests), "events": len(run.actions_seen)}
        finally:
            run.close()
    schedule = Schedule(program, run.actions, run.departures, origin or program.origin)
    outcome = Interleaving(program, run.violations + violations, stats, time.perf_counter() - started,
                           events_path if work_dir else None, schedule, run.actions_seen, run.choices)
    return outcome


def replay_schedule(schedule: Schedule, *, monitor: bool = True) -> Interleaving:
    """Runs a recorded schedule again (:class:`~.schedule.ScheduleDiverged` if it cannot be followed)."""
    from flightcheck.checks.server.schedule import Replayer

    return run_schedule(schedule.program, Replayer(schedule.actions), monitor=monitor, origin=schedule.origin)


__all__ = ["HIGH_WATER", "Interleaving", "MAX_STEPS", "ROUNDS_TO_ABORT", "SimClient", "VirtualLoop",
           "replay_schedule", "run_schedule"]
