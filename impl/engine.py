"""The engine's API: add requests, step, stream, abort, and the termination-validation entry point.

For example::

    from flightcheck.impl.engine import Engine, EngineConfig
    from flightcheck.impl.runner import ModelRunner
    from flightcheck.impl.sampling import SamplingParams
    from flightcheck.impl.tiny import tiny_model

    engine = Engine(ModelRunner(tiny_model(), num_pages=256), config=EngineConfig(num_pages=256))
    results = engine.generate([[1, 2, 3] * 20] * 4, SamplingParams(max_tokens=8))
    engine.counters["num_recovered_tokens"]   # 3 followers x 48 tokens = 144

Bad input (an empty prompt, a prompt longer than the context, out-of-range sampling values, unknown
request IDs) raises an ``EngineError`` subclass naming the problem before anything changes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.errors import EngineError, InvalidConfigError, InvalidRequestError, InvalidSamplingError, UnknownRequestError
from flightcheck.impl.events import EventLog, chain_keys, input_key
from flightcheck.impl.request import Phase, Request
from flightcheck.impl.sampling import Sampler, SamplingParams, find_stop
from flightcheck.impl.scheduler import Scheduler

__all__ = ["Engine", "EngineConfig", "Result", "SamplingParams"]


class TextCodec(Protocol):
    """What the engine needs from a tokenizer: text to ids and back."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, token_ids: Sequence[int]) -> str: ...


@dataclass(frozen=True, slots=True)
class Result:
    """A terminated request's output and timings (seconds from ``add_request``)."""

    request_id: int
    role: str
    prompt_token_ids: tuple[int, ...]
    output_token_ids: list[int]      # without a final end-of-sequence token
    text: str | None                 # decoded output, cut before a stop string; None without a tokenizer
    finish_reason: str | None        # "eos", "stop", "length", "abort" or "error"
    recovered_tokens: int
    ttft_s: float | None
    completion_s: float | None
    error: str | None = None         # why it failed (finish_reason "error")


