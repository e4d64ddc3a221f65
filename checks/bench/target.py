"""Where a benchmark's requests go: the engine in this process, or a server over HTTP.

Both targets offer the same three calls, so each workload is written once:

- ``start(prompt, max_tokens)`` sends a request (a list of token ids) and returns its handle;
- ``wait_tokens(handle, k)`` returns once that request has produced ``k`` tokens;
- ``finish()`` waits for every request and returns one :class:`Measure` each, in start order.

:class:`EngineTarget` drives an :class:`~flightcheck.impl.engine.Engine` directly (single-threaded,
``add_request`` / ``step``; times from the engine's own clocks, from ``add_request``).
:class:`HttpTarget` streams each request with the official ``openai`` client on its own thread
(times measured by the client, from just before the request is sent); ``recovered`` comes from
``usage.prompt_tokens_details.cached_tokens``, the role from flightcheck's reply extension when the
server is flightcheck.

For example::

    >>> from flightcheck.impl.engine import Engine, EngineConfig
    >>> target = EngineTarget(Engine.tiny(EngineConfig(num_pages=64)))
    >>> handles = [target.start([1, 2, 3] * 20, 4) for _ in range(2)]
    >>> [(m.role, m.recovered, m.num_tokens) for m in target.finish()]
    [('leader', 0, 4), ('follower', 48, 4)]
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from flightcheck.impl.sampling import SamplingParams


@dataclass(frozen=True, slots=True)
class Measure:
    """One request as the benchmark saw it (seconds)."""

    ttft_s: float
    completion_s: float
    recovered: int
    num_tokens: int
    role: str | None


class Target(Protocol):
    def start(self, prompt: list[int], max_tokens: int) -> int: ...

    def wait_tokens(self, handle: int, k: int) -> None: ...

    def finish(self) -> list[Measure]: ...


class EngineTarget:
    """Requests straight into an engine; outputs of fixed length (EOS ignored), greedy."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.request_ids: list[int] = []

    def start(self, prompt: list[int], max_tokens: int) -> int:
        self.request_ids.append(self.engine.add_request(prompt, SamplingParams(max_tokens=max_tokens, ignore_eos=True)))
        return len(self.request_ids) - 1

    def wait_tokens(self, handle: int, k: int) -> None:
        request = self.engine.scheduler.requests[self.request_ids[handle]]
        while len(request.output_token_ids) < k and request.phase.is_live:
            self.engine.step()

    def abort_after_computing(self, handle: int, tokens: int) -> None:
        """Steps the engine until that request has computed ``tokens`` prompt tokens, then aborts it
        (a client that goes away mid-prefill; in process only)."""
        request_id = self.request_ids[handle]
        request = self.engine.scheduler.requests[request_id]
        while request.num_computed < tokens and request.phase.is_live:
            self.engine.step()
        self.engine.abort(request_id)

    def finish(self) -> list[Measure]:
        self.engine.run()
        measures = []
        for request_id in self.request_ids:
            r = self.engine.result(request_id)
            measures.append(Measure(r.ttft_s, r.completion_s, r.recovered_tokens, len(r.output_token_ids), r.role))
        return measures

    @property
    def prefill_tokens(self) -> int:
        return self.engine.counters["num_prefill_tokens"]


class HttpTarget:
    """Each request streamed by its own ``openai`` client thread against ``base_url`` (…/v1)."""

    def __init__(self, base_url: str, model: str, *, timeout: float = 600.0) -> None:
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=timeout)
        self.model = model
        self._threads: list[threading.Thread] = []
        self._records: list[dict] = []
        self._cond = threading.Condition()
        self._gate = threading.Event()

    def start(self, prompt: list[int], max_tokens: int) -> int:
        """Prepares the request; requests started together are sent together, at the next
        ``wait_tokens`` or ``finish`` (a burst arrives as one, not spread over thread start-ups)."""
        record = {"tokens": 0, "error": None, "done": False}
        self._records.append(record)
        thread = threading.Thread(target=self._stream, args=(record, prompt, max_tokens, self._gate), daemon=True)
        self._threads.append(thread)
        thread.start()
        return len(self._records) - 1

    def _launch(self) -> None:
        self._gate.set()
        self._gate = threading.Event()

    def _stream(self, record: dict, prompt: list[int], max_tokens: int, gate: threading.Event) -> None:
        gate.wait(600)
        sent = time.perf_counter()
        try:
            stream = self.client.completions.create(
                model=self.model, prompt=prompt, max_tokens=max_tokens, temperature=0, stream=True,
                stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
            for chunk in stream:
                now = time.perf_counter()
                if chunk.choices:
                    got = len(getattr(chunk.choices[0], "token_ids", None) or ()) or (1 if chunk.choices[0].text else 0)
                    with self._cond:
                        if got and "first" not in record:
                            record["first"] = now - sent
                        record["tokens"] += got
                        record["last"] = now - sent
                        self._cond.notify_all()
                    extension = getattr(chunk, "flightcheck", None)
                    if extension:
                        record["role"] = extension.get("role")
                if chunk.usage is not None:
                    details = chunk.usage.prompt_tokens_details
                    record["recovered"] = (details.cached_tokens or 0) if details else 0
                    record["completion_tokens"] = chunk.usage.completion_tokens
        except Exception as error:  # reported by finish(): a benchmark never hides a failed request
            record["error"] = f"{type(error).__name__}: {error}"
        finally:
            with self._cond:
                record["done"] = True
                self._cond.notify_all()

    def wait_tokens(self, handle: int, k: int) -> None:
        self._launch()
        record = self._records[handle]
        with self._cond:
            self._cond.wait_for(lambda: record["tokens"] >= k or record["done"], timeout=600)

    def finish(self) -> list[Measure]:
        self._launch()
        for thread in self._threads:
            thread.join(600)
        errors = [r["error"] for r in self._records if r["error"] or not r["done"]]
        if errors:
            raise RuntimeError(f"{len(errors)} request(s) failed over HTTP; first: {errors[0]}")
        return [Measure(r["first"], r["last"], r.get("recovered", 0), r.get("completion_tokens", r["tokens"]),
                        r.get("role")) for r in self._records]
