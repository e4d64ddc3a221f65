"""One server program run for real, and its oracle.

:func:`run_program` starts the real server in this process (the ASGI app of ``impl/server/`` served by
uvicorn on 127.0.0.1, a free port, its engine loop on its own thread, a tiny-model engine writing its
event log to a file), runs the program's clients on an asyncio loop of their own (raw sockets: see
:mod:`.client`), waits for the server to be idle, and checks:

- ``disconnect_aborts``: a client that went away had its request aborted promptly: the request
  produced at most :data:`TOKENS_AFTER_DISCONNECT` tokens after the client closed (or had ended before);
- ``stream_ends``: a stream read to the end ends with ``[DONE]`` (or an error chunk) once its request
  has terminated: not later than :data:`END_GRACE_S` after, and never by the server closing it silently;
- ``output_matches``: what a client read (token ids, finish reason, usage, the request ID) is what the
  engine produced for its request, and the event log's decode tokens are that output;
- ``greedy_agrees``: greedy requests with the same prompt produce the same tokens (one a prefix of the other);
- ``nothing_left_live``: once every client is done, no request is live (none is left running for nobody);
- ``pages_return``: when the server is idle every page is back in the pool (free or cached), the
  engine's invariants hold, and ``/health`` says so;
- ``log_valid``: the server's event log is a run of the spec (the validation of ``flightcheck validate``);
- ``no_5xx``: a well-formed request gets a 200 and, streamed or whole, no error;
- ``malformed_refused``: a malformed body gets a 4xx in OpenAI's error shape, and nothing reaches the engine.

Every bound on time is generous (the machine may be shared and loaded); the oracle counts tokens, not
milliseconds, wherever it can.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from flightcheck.checks.server.client import Connection, ProtocolViolation, Response, request_bytes
from flightcheck.checks.server.program import TAG_BASE, Client, Program
from flightcheck.spec.actions import CANCELS, COMPLETIONS, PROMPT_PASSES, SUBMISSIONS, TERMINATIONS, TOKEN_PASSES

# Tokens a request may still produce after its client closed the connection: the disconnect crosses
# uvicorn's event loop, Starlette's cancellation and the engine loop's command queue while the engine
# keeps stepping. A few steps' worth, generous for a loaded machine; a missed abort runs 100+ on.
TOKENS_AFTER_DISCONNECT = 32
END_GRACE_S = 5.0          # a stream still open this long after its request terminated was left open
POLL_S = 0.25              # how often a waiting client looks at its request
HEAD_TIMEOUT_S = 30.0      # the longest wait for a response's headers
IDLE_TIMEOUT_S = 15.0      # the longest wait for the server to be idle once every client is done
PROGRAM_TIMEOUT_S = 60.0   # the longest a program's clients may take in all

PROPERTIES = ("disconnect_aborts", "stream_ends", "output_matches", "greedy_agrees", "nothing_left_live",
              "pages_return", "log_valid", "no_5xx", "malformed_refused")


@dataclass(frozen=True)
class Violation:
    """A property that failed: which, for which client (None: the server as a whole), and what happened."""

    property: str
    client: int | None
    message: str

    def describe(self, program: Program) -> str:
        """``property: message (client 3 (stream, ...))``."""
        who = next((c.describe() for c in program.clients if c.index == self.client), None)
        return f"{self.property}: {self.message}" + (f" [{who}]" if who else "")


@dataclass
class Outcome:
    """What a program's run found: its violations (none: it passed), counts, and the event log's path."""

    program: Program
    violations: list[Violation]
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    events_path: str | None = None

    @property
    def ok(self) -> bool:
        """Whether every property held."""
        return not self.violations

    @property
    def properties(self) -> list[str]:
        """The properties that failed, in the order of :data:`PROPERTIES`."""
        failed = {v.property for v in self.violations}
        return [p for p in PROPERTIES if p in failed]

    def report(self) -> str:
        """Every violation, a line each, under the program's origin and summary."""
        lines = [f"server program ({self.program.origin}): {self.program.summary()}"]
        lines += ["  " + v.describe(self.program) for v in self.violations]
        return "\n".join(lines)


@dataclass
class _Seen:
    """What the event log told about one request, as it happened (written on the engine thread)."""

    tag: int | None
    role: str = "?"
    tokens: int = 0
    end: str | None = None          # "finish:length", "abort", "fail"
    ended_at: float | None = None   # time.monotonic() of the terminal event