class Engine:
    """A paged-KV, prefix-caching, single-flight LLM engine over a ``ModelRunner``."""

    def __init__(self, runner, tokenizer: TextCodec | None = None, config: EngineConfig | None = None, *,
                 eos_token_ids: Sequence[int] = (), event_log_path: str | None = None, model_name: str = "custom",
                 event_history: int | None = None) -> None:
        self.config = config or EngineConfig(num_pages=runner.num_pages)
        if self.config.num_pages != runner.num_pages:
            raise InvalidConfigError(f"config.num_pages is {self.config.num_pages} but the runner's pools hold "
                                     f"{runner.num_pages} pages; build the ModelRunner with num_pages={self.config.num_pages}")
        self.runner = runner
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.context = min(self.config.max_context or runner.max_positions, runner.max_positions)
        cfg = self.config
        # Why every option: a log read later (flightcheck validate) must know all the spec needs.
        self.events = EventLog(event_log_path, header={
            "policy": {"coordination": cfg.coordination, "release": cfg.release, "publication": cfg.publication,
                       "leader_loss": cfg.leader_loss, "prefix_caching": cfg.prefix_caching,
                       "capacity": cfg.max_running, "chunk": cfg.prefill_chunk_pages,
                       "min_shared_pages": cfg.min_shared_pages},
            "pool": {"num_pages": cfg.num_pages, "page_size": runner.page_size},
            "follower_wait_bound": cfg.follower_wait_bound, "context": self.context,
            "max_context": cfg.max_context, "seed": cfg.seed,
            "model": model_name,
        }, keep=event_history)
        self.scheduler = Scheduler(runner, self.config, self.events, eos_token_ids=frozenset(eos_token_ids),
                                   detokenize=tokenizer.decode if tokenizer is not None else None)
        self._next_request_id = 0
        self._num_idle_steps = 0

    @classmethod
    def smollm2(cls, config: EngineConfig | None = None, *, path: str | None = None, dequantize: bool | None = None,
                event_log_path: str | None = None, event_history: int | None = None, model=None) -> "Engine":
        """The engine over the real SmolLM2-135M (the cached, verified GGUF), its tokenizer and EOS.
        ``dequantize=None`` lets the loader choose (float32 when the fast BLAS is in effect).
        ``model``: a ``load_smollm2()`` triple already loaded, so that benchmarks build one engine per
        configuration over the same weights."""
        from flightcheck.impl.gguf import load_smollm2
        from flightcheck.impl.runner import ModelRunner

        config = config or EngineConfig()
        weights_model, tokenizer, info = model if model is not None else load_smollm2(path, dequantize)
        weights = "float32 (dequantized)" if info.is_dequantized else "4-bit"
        return cls(ModelRunner(weights_model, num_pages=config.num_pages), tokenizer, config,
                   eos_token_ids=[tokenizer.eos_id], event_log_path=event_log_path,
                   model_name=f"{info.name}, {weights} weights", event_history=event_history)

    @classmethod
    def tiny(cls, config: EngineConfig | None = None, *, seed: int = 0, event_log_path: str | None = None,
             event_history: int | None = None) -> "Engine":
        """The engine over the tiny random-weight model (token-id prompts only; no tokenizer, no EOS)."""
        from flightcheck.impl.runner import ModelRunner
        from flightcheck.impl.tiny import tiny_model

        config = config or EngineConfig()
        return cls(ModelRunner(tiny_model(seed), num_pages=config.num_pages), None, config,
                   event_log_path=event_log_path, model_name=f"tiny random Llama (seed {seed})",
                   event_history=event_history)

    # --- requests ------------------------------------------------------------------------------
    def add_request(self, prompt: str | Sequence[int], sampling: SamplingParams | dict[str, Any] | None = None) -> int:
        """Validates and enqueues a request; returns its ID. Raises before any change on bad input."""
        return self._enqueue(*self._prepare(prompt, sampling))

    def _prepare(self, prompt: str | Sequence[int],
                 sampling: SamplingParams | dict[str, Any] | None) -> tuple[tuple[int, ...], SamplingParams, int]:
        """Every check of a new request, with no side effect: (token ids, sampling, KV positions needed)."""
        params = self._sampling(sampling)
        token_ids = self._token_ids(prompt)
        num_positions = min(len(token_ids) + params.max_tokens - 1, self.context)
        num_pages = -(-num_positions // self.runner.page_size)
        if num_pages > self.config.num_pages:
            raise InvalidRequestError(
                f"request needs {num_pages} KV pages ({len(token_ids)} prompt tokens + max_tokens {params.max_tokens}) "
                f"but the pool has {self.config.num_pages}; shorten it or raise config.num_pages")
        return token_ids, params, num_positions

    def _enqueue(self, token_ids: tuple[int, ...], params: SamplingParams, num_positions: int) -> int:
        request_id = self._next_request_id
        self._next_request_id += 1
        page_size = self.runner.page_size
        request = Request(
            request_id=request_id, token_ids=token_ids, sampling=params,
            sampler=Sampler(params, default_seed=(self.config.seed, request_id)),
            input_key=input_key(token_ids), page_keys=chain_keys(token_ids, (len(token_ids) - 1) // page_size, page_size),
            page_size=page_size, max_positions=num_positions, arrival_time=time.perf_counter())
        self.scheduler.arrive(request)
        return request_id

    def _sampling(self, sampling: SamplingParams | dict[str, Any] | None) -> SamplingParams:
        if sampling is None:
            return SamplingParams()
        if isinstance(sampling, dict):
            unknown = sorted(set(sampling) - set(SamplingParams.__dataclass_fields__))
            if unknown:
                raise InvalidSamplingError(f"unknown sampling field(s): {', '.join(unknown)}")
            sampling = SamplingParams(**sampling)
        if not isinstance(sampling, SamplingParams):
            raise InvalidSamplingError(f"sampling must be SamplingParams, a dict or None, got {type(sampling).__name__}")
        if sampling.stop and self.tokenizer is None:
            raise InvalidSamplingError("sampling.stop needs a tokenizer to decode the output; this engine has none")
        return sampling

    def _token_ids(self, prompt: str | Sequence[int]) -> tuple[int, ...]:
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise InvalidRequestError("a text prompt needs a tokenizer; pass token ids or build the engine with one")
            if not prompt:
                raise InvalidRequestError("prompt is empty: a request needs at least one token")
            token_ids = tuple(self.tokenizer.encode(prompt))
        else:
            token_ids = tuple(prompt)
        if not token_ids:
            raise InvalidRequestError("prompt is empty: a request needs at least one token")
        vocab = self.runner.vocab_size
        for i, t in enumerate(token_ids):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
                raise InvalidRequestError(f"prompt token {i} is {t!r}, not a token id in [0, {vocab})")
        if len(token_ids) > self.context:
            raise InvalidRequestError(f"prompt has {len(token_ids)} tokens, longer than the context of {self.context}")
        return token_ids

    def abort(self, request_id: int) -> None:
        """Cancels a live request (any phase); an unknown or terminated ID raises ``UnknownRequestError``."""
        self._known(request_id)
        self.scheduler.abort(request_id)

    def forget(self, request_id: int) -> None:
        """Drops a terminated request's record (output, timings), so that a long-running server keeps a
        bounded history; afterwards ``result`` and ``phase`` raise ``UnknownRequestError`` for it, and so
        do ``abort``/``notify_termination``, as for any terminated request. A live request raises."""
        request = self.scheduler.requests.get(request_id)
        if request is None:
            raise UnknownRequestError(request_id, "never submitted or already forgotten")
        if request.phase.is_live:
            raise EngineError(f"request {request_id} is {request.phase.value}; only a terminated request can be forgotten")
        # Why nothing else to clean: a terminated request holds no pages and the coordinator has let it go.
        del self.scheduler.requests[request_id]

    def notify_termination(self, request_id: int) -> None:
        """A termination notice from outside: a live request is terminated (as an abort); a notice for an
        ID that was never submitted or already terminated is rejected: logged, raised, nothing changed."""
        self.abort(request_id)

    def _known(self, request_id: int) -> Request:
        try:
            return self.scheduler.live(request_id)
        except UnknownRequestError as error:
            self.events.emit("notify", request=request_id, accepted=False, error=str(error))
            raise

    def expire(self, request_id: int) -> None:
        """A blocked follower stops waiting for its flight, or a leader waiting via another flight stops
        waiting for it (a client-side deadline): it computes for itself. An unknown or terminated ID
        raises ``UnknownRequestError``; a request that is not blocked, ``EngineError``."""
        request = self._live(request_id)
        if not self.scheduler.can_expire(request_id):
            raise EngineError(f"request {request_id} is {request.phase.value}, not a blocked follower: nothing to expire")
        self.scheduler.expire(request_id)

    def inject_fault(self, request_id: int) -> None:
        """Test hook: the next forward pass that computes for this request gives non-finite logits for it,
        so the engine fails that request (and no other). Raises for a request that is not live."""
        self._live(request_id).fault_pending = True

    def hold(self, request_id: int) -> None:
        """Test barrier: the request's prefill does not run until ``resume`` (it may still be admitted)."""
        self._live(request_id).is_held = True

    def resume(self, request_id: int) -> None:
        self._live(request_id).is_held = False

    def _live(self, request_id: int) -> Request:
        return self.scheduler.live(request_id)

    # --- running -------------------------------------------------------------------------------
    def step(self) -> dict[int, list[int]]:
        """One scheduling round and forward pass; returns the new tokens of each request that got one."""
        return {r.request_id: [r.output_token_ids[-1]] for r in self.scheduler.step()}

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    def run(self, max_steps: int | None = None) -> int:
        """Steps until every request has terminated (or ``max_steps``); returns the steps taken.
        Raises ``EngineError`` instead of spinning when only held requests are left to make progress."""
        num_steps = 0
        while self.has_unfinished() and (max_steps is None or num_steps < max_steps):
            self._step_or_stall()
            num_steps += 1
        return num_steps

    def _step_or_stall(self) -> None:
        num_events = self.events.num_emitted
        self.step()
        if self.events.num_emitted > num_events:
            self._num_idle_steps = 0
            return
        # Why a margin: a blocked follower may still be counting towards its wait bound.
        self._num_idle_steps += 1
        if self._num_idle_steps > (self.config.follower_wait_bound or 0) + 1:
            held = sorted(r.request_id for r in self.scheduler.requests.values() if r.is_held and r.phase.is_live)
            raise EngineError(f"no progress possible: request(s) {held} are held; call resume() first")

    def stream(self, request_id: int) -> Iterator[int]:
        """Yields the request's output tokens as they are produced, stepping the engine as needed."""
        request = self.scheduler.requests.get(request_id)
        if request is None:
            raise UnknownRequestError(request_id, "never submitted")
        num_sent = 0
        while True:
            tokens = self._visible_tokens(request)
            while num_sent < len(tokens):
                yield tokens[num_sent]
                num_sent += 1
            if not request.phase.is_live:
                return
            self._step_or_stall()

    def _visible_tokens(self, request: Request) -> list[int]:
        tokens = request.output_token_ids
        if request.finish_reason == "eos":
            return tokens[:-1]
        return tokens

    def result(self, request_id: int) -> Result:
        request = self.scheduler.requests.get(request_id)
        if request is None:
            raise UnknownRequestError(request_id, "never submitted")
        tokens = self._visible_tokens(request)
        text = None
        if self.tokenizer is not None:
            text = self.tokenizer.decode(tokens)
            cut = find_stop(text, request.sampling.stop) if request.sampling.stop else None
            text = text if cut is None else text[:cut]
        return Result(request.request_id, request.role, request.token_ids, list(tokens), text,
                      request.finish_reason, request.recovered_tokens, request.ttft_s, request.completion_s,
                      request.error)

    def generate(self, prompts: Sequence[str | Sequence[int]],
                 sampling: SamplingParams | dict[str, Any] | Sequence[SamplingParams] | None = None) -> list[Result]:
        """Adds every prompt at once (one sampling for all, or one each), runs to completion, returns results."""
        if isinstance(sampling, (list, tuple)):
            if len(sampling) != len(prompts):
                raise InvalidSamplingError(f"got {len(sampling)} sampling settings for {len(prompts)} prompts")
            settings = list(sampling)
        else:
            settings = [sampling] * len(prompts)
        prepared = [self._prepare(p, s) for p, s in zip(prompts, settings)]  # all checks before any change
        request_ids = [self._enqueue(*item) for item in prepared]
        while any(self.scheduler.requests[i].phase.is_live for i in request_ids):
            self._step_or_stall()
        return [self.result(i) for i in request_ids]

    # --- introspection -------------------------------------------------------------------------
    @property
    def counters(self) -> dict[str, int]:
        return self.scheduler.counters.as_dict()

    def info(self) -> dict[str, Any]:
        """What runs and how: the model, whether MLX's fast BLAS path is in effect, the pool and the config."""
        from dataclasses import asdict

        from flightcheck.impl.blas import blas_status

        status = blas_status()
        return {"model": self.model_name, "blas": status.describe(), "is_fast_blas": status.is_fast,
                "device": status.device, "context": self.context, "page_size": self.runner.page_size,
                "num_pages": self.runner.num_pages, "kv_bytes": self.runner.kv_bytes, "config": asdict(self.config)}

    def phase(self, request_id: int) -> str:
        request = self.scheduler.requests.get(request_id)
        if request is None:
            raise UnknownRequestError(request_id, "never submitted")
        return request.phase.value

    def snapshot(self) -> tuple:
        """Everything that an error must leave unchanged (the event log aside)."""
        return (self._next_request_id, self.scheduler.snapshot())

    def check_invariants(self) -> None:
        """Asserts the pool's partition and that every reference is held by a live request's block table
        (a waiting request's are its pins: cached pages only)."""
        pool = self.scheduler.pool
        pool.check_invariants()
        refs = [0] * pool.num_pages
        for request in self.scheduler.requests.values():
            if request.phase in (Phase.PREFILL, Phase.DECODE, Phase.WAITING):
                for page_id in request.block_table:
                    refs[page_id] += 1
                if request.phase is Phase.WAITING:
                    assert all(pool.pages[p].is_cached for p in request.block_table), \
                        f"waiting request {request.request_id} pins a page that is not cached"
            else:
                assert not request.block_table, f"request {request.request_id} ({request.phase.value}) holds pages"
        assert refs == [p.ref_count for p in pool.pages], "page references out of step with block tables"
        assert self.scheduler.num_reserved <= pool.num_available, "reservations exceed the available pages"

    def close(self) -> None:
        self.events.close()

