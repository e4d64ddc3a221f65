"""Command ``serve``: the engine behind an OpenAI-compatible HTTP API on the local machine.

For example::

    $ flightcheck serve --model smollm2 --port 8000 --release after-prefill --events events.jsonl --monitor
    $ curl localhost:8000/v1/completions -H 'Content-Type: application/json' \\
        -d '{"model": "smollm2-135m-instruct", "prompt": "The capital of France is", "max_tokens": 8}'
    $ curl localhost:8000/metrics

Every field of ``EngineConfig`` is an option (``--coordination``, ``--release``, ``--publication``,
``--max-running``, ``--num-pages``, ``--follower-wait-bound``, ...), read from the dataclass itself
(:mod:`flightcheck.checks.cli.config_options`). ``--monitor`` checks every event the engine emits
against the spec as it happens (the online monitor of checks/conform); a departure is logged, counted
in /metrics (``flightcheck_engine_failures_total{kind="conformance"}``), reported by /health, and
fails the request it concerns with a 500 naming it.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

import typer
from rich.console import Console

from flightcheck.checks.cli.config_options import config_parameters, with_options
from flightcheck.checks.errors import usage_error

# Why 1024: the server holds many clients' pages at once; EngineConfig's own default (512) suits a
# single process's experiments.
SERVE_DEFAULTS = {"num_pages": 1024}


def attach_monitor(engine: Any) -> Any:
    """The online monitor on ``engine`` (the one place the server's side imports it)."""
    from flightcheck.checks.conform.monitor import Monitor

    return Monitor(engine)


def register(app: typer.Typer) -> None:
    """Adds ``serve`` to the command line."""

    def serve(
        model: str = typer.Option("smollm2", help="smollm2 (the real model) or tiny (random weights, token ids only)"),
        host: str = typer.Option("127.0.0.1", help="address to bind (local only by default)"),
        port: int = typer.Option(8000, help="TCP port (0: any free port)"),
        events: Optional[str] = typer.Option(None, help="write the engine's event log (JSON lines) here"),
        monitor: bool = typer.Option(False, help="check every event against the spec as the server runs "
                                     "(keeps every request's record: for validation runs)"),
        history: int = typer.Option(256, help="finished requests whose records are kept in memory"),
        event_history: int = typer.Option(100_000, help="engine events kept in memory (the --events file has all)"),
        max_body_bytes: int = typer.Option(1 << 20, help="request bodies above this are refused (413) unread"),
        body_timeout: float = typer.Option(30.0, help="seconds for a request body to arrive (else 408)"),
        header_timeout: float = typer.Option(10.0, help="seconds for a request's headers (else the connection closes)"),
        keep_alive: float = typer.Option(5.0, help="seconds an idle keep-alive connection stays open"),
        max_connections: int = typer.Option(256, help="open connections at which the longest idle one is closed "
                                            "for a new one (all busy: 503)"),
        max_connections_per_client: int = typer.Option(128, help="open connections one client address may hold "
                                                       "(its idle ones give way; all busy: 503)"),
        shutdown_timeout: float = typer.Option(10.0, help="seconds replies may take to close at shutdown"),
        default_max_tokens: int = typer.Option(256, help="tokens a chat generates at most when it names no "
                                               "max_tokens (admission reserves pages for them)"),
        api_key: Optional[str] = typer.Option(None, help="require 'Authorization: Bearer KEY' on /v1/* (else 401); "
                                              "default: $FLIGHTCHECK_API_KEY if set, else no key"),
        **policy: Any,
    ) -> None:
        """Serve the engine over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions,
        /v1/models, /health, /metrics, /info)."""
        options = dict(locals())  # every option by its parameter name, as open_server reads them
        options.update(options.pop("policy"))
        from flightcheck.impl.server.launch import LaunchError, open_server, serve_until_stopped

        err = Console(stderr=True)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
        try:
            server = open_server(options, attach_monitor=attach_monitor)
        except LaunchError as error:
            raise usage_error(str(error)) from None
        engine, config = server.engine, server.engine.config
        err.print(f"serving {model} as {server.model_id!r} on {server.url} ({config.coordination}, release "
                  f"{config.release}, publication {config.publication}{', monitored' if monitor else ''}"
                  f"{', API key required' if server.api_key else ''}); "
                  f"Ctrl-C stops", highlight=False)
        info = engine.info()
        style = "" if info["is_fast_blas"] else "[bold yellow]warning:[/] "
        err.print(f"{style}{info['model']}; {info['blas']}", highlight=False)
        serve_until_stopped(server)
        err.print("stopped", highlight=False)

    with_options(serve, config_parameters(_engine_config(), SERVE_DEFAULTS))
    app.command()(serve)


def _engine_config() -> type:
    # Why a function: impl/config.py imports nothing heavy, but keep the CLI's import cost in one place.
    from flightcheck.impl.config import EngineConfig

    return EngineConfig


__all__ = ["attach_monitor", "register"]