class Watcher:
    """An event-log listener: per request its client's tag, tokens so far and how and when it ended."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.requests: dict[int, _Seen] = {}
        self.by_tag: dict[int, int] = {}
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        action, rid = event["action"], event.get("request")
        with self.lock:
            if action in SUBMISSIONS:
                record = self.engine.scheduler.requests.get(rid)
                tag = getattr(getattr(record, "sampling", None), "seed", None)
                self.requests[rid] = _Seen(tag, str(event.get("role")))
                if tag is not None:
                    self.by_tag[tag] = rid
                return
            seen = self.requests.get(rid) if isinstance(rid, int) else None
            if seen is None:
                return
            if action in TOKEN_PASSES or (action in PROMPT_PASSES and event.get("first_token")):
                seen.tokens += 1
            elif action in TERMINATIONS and seen.end is None:
                seen.end = f"finish:{event.get('reason')}" if action in COMPLETIONS else action
                seen.ended_at = time.monotonic()

    def of_tag(self, tag: int) -> tuple[int | None, _Seen | None]:
        """The request (ID and a copy of what was seen) of a client's tag, if it arrived."""
        with self.lock:
            rid = self.by_tag.get(tag)
            seen = self.requests.get(rid) if rid is not None else None
            return rid, (replace(seen) if seen is not None else None)


@dataclass
class _ClientRun:
    """One client's run: its response, when it closed (went away) and its request's tokens then."""

    client: Client
    response: Response = field(default_factory=Response)
    closed_at: float | None = None
    tokens_at_close: int = 0
    live_at_close: bool = False
    problems: list[Violation] = field(default_factory=list)


_MODEL: Any = None


def tiny_model() -> Any:
    """The tiny model with untied embeddings (its outputs vary, so a lost or repeated chunk shows), built once."""
    global _MODEL
    if _MODEL is None:
        from flightcheck.impl.tiny import TINY_ARGS, tiny_model as build

        _MODEL = build(seed=0, args=replace(TINY_ARGS, tie_word_embeddings=False))
    return _MODEL


def make_engine(config: dict[str, Any], events_path: str) -> Any:
    """A tiny-model engine under ``config`` writing its event log to ``events_path``."""
    from flightcheck.impl.config import EngineConfig
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.runner import ModelRunner

    cfg = EngineConfig(**config)
    return Engine(ModelRunner(tiny_model(), num_pages=cfg.num_pages), config=cfg, event_log_path=events_path,
                  model_name="tiny random Llama (server campaign)")


def run_program(program: Program, *, work_dir: str | Path | None = None) -> Outcome:
    """Runs ``program`` against a fresh in-process server and checks every property (see the module)."""
    from flightcheck.impl.server import Server

    started = time.perf_counter()
    own_dir = None
    if work_dir is None:
        own_dir = tempfile.TemporaryDirectory(prefix="flightcheck-server-")
        work_dir = own_dir.name
    events_path = str(Path(work_dir) / f"server-seed{program.seed}.events.jsonl")
    engine = make_engine(program.config, events_path)
    watcher = Watcher(engine)
    engine.events.add_listener(watcher)
    server = Server(engine, port=0, history=None).start()
    violations: list[Violation] = []
    stats: dict[str, Any] = {}
    results: dict[int, Any] = {}
    try:
        runs = asyncio.run(_run_clients(program, server, watcher))
        for run in runs:
            violations += run.problems
        violations += _check_idle(server, watcher, program, stats)
        results = _results(server)
        violations += _check_outputs(runs, watcher, results, stats)
    finally:
        server.close()
        engine.events.close()
    violations += _check_log(events_path, results, watcher, stats)
    stats["requests"] = len(watcher.requests)
    stats["aborted"] = sum(s.end in CANCELS for s in watcher.requests.values())
    outcome = Outcome(program, violations, stats, time.perf_counter() - started, events_path)
    if own_dir is not None:
        own_dir.cleanup()
        outcome.events_path = None
    return outcome


