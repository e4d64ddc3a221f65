"""Starting ``flightcheck serve``: its options checked, the engine for a model name, the socket bound.

Each step raises :class:`LaunchError` with the one line to show (the command's exit 2): an option out of
range, a missing or corrupt model file, a pool too large for this machine and model, an event log that
cannot be opened, a port that cannot be bound.

For example::

    >>> check_options("tiny", 8000, 256, 100_000, None)
    >>> check_options("gpt", 8000, 256, 100_000, None)
    Traceback (most recent call last):
    ...
    flightcheck.impl.server.launch.LaunchError: --model must be smollm2 or tiny, got 'gpt'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Optional

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.server import Limits, Server, api_key_of

MODELS = ("smollm2", "tiny")
# The serve options that set a field of Limits, by the option's parameter name (``--body-timeout`` is
# ``Limits.body_timeout_s``). Why here and not in the command: the server stage starts its servers through
# open_server too, so an option the command forgot to pass on fails a check, not only a user.
LIMIT_OPTIONS = {"max_body_bytes": "max_body_bytes", "body_timeout": "body_timeout_s",
                 "header_timeout": "header_timeout_s", "keep_alive": "keep_alive_s",
                 "max_connections": "max_connections", "max_connections_per_client": "max_connections_per_client",
                 "shutdown_timeout": "shutdown_timeout_s", "default_max_tokens": "default_max_tokens"}


class LaunchError(ValueError):
    """The server cannot start as asked; the message names the option or the file."""


def check_options(model: str, port: int, history: int, event_history: int, api_key: Optional[str]) -> None:
    """A :class:`LaunchError` for the first of the server's options out of range."""
    if model not in MODELS:
        raise LaunchError(f"--model must be smollm2 or tiny, got {model!r}")
    if not 0 <= port <= 65535:
        raise LaunchError(f"--port must be in 0..65535, got {port}")
    if history < 0 or event_history < 0:
        raise LaunchError(f"--history and --event-history must be >= 0, got {history} and {event_history}")
    try:
        api_key_of(api_key, "--api-key")  # an empty key, given or from $FLIGHTCHECK_API_KEY, is refused now
    except ValueError as error:
        raise LaunchError(str(error)) from None


def load_engine(model: str, config: EngineConfig, events: Optional[str], history: Optional[int]) -> Engine:
    """The engine for ``model`` (``smollm2`` or ``tiny``), writing its event log to ``events`` and keeping
    ``history`` events in memory (None: all)."""
    from flightcheck.impl.errors import EngineError
    from flightcheck.impl.model_file import ModelFileError

    from flightcheck.impl.config import MIN_KV_PAGE_BYTES

    try:
        # Why before the model loads: the pools of any model take at least the smallest model's bytes a
        # page, so a pool past the address space ulimit -v leaves is refused before anything is mapped
        # (under that limit MLX does not report a failed allocation: the process segfaults).
        config.check_pool(MIN_KV_PAGE_BYTES, "the smallest model's", allocating=True)
        if model == "smollm2":
            return Engine.smollm2(config, event_log_path=events, event_history=history)
        return Engine.tiny(config, event_log_path=events, event_history=history)
    except (ModelFileError, EngineError) as error:
        raise LaunchError(str(error)) from None
    except OSError as error:
        raise LaunchError(f"cannot open {error.filename or 'a file'}: {error.strerror or error}") from None


def bind(engine: Engine, host: str, port: int, *, limits: Limits, history: Optional[int],
         api_key: Optional[str]) -> Server:
    """The server of ``engine`` bound to ``host:port``; when the port cannot be bound, the engine is
    closed and a :class:`LaunchError` says why."""
    try:
        return Server(engine, host, port, limits=limits, history=history, api_key=api_key)
    except OSError as error:
        engine.close()
        raise LaunchError(f"cannot bind {host}:{port}: {error.strerror or error}") from None


def open_server(options: Mapping[str, Any], *, attach_monitor: Optional[Callable[[Engine], Any]] = None,
                load: Callable[..., Engine] = load_engine) -> Server:
    """The server ``flightcheck serve`` runs for ``options`` (its options by parameter name: ``model``,
    ``host``, ``port``, ``history`` and ``event_history`` required; ``events``, ``monitor``, ``api_key``,
    the :data:`LIMIT_OPTIONS` and the fields of ``EngineConfig`` take their defaults when left out),
    bound and not started. ``attach_monitor(engine)`` runs under ``monitor`` (the monitor lives in checks/,
    which impl does not import); ``load(model, config, events, event_history)`` makes the engine. A
    :class:`LaunchError` names the first option that cannot be served, in the order the command checks them.
    """
    check_options(options["model"], options["port"], options["history"], options["event_history"],
                  options.get("api_key"))
    fields = {f.name for f in dataclasses.fields(EngineConfig)}
    try:
        config = EngineConfig(**{k: v for k, v in options.items() if k in fields})
        limits = Limits(**{field: options[name] for name, field in LIMIT_OPTIONS.items() if name in options})
    except ValueError as error:  # InvalidConfigError is one; Limits raises ValueError itself
        raise LaunchError(str(error)) from None
    monitor = bool(options.get("monitor"))
    # Why every record under the monitor: it checks each event against the request's whole history.
    engine = load(options["model"], config, options.get("events"), None if monitor else options["event_history"])
    if monitor:
        if attach_monitor is None:
            engine.close()
            raise LaunchError("--monitor: no monitor was given to attach")
        try:
            attach_monitor(engine)
        except ValueError as error:  # a policy the spec does not model: the monitor cannot check it
            engine.close()
            raise LaunchError(f"--monitor: {error}") from None
    return bind(engine, options["host"], options["port"], limits=limits,
                history=None if monitor else options["history"], api_key=options.get("api_key"))


def serve_until_stopped(server: Server) -> None:
    """Serve in this thread until SIGINT or SIGTERM; the engine is closed after, however it ends."""
    try:
        server.serve_forever()
    finally:
        server.engine.close()
