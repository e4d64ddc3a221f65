"""A small HTTP front end for the engine (stdlib ``http.server``), streaming tokens as JSON lines.

One engine thread owns the engine (MLX and the scheduler are used from that thread only); HTTP handler
threads hand it commands through a queue and read their request's tokens from a per-request queue.
So concurrent clients are batched together in the engine exactly as ``add_request`` calls would be,
and identical prompts arriving at once meet in one flight under single-flight coordination.

Endpoints:

- ``POST /generate`` with ``{"prompt": "..."}`` or ``{"token_ids": [...]}`` plus optional sampling
  fields (``max_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``) and ``"chat": true``: streams
  ``{"request_id": n}``, then ``{"token": id, "text": piece}`` per token, then a final
  ``{"done": true, "finish_reason", "recovered_tokens", "ttft_ms", "completion_ms"}`` line. Bad input
  is a 400 with ``{"error": message}``, before anything was enqueued.
- ``POST /abort`` with ``{"request_id": n}``: 200, or 404 naming the unknown ID.
- ``GET /stats``: the engine's counters; ``GET /info``: the model, the BLAS fast path, the config.

A client that disconnects mid-stream has its request aborted.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import EngineError, UnknownRequestError
from flightcheck.impl.sampling import SamplingParams

SAMPLING_FIELDS = ("max_tokens", "temperature", "top_p", "seed", "stop")
_DONE = object()


class EngineLoop:
    """Runs the engine on its own thread; other threads call ``submit``, ``abort`` and ``stats``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._commands: queue.Queue = queue.Queue()
        self._outputs: dict[int, queue.Queue] = {}
        self._sent: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flightcheck-engine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._commands.put(None)
        self._thread.join(timeout=10)

    def call(self, fn: Callable[[Engine], Any]) -> Any:
        """Runs ``fn(engine)`` on the engine thread and returns its result (or raises its error)."""
        reply: queue.Queue = queue.Queue(maxsize=1)
        self._commands.put((fn, reply))
        ok, value = reply.get()
        if not ok:
            raise value
        return value

    def submit(self, prompt: str | list[int], sampling: SamplingParams) -> tuple[int, queue.Queue]:
        out: queue.Queue = queue.Queue()

        def add(engine: Engine) -> int:
            request_id = engine.add_request(prompt, sampling)
            self._outputs[request_id] = out
            self._sent[request_id] = 0
            return request_id

        return self.call(add), out

    def _run(self) -> None:
        while not self._stop.is_set():
            # Why block only when idle: while requests run, commands are drained between steps so that
            # new arrivals join the next forward pass.
            block = not self.engine.has_unfinished()
            try:
                command = self._commands.get(timeout=0.5) if block else self._commands.get_nowait()
            except queue.Empty:
                command = None
            while command is not None:
                fn, reply = command
                try:
                    reply.put((True, fn(self.engine)))
                except Exception as error:  # handed back to the calling thread
                    reply.put((False, error))
                try:
                    command = self._commands.get_nowait()
                except queue.Empty:
                    command = None
            if self.engine.has_unfinished():
                self.engine.step()
                self._deliver()

    def _deliver(self) -> None:
        for request_id, out in list(self._outputs.items()):
            request = self.engine.scheduler.requests[request_id]
            tokens = self.engine.result(request_id).output_token_ids
            for token in tokens[self._sent[request_id]:]:
                out.put(token)
            self._sent[request_id] = len(tokens)
            if not request.phase.is_live:
                out.put(_DONE)
                del self._outputs[request_id], self._sent[request_id]


def make_handler(loop: EngineLoop) -> type[BaseHTTPRequestHandler]:
    engine = loop.engine

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet by default
            pass

        def _json(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError as error:
                raise ValueError(f"request body is not JSON: {error}") from None
            if not isinstance(body, dict):
                raise ValueError("request body must be a JSON object")
            return body

        def do_GET(self) -> None:
            if self.path == "/stats":
                self._json(200, loop.call(lambda e: e.counters))
            elif self.path == "/info":
                self._json(200, loop.call(lambda e: e.info()))
            else:
                self._json(404, {"error": f"no such endpoint: GET {self.path}"})

        def do_POST(self) -> None:
            try:
                body = self._body()
            except ValueError as error:
                self._json(400, {"error": str(error)})
                return
            if self.path == "/abort":
                try:
                    loop.call(lambda e: e.abort(body.get("request_id")))
                    self._json(200, {"aborted": body.get("request_id")})
                except UnknownRequestError as error:
                    self._json(404, {"error": str(error)})
            elif self.path == "/generate":
                self._generate(body)
            else:
                self._json(404, {"error": f"no such endpoint: POST {self.path}"})

        def _generate(self, body: dict) -> None:
            try:
                prompt, sampling = _parse_generate(body, engine)
                request_id, out = loop.submit(prompt, sampling)
            except (EngineError, ValueError, TypeError) as error:
                self._json(400, {"error": str(error)})
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            decoder = engine.tokenizer.stream_decoder() if engine.tokenizer is not None else None
            try:
                self._chunk({"request_id": request_id})
                while (token := out.get()) is not _DONE:
                    self._chunk({"token": token, "text": decoder.push(token) if decoder else None})
                result = loop.call(lambda e: e.result(request_id))
                self._chunk({"done": True, "finish_reason": result.finish_reason,
                             "recovered_tokens": result.recovered_tokens,
                             "ttft_ms": None if result.ttft_s is None else round(result.ttft_s * 1e3, 2),
                             "completion_ms": None if result.completion_s is None else round(result.completion_s * 1e3, 2)})
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                # The client went away: free its pages rather than generate for nobody.
                try:
                    loop.call(lambda e: e.abort(request_id))
                except UnknownRequestError:
                    pass  # it finished meanwhile

        def _chunk(self, obj: dict) -> None:
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _parse_generate(body: dict, engine: Engine) -> tuple[str | list[int], SamplingParams]:
    unknown = sorted(set(body) - {"prompt", "token_ids", "chat", *SAMPLING_FIELDS})
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(unknown)}")
    if ("prompt" in body) == ("token_ids" in body):
        raise ValueError("give exactly one of 'prompt' (text) or 'token_ids' (a list of ints)")
    sampling = SamplingParams(**{k: body[k] for k in SAMPLING_FIELDS if k in body})
    if "token_ids" in body:
        if not isinstance(body["token_ids"], list):
            raise ValueError("'token_ids' must be a list of ints")
        return body["token_ids"], sampling
    prompt = body["prompt"]
    if not isinstance(prompt, str):
        raise ValueError("'prompt' must be a string")
    if body.get("chat"):
        if engine.tokenizer is None:
            raise ValueError("'chat' needs a model with a tokenizer")
        return engine.tokenizer.encode_chat(prompt), sampling
    return prompt, sampling


class Server:
    """The engine loop plus a threading HTTP server bound to ``host:port`` (port 0: any free port)."""

    def __init__(self, engine: Engine, host: str = "127.0.0.1", port: int = 8000) -> None:
        self.loop = EngineLoop(engine)
        self.http = ThreadingHTTPServer((host, port), make_handler(self.loop))
        self.http.daemon_threads = True

    @property
    def address(self) -> tuple[str, int]:
        return self.http.server_address[:2]

    def start(self) -> "Server":
        """Serves in background threads (for tests and embedding)."""
        self.loop.start()
        threading.Thread(target=self.http.serve_forever, name="flightcheck-http", daemon=True).start()
        return self

    def serve_forever(self) -> None:
        self.loop.start()
        try:
            self.http.serve_forever()
        finally:
            self.close()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.loop.stop()