# --- the clients -------------------------------------------------------------------------------------
async def _run_clients(program: Program, server: Any, watcher: Watcher) -> list[_ClientRun]:
    runs = [_ClientRun(c) for c in program.clients]
    t0 = time.monotonic()
    tasks = [asyncio.ensure_future(_client(run, server, watcher, t0)) for run in runs]
    done, pending = await asyncio.wait(tasks, timeout=PROGRAM_TIMEOUT_S)
    for task, run in zip(tasks, runs):
        if task in pending:
            task.cancel()
            run.problems.append(Violation("stream_ends", run.client.index,
                                          f"the client was still waiting after {PROGRAM_TIMEOUT_S:.0f} s "
                                          f"(status {run.response.status}, {len(run.response.events)} events read)"))
        elif task.exception() is not None:
            error = task.exception()
            prop = "no_5xx" if isinstance(error, ProtocolViolation) else "stream_ends"
            run.problems.append(Violation(prop, run.client.index, f"{type(error).__name__}: {error}"))
    if pending:
        await asyncio.wait(pending, timeout=5)
    return runs


def _go_away(run: _ClientRun, conn: Connection, watcher: Watcher) -> None:
    """Closes the client's connection, noting its request's tokens at that instant."""
    _, seen = watcher.of_tag(run.client.tag)
    run.closed_at = time.monotonic()
    run.tokens_at_close = seen.tokens if seen is not None else 0
    run.live_at_close = seen is None or seen.end is None
    conn.close()


async def _client(run: _ClientRun, server: Any, watcher: Watcher, t0: float) -> None:
    c = run.client
    await asyncio.sleep(max(0.0, t0 + c.at_ms / 1000 - time.monotonic()))
    conn = await Connection.open(server.address, HEAD_TIMEOUT_S)
    run.response = conn.response
    try:
        await _act(run, conn, server, watcher)
    finally:
        conn.writer.close()  # whatever the reply said stands: ``ended`` is not touched


