"""Command ``serve``: the engine behind a small HTTP server on the local machine, streaming tokens.

For example::

    $ flightcheck serve --model smollm2 --port 8000 --release after-prefill --events events.jsonl
    $ curl -N localhost:8000/generate -d '{"prompt": "Why is the sky blue?", "chat": true, "max_tokens": 40}'
    $ curl localhost:8000/stats

Each ``/generate`` reply is JSON lines: ``{"request_id": n}``, one ``{"token", "text"}`` per token,
then ``{"done": true, "finish_reason", "recovered_tokens", "ttft_ms", "completion_ms"}``. The event
log (``--events``) is the spec's action vocabulary, ready for ``flightcheck validate``.
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    """Adds ``serve`` to the command line."""

    @app.command()
    def serve(
        model: str = typer.Option("smollm2", help="smollm2 (the real model) or tiny (random weights, token ids only)"),
        host: str = typer.Option("127.0.0.1", help="address to bind (local only by default)"),
        port: int = typer.Option(8000, help="TCP port (0: any free port)"),
        coordination: str = typer.Option("single-flight", help="none or single-flight"),
        release: str = typer.Option("after-prefill", help="after-prefill or on-completion"),
        publication: str = typer.Option("incremental", help="incremental or on-completion"),
        max_running: int = typer.Option(8, help="requests in prefill or decode at once"),
        num_pages: int = typer.Option(1024, help="KV pages of 16 tokens"),
        prefill_chunk_pages: int = typer.Option(32, help="prefill budget per step, in pages"),
        events: Optional[str] = typer.Option(None, help="write the event log (JSON lines) here"),
    ) -> None:
        """Serve the engine over HTTP: POST /generate streams tokens, POST /abort, GET /stats."""
        from flightcheck.impl.config import EngineConfig
        from flightcheck.impl.errors import InvalidConfigError

        err = Console(stderr=True)
        if model not in ("smollm2", "tiny"):
            raise typer.BadParameter(f"--model must be smollm2 or tiny, got {model!r}")
        if not 0 <= port <= 65535:
            raise typer.BadParameter(f"--port must be in 0..65535, got {port}")
        try:
            config = EngineConfig(coordination=coordination, release=release, publication=publication,
                                  max_running=max_running, num_pages=num_pages, prefill_chunk_pages=prefill_chunk_pages)
        except InvalidConfigError as error:
            err.print(f"[bold red]error:[/] {error}", highlight=False)
            raise typer.Exit(2)

        from flightcheck.impl.engine import Engine
        from flightcheck.impl.server import Server

        engine = Engine.smollm2(config, event_log_path=events) if model == "smollm2" else \
            Engine.tiny(config, event_log_path=events)
        try:
            server = Server(engine, host, port)
        except OSError as error:
            err.print(f"[bold red]error:[/] cannot bind {host}:{port}: {error}", highlight=False)
            raise typer.Exit(2)
        bound_host, bound_port = server.address
        err.print(f"serving {model} on http://{bound_host}:{bound_port} "
                  f"({coordination}, release {release}, publication {publication}); Ctrl-C stops", highlight=False)
        info = engine.info()
        style = "" if info["is_fast_blas"] else "[bold yellow]warning:[/] "
        err.print(f"{style}{info['model']}; {info['blas']}", highlight=False)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            engine.close()
