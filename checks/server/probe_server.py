"""The server an option probe runs against: ``flightcheck serve``'s own assembly, in this process.

:class:`ProbeServer` starts the server through :func:`flightcheck.impl.server.launch.open_server`, the
function the ``serve`` command calls, with every option at serve's default (:data:`BASELINE`) but those
a row of :mod:`.options` sets: an option the command or the server drops is then served at its default,
and the row's probe sees it. The tiny model serves (no download); a probe that needs chat gets it with a
byte-level tokenizer (:func:`byte_tokenizer`), since ``serve --model tiny`` takes token ids only.

For a burst, :meth:`ProbeServer.held` holds the engine thread until every arrival has queued, so
identical requests meet in one drain, as requests arriving together do, whatever the machine's load.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flightcheck.checks.server.wire import Reply, connect, exchange, head
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.server import Limits
from flightcheck.impl.server.launch import LIMIT_OPTIONS, load_engine, open_server

# Every serve option at the command's default, but the model (the tiny one) and the port (any free one);
# tests/server/test_server_options.py holds it equal to the defaults the command declares.
BASELINE: dict[str, Any] = {
    "model": "tiny", "host": "127.0.0.1", "port": 0, "events": None, "monitor": False, "history": 256,
    "event_history": 100_000, "api_key": None,
    **{option: getattr(Limits(), field) for option, field in LIMIT_OPTIONS.items()},
    **{f.name: f.default for f in dataclasses.fields(EngineConfig)}, "num_pages": 1024,
}
EVENTS_FILE = "<a file>"   # a row's value of ``events``: a fresh file in a temporary folder
WAIT_S = 10.0              # the longest wait for something the server owes soon (a loaded machine is slow)
SETTLE_S = 3.0             # the longest wait for /metrics to show what the engine thread has done
PROMPT = list(range(1, 70))  # 69 tokens: 4 shareable pages of 16 and a tail of 5


class ProbeFailed(Exception):
    """The server did not do what its option says; the message says what it did instead."""


def expect(condition: bool, message: str) -> None:
    """Raises :class:`ProbeFailed` with ``message`` unless ``condition``."""
    if not condition:
        raise ProbeFailed(message)


def shown(reply: Reply | None) -> str:
    """A reply in a few words, for a failure's message."""
    if reply is None:
        return "no reply"
    error = reply.body.get("error") if isinstance(reply.body, dict) else None
    what = error.get("message") if isinstance(error, dict) else None
    return f"{reply.status}" + (f" ({what})" if what else "")