async def _act(run: _ClientRun, conn: Connection, server: Any, watcher: Watcher) -> None:
    c = run.client
    host = "%s:%d" % server.address
    body = c.request_body()
    if c.kind == "malformed" and c.truncate:
        await conn.send(request_bytes("/v1/completions", body[: len(body) // 3], host, content_length=len(body)))
        await asyncio.sleep(0.05)
        conn.close()
        return
    await conn.send(request_bytes("/v1/completions", body, host))
    if c.behaviour == "disconnect-before-response":
        await asyncio.sleep(c.delay_ms / 1000)
        _go_away(run, conn, watcher)
        return
    if c.behaviour == "pause" and c.chunks == 0:  # not a byte read yet: the reply piles up in the socket
        await asyncio.sleep(c.pause_ms / 1000)
    if c.behaviour == "half-close":
        conn.half_close()
        run.closed_at = time.monotonic()
        _, seen = watcher.of_tag(c.tag)
        run.tokens_at_close = seen.tokens if seen is not None else 0
        run.live_at_close = seen is None or seen.end is None
    await conn.read_head(HEAD_TIMEOUT_S)
    response = conn.response
    if c.kind == "malformed":
        await conn.read_whole(HEAD_TIMEOUT_S)
        return
    if response.status is None:  # closed before any response (a half-close may do that)
        if c.behaviour != "half-close":
            run.problems.append(Violation("no_5xx", c.index, "the server closed the connection without a response"))
        return
    if response.status != 200:
        await conn.read_whole(HEAD_TIMEOUT_S)
        return  # judged with the other outputs
    if c.behaviour == "disconnect-after-headers":
        _go_away(run, conn, watcher)
        return
    if c.kind == "whole" or not conn.is_stream:
        await _wait_for(lambda: conn.read_whole(POLL_S), run, watcher)
        return
    num_chunks = 0
    paused = False
    while response.ended == "open":
        events = await _wait_for(lambda: conn.next_events(POLL_S), run, watcher)
        if events is None:
            return
        num_chunks += sum(isinstance(e, dict) and bool(e.get("choices")) for e in events)
        if c.behaviour == "disconnect-after" and num_chunks >= c.chunks and response.ended == "open":
            _go_away(run, conn, watcher)
            return
        if c.behaviour == "pause" and c.chunks and num_chunks >= c.chunks and not paused:
            paused = True
            await asyncio.sleep(c.pause_ms / 1000)


async def _wait_for(read: Any, run: _ClientRun, watcher: Watcher) -> Any:
    """``await read()`` again until it returns; between tries, fails the stream when its request
    terminated more than :data:`END_GRACE_S` ago and still nothing ended it."""
    while True:
        try:
            return await read()
        except asyncio.TimeoutError:
            rid, seen = watcher.of_tag(run.client.tag)
            if seen is not None and seen.ended_at is not None and time.monotonic() - seen.ended_at > END_GRACE_S:
                what = "[DONE]" if run.client.kind == "stream" else "its reply"
                run.problems.append(Violation(
                    "stream_ends", run.client.index,
                    f"request {rid} ended ({seen.end}, {seen.tokens} tokens) but its {run.client.kind} was still open "
                    f"{time.monotonic() - seen.ended_at:.1f} s later without {what} "
                    f"({len(run.response.events)} events read)"))
                run.response.ended = "hung"
                return None


# --- the oracle --------------------------------------------------------------------------------------
def _check_idle(server: Any, watcher: Watcher, program: Program, stats: dict[str, Any]) -> list[Violation]:
    """``nothing_left_live`` and ``pages_return``, once every client is done."""
    out: list[Violation] = []
    deadline = time.monotonic() + IDLE_TIMEOUT_S
    while time.monotonic() < deadline and server.loop.call(lambda e: e.has_unfinished()):
        time.sleep(0.05)
    live = server.loop.call(lambda e: {rid: (r.phase.value, r.sampling.seed, len(r.output_token_ids))
                                       for rid, r in e.scheduler.requests.items() if r.phase.is_live})
    for rid, (phase, tag, n) in sorted(live.items()):
        index = tag - TAG_BASE if isinstance(tag, int) else None
        out.append(Violation("nothing_left_live", index, f"request {rid} is still {phase} ({n} tokens) "
                             f"{IDLE_TIMEOUT_S:.0f} s after every client was done"))

    def pool_state(engine: Any) -> dict[str, Any]:
        pool = engine.scheduler.pool
        state = {"in_use": sum(1 for p in pool.pages if p.ref_count > 0), "free": pool.num_free,
                 "cached": pool.num_evictable, "num_pages": engine.config.num_pages, "invariants": None}
        try:
            engine.check_invariants()
        except Exception as error:  # noqa: BLE001 - reported as the property it breaks
            state["invariants"] = f"{type(error).__name__}: {error}"
        return state

    pool = server.loop.call(pool_state)
    stats["pages"] = {k: pool[k] for k in ("in_use", "free", "cached")}
    if not live:
        if pool["in_use"] or pool["free"] + pool["cached"] != pool["num_pages"]:
            out.append(Violation("pages_return", None, f"idle, yet {pool['in_use']} page(s) are in use and "
                                 f"{pool['free']} free + {pool['cached']} cached of {pool['num_pages']}"))
        if pool["invariants"]:
            out.append(Violation("pages_return", None, f"idle, and the engine's invariants fail: {pool['invariants']}"))
        health = _health(server)
        if health is not None:
            out.append(Violation("pages_return", None, health))
    return out


def _health(server: Any) -> str | None:
    """None when ``/health`` says ok with no live request and no page in use (within a few seconds:
    its snapshot lags a pass); otherwise what it says."""
    import http.client
    import json

    said = "no answer"
    for _ in range(20):
        conn = http.client.HTTPConnection(*server.address, timeout=10)
        try:
            conn.request("GET", "/health")
            response = conn.getresponse()
            body = json.loads(response.read())
        except (OSError, ValueError) as error:
            said = f"{type(error).__name__}: {error}"
        else:
            if response.status == 200 and body.get("status") == "ok" and not body.get("live_requests") \
                    and not (body.get("pages") or {}).get("in_use"):
                return None
            said = f"{response.status} {json.dumps(body)[:200]}"
        finally:
            conn.close()
        time.sleep(0.1)
    return f"/health of an idle server says {said}"


def _results(server: Any) -> dict[int, Any]:
    def every(engine: Any) -> dict[int, Any]:
        return {rid: engine.result(rid) for rid in engine.scheduler.requests}

    return server.loop.call(every)


def _check_outputs(runs: list[_ClientRun], watcher: Watcher, results: dict[int, Any],
                   stats: dict[str, Any]) -> list[Violation]:
    out: list[Violation] = []
    tags = {run.client.tag for run in runs if run.client.kind != "malformed"}
    after: list[int] = []
    greedy: dict[tuple[int, ...], list[tuple[int, int, list[int]]]] = {}
    for run in runs:
        c, r = run.client, run.response
        if c.kind == "malformed":
            if r.status is None:
                if not c.truncate:
                    out.append(Violation("malformed_refused", c.index, "no response to a malformed body"))
            elif not 400 <= r.status < 500:
                out.append(Violation("malformed_refused", c.index,
                                     f"status {r.status} for a malformed body, not a 4xx"))
            elif not (isinstance(r.body, dict) and isinstance(r.body.get("error"), dict)
                      and {"message", "type", "param", "code"} <= set(r.body["error"])):
                out.append(Violation("malformed_refused", c.index, f"the {r.status} is not OpenAI's error shape: "
                                     f"{str(r.body)[:120]}"))
            continue
        rid, seen = watcher.of_tag(c.tag)
        result = results.get(rid) if rid is not None else None
        if run.closed_at is not None:  # the client went away (or half-closed)
            if seen is None or result is None:
                continue  # it went away before its request reached the engine: nothing to abort
            extra = seen.tokens - run.tokens_at_close
            if run.live_at_close:
                after.append(extra)
            if run.live_at_close and extra > TOKENS_AFTER_DISCONNECT:
                out.append(Violation("disconnect_aborts", c.index,
                                     f"request {rid} ({seen.role}) was live with {run.tokens_at_close} token(s) "
                                     f"when its client went away, and produced {extra} more (ending {seen.end}, "
                                     f"{seen.tokens} in all), more than the {TOKENS_AFTER_DISCONNECT} a prompt "
                                     "abort allows"))
            if c.behaviour == "half-close" and r.ended == "done":
                out += _compare(c, r, rid, result)
            continue
        if r.status is None or r.status != 200:
            out.append(Violation("no_5xx", c.index, f"status {r.status} for a well-formed request: "
                                 f"{str(r.body)[:160]}"))
            continue
        if r.ended == "hung":
            continue  # reported by the client as stream_ends
        if c.kind == "stream" and r.ended == "error":
            out.append(Violation("no_5xx", c.index, f"the stream of a well-formed request ended with an error chunk: "
                                 f"{r.error_chunk}"))
            continue
        if c.kind == "stream" and r.ended != "done":
            end = f"request {rid} ended {seen.end}" if seen and seen.end else "its request still live"
            out.append(Violation("stream_ends", c.index, f"the stream ended without [DONE] ({r.ended}; {end}; "
                                 f"{len(r.events)} events read)"))
            continue
        if result is None:
            out.append(Violation("output_matches", c.index, f"a reply came but no engine request carries the "
                                 f"client's seed {c.tag}"))
            continue
        out += _compare(c, r, rid, result)
        if c.is_greedy and result.finish_reason in ("length", "abort"):
            greedy.setdefault(c.prompt, []).append((c.index, rid, list(result.output_token_ids)))
    for prompt, outputs in greedy.items():
        for (i, rid_i, a), (j, rid_j, b) in zip(outputs, outputs[1:]):
            n = min(len(a), len(b))
            if a[:n] != b[:n]:
                k = next(x for x in range(n) if a[x] != b[x])
                out.append(Violation("greedy_agrees", j, f"requests {rid_i} (client {i}) and {rid_j} have the same "
                                     f"prompt and are greedy, yet differ at output token {k}: {a[k]} vs {b[k]}"))
    strangers = sorted(rid for rid, s in watcher.requests.items() if s.tag not in tags)
    if strangers:
        out.append(Violation("malformed_refused", None, f"request(s) {strangers} reached the engine without a "
                             "client's tag (a malformed body got through?)"))
    stats["tokens_after_disconnect"] = sorted(after)
    return out


def _compare(c: Client, r: Response, rid: int, result: Any) -> list[Violation]:
    """``output_matches`` for one reply read to the end."""
    out: list[Violation] = []
    got, want = r.token_ids, list(result.output_token_ids)
    if got != want:
        k = next((x for x in range(min(len(got), len(want))) if got[x] != want[x]), min(len(got), len(want)))
        out.append(Violation("output_matches", c.index, f"the client read {len(got)} token(s), the engine produced "
                             f"{len(want)} for request {rid} (first difference at token {k})"))
    ext = r.extension
    if ext is None or ext.get("request_id") != rid:
        out.append(Violation("output_matches", c.index, f"the reply names request "
                             f"{None if ext is None else ext.get('request_id')}, the engine's is {rid}"))
    finish = None
    choices = [ch for e in ([r.body] if r.body is not None else r.events) if isinstance(e, dict)
               for ch in e.get("choices") or []]
    finish = next((ch.get("finish_reason") for ch in reversed(choices) if ch.get("finish_reason")), None)
    expected = "stop" if result.finish_reason in ("eos", "stop") else "length"
    if finish != expected:
        out.append(Violation("output_matches", c.index, f"finish_reason {finish!r}, the engine ended request {rid} "
                             f"{result.finish_reason!r}"))
    usage = r.usage
    wants_usage = c.kind == "whole" or c.include_usage
    if wants_usage:
        expected_usage = {"prompt_tokens": len(c.prompt), "completion_tokens": len(want),
                          "total_tokens": len(c.prompt) + len(want)}
        if usage is None or any(usage.get(k) != v for k, v in expected_usage.items()) \
                or (usage.get("prompt_tokens_details") or {}).get("cached_tokens") != result.recovered_tokens:
            out.append(Violation("output_matches", c.index, f"usage {usage} but the engine's request {rid} has "
                                 f"{expected_usage} and {result.recovered_tokens} recovered tokens"))
    elif usage is not None:
        out.append(Violation("output_matches", c.index, "a usage chunk nobody asked for"))
    return out


def _check_log(events_path: str, results: dict[int, Any], watcher: Watcher, stats: dict[str, Any]) -> list[Violation]:
    """``log_valid`` (the log through the spec, as ``flightcheck validate`` does it) and the log's decode
    tokens against each request's output (``output_matches``)."""
    from flightcheck.checks.conform.eventlog import read_events, validate_events
    from flightcheck.spec.scenario import Policy

    out: list[Violation] = []
    events, header = read_events(events_path)
    stats["events"] = len(events)
    known = {f.name for f in fields(Policy)}
    policy = Policy(**{k: v for k, v in (header or {}).get("policy", {}).items() if k in known})
    report = validate_events(events, policy, num_pages=((header or {}).get("pool") or {}).get("num_pages"),
                             context=(header or {}).get("context"), source=events_path)
    if not report.ok:
        diagnosis = report.diagnosis
        summary = getattr(diagnosis, "summary", None) or str(diagnosis).splitlines()[0]
        at_stake = ", ".join(getattr(diagnosis, "properties", ()) or ())
        out.append(Violation("log_valid", None, f"the event log departs from the spec at event {report.num_events}: "
                             f"{summary}" + (f" [{at_stake}]" if at_stake else "")))
    roles: dict[str, int] = {}
    aborted_in: dict[str, int] = {}
    for e in events:
        if e["action"] in SUBMISSIONS:
            roles[e["role"]] = roles.get(e["role"], 0) + 1
        elif e["action"] in CANCELS:
            aborted_in[e["phase"]] = aborted_in.get(e["phase"], 0) + 1
    stats["roles"], stats["aborted_in"] = roles, aborted_in
    return out + decodes_match(events, results, watcher)


def decodes_match(events: list[dict[str, Any]], results: dict[int, Any], watcher: Watcher) -> list[Violation]:
    """``output_matches`` between the event log's decode tokens and each request's output."""
    out: list[Violation] = []
    decodes: dict[int, list[int]] = {}
    for e in events:
        if e["action"] in TOKEN_PASSES:
            decodes.setdefault(e["request"], []).append(e["token"])
    for rid, result in results.items():
        logged, output = decodes.get(rid, []), list(result.output_token_ids)
        if logged and output[len(output) - len(logged):] != logged:
            tag = watcher.requests[rid].tag if rid in watcher.requests else None
            out.append(Violation("output_matches", tag - TAG_BASE if isinstance(tag, int) else None,
                                 f"the log's {len(logged)} decode token(s) of request {rid} are not the end of its "
                                 f"output of {len(output)}"))
    return out


__all__ = ["END_GRACE_S", "Outcome", "PROPERTIES", "decodes_match", "TOKENS_AFTER_DISCONNECT", "Violation", "Watcher", "make_engine",
           "run_program", "tiny_model"]
