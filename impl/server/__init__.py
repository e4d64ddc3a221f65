"""``flightcheck serve``: the engine behind an OpenAI-compatible HTTP API (Starlette under uvicorn).

Endpoints: ``POST /v1/completions`` and ``POST /v1/chat/completions`` (streaming over server-sent
events or whole, with ``usage`` including ``prompt_tokens_details.cached_tokens``, the tokens the
prefix cache recovered), ``GET /v1/models``, ``GET /health``, ``GET /metrics`` (Prometheus text),
``GET /info`` (model, BLAS path, pool, engine config). The engine runs on its own thread
(:mod:`.loop`); concurrent requests are batched together, identical ones meet in one flight.

For example::

    from flightcheck.impl.engine import Engine
    from flightcheck.impl.server import Server

    server = Server(Engine.tiny(), port=0).start()      # any free port on 127.0.0.1
    from openai import OpenAI
    client = OpenAI(base_url=server.url + "/v1", api_key="none")
    reply = client.completions.create(model=server.model_id, prompt=[1, 2, 3], max_tokens=4)
    server.close()
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

import uvicorn

from flightcheck.impl.engine import Engine
from flightcheck.impl.server.app import Limits, OpenAIApp
from flightcheck.impl.server.loop import EngineLoop, ServerError
from flightcheck.impl.server.metrics import ServerMetrics
from flightcheck.impl.server.protocol import with_header_deadline

__all__ = ["API_KEY_ENV", "Limits", "Server", "ServerError", "api_key_of", "model_id_of"]

API_KEY_ENV = "FLIGHTCHECK_API_KEY"


def api_key_of(api_key: object, name: str = "api_key") -> str | None:
    """The key the server requires: ``api_key`` (the source called ``name``), else ``$FLIGHTCHECK_API_KEY``,
    else None (no key). An empty key from either source is a ValueError naming that source."""
    # Why an error and not "no key": `FLIGHTCHECK_API_KEY= flightcheck serve` (a key meant, its value
    # lost) would otherwise serve every /v1 route to anyone, while `--api-key ''` was refused.
    if api_key is None:
        from_env = os.environ.get(API_KEY_ENV)
        if from_env == "":
            raise ValueError(f"{API_KEY_ENV} is set but empty: unset it to serve without a key, or set it to the key")
        return from_env
    if not isinstance(api_key, str):
        raise ValueError(f"{name} must be a non-empty string or None, got {type(api_key).__name__}")
    if not api_key:
        raise ValueError(f"{name} must not be empty (leave it out to serve without a key)")
    return api_key


def model_id_of(engine: Engine) -> str:
    """The model name clients send: ``smollm2-135m-instruct`` for the real model, ``tiny`` otherwise."""
    name = engine.model_name.lower()
    return "smollm2-135m-instruct" if "smollm2" in name else "tiny" if "tiny" in name else "custom"


class _Uvicorn(uvicorn.Server):
    """uvicorn, ending every live request cleanly before it waits for the open connections."""

    engine_loop: EngineLoop

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Why first: a stream waiting for tokens would otherwise hold the graceful shutdown open.
        self.engine_loop.begin_close()
        await super().shutdown(sockets)
        # Why: uvicorn re-raises a captured SIGINT/SIGTERM after shutting down (a KeyboardInterrupt, or
        # death by SIGTERM before the caller's clean-up); the shutdown is complete, so return instead.
        self._captured_signals.clear()


class Server:
    """The engine loop and the HTTP server bound to ``host:port`` (port 0: any free port).

    ``history``: finished requests whose records are kept (None: all, as the online monitor needs).
    ``api_key``: when set, every ``/v1/*`` route needs ``Authorization: Bearer <api_key>`` (else a 401);
    None reads ``FLIGHTCHECK_API_KEY`` from the environment, and without either no key is needed; an empty
    key from either is a ValueError (:func:`api_key_of`).
    ``start()`` serves on background threads (tests, embedding); ``serve_forever()`` in the foreground
    until SIGINT/SIGTERM. Binding happens here, so a busy port raises ``OSError`` at once.
    """

    def __init__(self, engine: Engine, host: str = "127.0.0.1", port: int = 8000, *, limits: Limits | None = None,
                 history: int | None = 256, model_id: str | None = None, log_level: str = "warning",
                 api_key: str | None = None) -> None:
        self.api_key = api_key = api_key_of(api_key)
        self.engine = engine
        self.limits = limits or Limits()
        self.model_id = model_id or model_id_of(engine)
        self.metrics = ServerMetrics(lambda: self.loop.snapshot)
        self.loop = EngineLoop(engine, history=history, on_finish=self.metrics.observe,
                               on_failure=lambda kind, error: self.metrics.failures.labels(kind).inc())
        self.app = OpenAIApp(self.loop, self.metrics, self.limits, self.model_id, api_key=api_key).app
        self.socket = socket.create_server((host, port))
        lim = self.limits
        config = uvicorn.Config(
            self.app, http=with_header_deadline(lim.header_timeout_s, lim.max_connections_per_client), lifespan="off", log_level=log_level,
            timeout_keep_alive=lim.keep_alive_s, limit_concurrency=lim.max_connections,
            timeout_graceful_shutdown=lim.shutdown_timeout_s, access_log=False)
        self.uvicorn = _Uvicorn(config)
        self.uvicorn.engine_loop = self.loop
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        return self.socket.getsockname()[:2]

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    def start(self, timeout: float = 60.0) -> "Server":
        """Serves on background threads; returns once the server accepts connections."""
        self.loop.start()
        self._thread = threading.Thread(target=self.uvicorn.run, kwargs={"sockets": [self.socket]},
                                        name="flightcheck-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.uvicorn.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.uvicorn.started:
            raise RuntimeError("the HTTP server did not start")
        return self

    def serve_forever(self) -> None:
        """Serves in this thread until SIGINT or SIGTERM, then shuts down (prompt: live requests end
        with a 503, the engine thread stops)."""
        self.loop.start()
        try:
            self.uvicorn.run(sockets=[self.socket])
        finally:
            self.loop.close()
            self.socket.close()

    def close(self, timeout: float = 30.0) -> None:
        """Stops serving (live requests end with a 503), then stops the engine thread."""
        self.uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self.loop.close(timeout)
        self.socket.close()

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


logging.getLogger("flightcheck.server").addHandler(logging.NullHandler())