def byte_tokenizer() -> Any:
    """A real ``GGUFTokenizer`` for the tiny model's 256 ids: SmolLM2's three control tokens at 0-2, then a
    token per byte (no merges) and ChatML, built in milliseconds (bytes 0-2 have no token)."""
    from tokenizers import pre_tokenizers

    from flightcheck.impl.tokenizer import GGUFTokenizer

    alphabet = sorted(set(pre_tokenizers.ByteLevel.alphabet()) - {chr(256), chr(257), chr(258)})
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    return GGUFTokenizer.from_metadata({
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt2",
        "tokenizer.ggml.tokens": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + alphabet,
        "tokenizer.ggml.merges": [], "tokenizer.ggml.token_type": [3, 3, 3] + [1] * len(alphabet),
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.chat_template": template})


def chat_engine(model: str, config: EngineConfig, events: str | None, event_history: int | None) -> Any:
    """``load_engine``'s tiny engine with :func:`byte_tokenizer`, so chat can be served (and no EOS)."""
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.runner import ModelRunner
    from flightcheck.impl.tiny import tiny_model

    return Engine(ModelRunner(tiny_model(0), num_pages=config.num_pages), byte_tokenizer(), config,
                  event_log_path=events, model_name="tiny random Llama, byte tokenizer", event_history=event_history)


def attach_monitor(engine: Any) -> Any:
    """The online monitor on ``engine``, as ``serve --monitor`` attaches it."""
    from flightcheck.checks.conform.monitor import Monitor

    return Monitor(engine)


class ProbeServer:
    """The server of ``BASELINE`` with ``settings`` over it, started on a free port of 127.0.0.1."""

    def __init__(self, settings: dict[str, Any], *, chat: bool = False) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="flightcheck-option-")
        self.options = {**BASELINE, **{k: str(Path(self._tmp.name) / "events.jsonl") if v == EVENTS_FILE else v
                                       for k, v in settings.items()}}
        try:
            self.server = open_server(self.options, attach_monitor=attach_monitor,
                                      load=chat_engine if chat else load_engine)
            self.server.start()
        except BaseException:
            self._tmp.cleanup()
            raise
        self.address = self.server.address
        self._closed = False

    def stop(self) -> None:
        """Stops the server and its engine (once), as ``serve`` stops; the event log stays."""
        if not self._closed:
            self._closed = True
            self.server.close()
            self.server.engine.close()

    def close(self) -> None:
        """Stops the server and removes the event log's folder."""
        self.stop()
        self._tmp.cleanup()

    # --- requests ------------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
        """One request on a connection of its own."""
        return exchange(self.address, method, path, body, headers)

    def complete(self, prompt: list[int], max_tokens: int, **extra: Any) -> Reply:
        """A whole completion of ``prompt`` (token ids)."""
        return self.request("POST", "/v1/completions", {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens,
                                                        **extra})

    def metrics(self) -> dict[str, float]:
        """The /metrics samples as ``{"name{labels}": value}``."""
        reply = self.request("GET", "/metrics")
        expect(reply.status == 200, f"GET /metrics: {shown(reply)}")
        samples = {}
        for line in str(reply.body).splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        return samples

    def metric(self, name: str) -> float:
        """One sample of /metrics (0 when absent)."""
        return self.metrics().get(name, 0.0)

    def settle(self, name: str, want: float) -> float:
        """Polls ``name`` in /metrics until it is ``want`` (within :data:`SETTLE_S`); its last value."""
        deadline = time.monotonic() + SETTLE_S
        while (value := self.metric(name)) != want and time.monotonic() < deadline:
            time.sleep(0.05)
        return value

    def events(self) -> list[dict[str, Any]]:
        """The events of the ``--events`` file so far (its header left out)."""
        lines = Path(self.options["events"]).read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines[1:]]

    # --- bursts and held engines ---------------------------------------------------------------
    @contextmanager
    def held(self, arrivals: int) -> Iterator[None]:
        """Holds the engine thread until ``arrivals`` commands have queued after it (or :data:`WAIT_S`
        passed), so that they are drained together when it lets go."""
        entered, queued = threading.Event(), threading.Event()
        loop = self.server.loop

        def hold(engine: Any) -> None:
            entered.set()
            deadline = time.monotonic() + WAIT_S
            while loop.num_commands < arrivals and time.monotonic() < deadline and not queued.is_set():
                time.sleep(0.002)

        holder = threading.Thread(target=_quietly, args=(loop.call, hold, None), daemon=True)
        holder.start()
        entered.wait(WAIT_S)
        try:
            yield
        except BaseException:
            queued.set()  # what was to arrive will not: let the engine go at once
            raise
        finally:
            holder.join(WAIT_S + 1)

    def burst(self, bodies: list[dict[str, Any]], path: str = "/v1/completions") -> list[Reply]:
        """Sends ``bodies`` at once, each on its own connection, arriving at the engine in one drain."""
        replies: list[Any] = [None] * len(bodies)

        def send(i: int) -> None:
            try:
                replies[i] = self.request("POST", path, bodies[i])
            except (OSError, TimeoutError) as error:
                replies[i] = error

        with self.held(len(bodies)):
            threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(len(bodies))]
            for t in threads:
                t.start()
        for t in threads:
            t.join(WAIT_S * 3)
        for i, reply in enumerate(replies):
            expect(isinstance(reply, Reply) and reply.status == 200,
                   f"request {i} of the burst: {reply if not isinstance(reply, Reply) else shown(reply)}")
        return replies

    def stream(self, prompt: list[int], max_tokens: int) -> Any:
        """A streamed completion left running: its socket, once its first token has arrived (its prefill
        is over). Closing the socket is the client going away."""
        sock = connect(self.address)
        body = json.dumps({"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "stream": True}).encode()
        sock.sendall(head(b"POST", "/v1/completions", {"Content-Type": "application/json",
                                                       "Content-Length": str(len(body))}) + body)
        seen, deadline = b"", time.monotonic() + WAIT_S
        while b'"token_ids": [' not in seen and time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if b'"token_ids": [' not in seen:
            sock.close()
            raise ProbeFailed(f"a streamed completion sent no token within {WAIT_S:g} s: {seen[:120]!r}")
        return sock


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:  # the server is shutting down: the hold is over anyway
        pass


def role_of(reply: Reply) -> str:
    """The ``flightcheck.role`` of a completion's reply (leader, follower, solo)."""
    return str((reply.body.get("flightcheck") or {}).get("role"))


def computed(reply: Reply) -> int:
    """The prompt tokens the request computed itself (``flightcheck.prompt_tokens_computed``)."""
    return int((reply.body.get("flightcheck") or {}).get("prompt_tokens_computed", -1))


def cached(reply: Reply) -> int:
    """The prompt tokens the cache served (``usage.prompt_tokens_details.cached_tokens``)."""
    return int(((reply.body.get("usage") or {}).get("prompt_tokens_details") or {}).get("cached_tokens", -1))


__all__ = ["BASELINE", "EVENTS_FILE", "PROMPT", "WAIT_S", "ProbeFailed", "ProbeServer", "attach_monitor",
           "byte_tokenizer", "cached", "chat_engine", "computed", "expect", "role_of", "shown"]
