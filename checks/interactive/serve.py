"""Serving the explorer: the app bound to a local address (port 0: any free port), in the foreground for
``flightcheck explorer``, or on a background thread for tests and scripts.

For example::

    server = ExplorerServer(ExplorerApp()).start()   # 127.0.0.1, a free port
    print(server.url)                                # http://127.0.0.1:PORT
    server.close()
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from flightcheck.checks.interactive.app import ExplorerApp


class ExplorerServer:
    """The explorer app on ``host:port``; binding happens here, so a busy port raises ``OSError`` at once."""

    def __init__(self, app: ExplorerApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self.explorer = app
        self.socket = socket.create_server((host, port))
        self.uvicorn = uvicorn.Server(uvicorn.Config(app.app, lifespan="off", log_level="warning",
                                                     access_log=False, timeout_keep_alive=5))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:8123``."""
        host, port = self.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self, timeout: float = 30.0) -> "ExplorerServer":
        """Serves on a background thread; returns once connections are accepted."""
        self._thread = threading.Thread(target=self.uvicorn.run, kwargs={"sockets": [self.socket]},
                                        name="flightcheck-explorer", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.uvicorn.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.uvicorn.started:
            raise RuntimeError("the explorer's HTTP server did not start")
        return self

    def serve_forever(self) -> None:
        """Serves in this thread until SIGINT or SIGTERM."""
        try:
            self.uvicorn.run(sockets=[self.socket])
        finally:
            self.socket.close()

    def close(self, timeout: float = 10.0) -> None:
        """Stops serving."""
        self.uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self.socket.close()

    def __enter__(self) -> "ExplorerServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()
