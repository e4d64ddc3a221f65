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
request IDs, an argument of the wrong type) raises an ``EngineError`` subclass naming the problem before
anything changes; no other exception leaves a public call.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from flightcheck.impl.config import MAX_SEED, EngineConfig, kv_page_bytes
from flightcheck.impl.errors import (EngineError, EventLogError, InvalidArgumentError, InvalidConfigError,
                                     InvalidRequestError, InvalidSamplingError, NoProgressError, UnknownRequestError,
                                     shown)
from flightcheck.impl.events import EventLog, chain_keys, input_key
from flightcheck.impl.request import Phase, Request
from flightcheck.impl.sampling import Sampler, SamplingParams, find_stop
from flightcheck.impl.scheduler import Scheduler

__all__ = ["Engine", "EngineConfig", "Result", "SamplingParams"]

# Request IDs are issued from 0 up; an integer outside the signed 64-bit range cannot be one, and would
# not survive a log reader in another language (smaller unknown IDs are logged as refused notices).
MAX_REQUEST_ID = 2**63 - 1


def _check_id(request_id: object, call: str) -> int:
    """``request_id`` if it is an integer a request could have; ``InvalidArgumentError`` otherwise.
    Why bools and floats are refused: ``True == 1`` and ``2.0 == 2`` would find requests 1 and 2."""
    if isinstance(request_id, bool) or not isinstance(request_id, int):
        raise InvalidArgumentError(f"{call}: request_id must be an integer (an ID add_request returned), "
                                   f"got {type(request_id).__name__} {shown(request_id)}")
    if not -MAX_REQUEST_ID <= request_id <= MAX_REQUEST_ID:
        raise InvalidArgumentError(f"{call}: request_id {shown(request_id)} is outside the signed 64-bit range "
                                   "of request IDs")
    return request_id


def _check_config(config: object) -> EngineConfig:
    if not isinstance(config, EngineConfig):
        raise InvalidConfigError(f"config must be an EngineConfig or None, got {type(config).__name__}")
    return config


def _check_log_options(event_log_path: object, event_history: object) -> None:
    if event_log_path is not None and (not isinstance(event_log_path, (str, os.PathLike)) or event_log_path == ""):
        # Why not any object: open(5, "w") would take over file descriptor 5.
        raise InvalidArgumentError(f"event_log_path must be None or a non-empty path, got {shown(event_log_path)}")
    if event_history is not None and (isinstance(event_history, bool) or not isinstance(event_history, int)
                                      or not 0 <= event_history <= sys.maxsize):
        raise InvalidArgumentError(f"event_history must be None or an integer in [0, {sys.maxsize}], "
                                   f"got {shown(event_history)}")


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
        self.config = EngineConfig(num_pages=runner.num_pages) if config is None else _check_config(config)
        if self.config.num_pages != runner.num_pages:
            raise InvalidConfigError(f"config.num_pages is {self.config.num_pages} but the runner's pools hold "
                                     f"{runner.num_pages} pages; build the ModelRunner with num_pages={self.config.num_pages}")
        # The runner's pools exist already (Engine.tiny and Engine.smollm2 check before building them); the
        # same limit holds however the engine is built.
        self.config.check_pool(runner.kv_bytes // runner.num_pages, "this runner's")
        if tokenizer is not None and not (callable(getattr(tokenizer, "encode", None))
                                          and callable(getattr(tokenizer, "decode", None))):
            raise InvalidArgumentError(f"tokenizer must be None or have encode and decode methods, "
                                       f"got {type(tokenizer).__name__}")
        if isinstance(eos_token_ids, (str, bytes, bytearray)) or not isinstance(eos_token_ids, (Sequence, set, frozenset)):
            raise InvalidArgumentError(f"eos_token_ids must be a list of token ids, got {shown(eos_token_ids)}")
        for t in eos_token_ids:
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < runner.vocab_size:
                raise InvalidArgumentError(f"eos_token_ids holds {shown(t)}, not a token id in [0, {runner.vocab_size})")
        if not isinstance(model_name, str):
            raise InvalidArgumentError(f"model_name must be a string, got {shown(model_name)}")
        _check_log_options(event_log_path, event_history)
        self.runner = runner
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.context = min(self.config.max_context or runner.max_positions, runner.max_positions)
        try:
            self.events = self._open_log(event_log_path, event_history)
        except OSError as error:
            raise EventLogError(f"cannot open the event log {event_log_path}: {error.strerror or error}") from error
        self.scheduler = Scheduler(runner, self.config, self.events, eos_token_ids=frozenset(eos_token_ids),
                                   detokenize=tokenizer.decode if tokenizer is not None else None)
        self._next_request_id = 0
        self._num_idle_steps = 0

    def _open_log(self, event_log_path: str | os.PathLike | None, event_history: int | None) -> EventLog:
        cfg = self.config
        # Why every option: a log read later (flightcheck validate) must know all the spec needs.
        return EventLog(event_log_path, header={
            "policy": {"coordination": cfg.coordination, "release": cfg.release, "publication": cfg.publication,
                       "leader_loss": cfg.leader_loss, "prefix_caching": cfg.prefix_caching,
                       "capacity": cfg.max_running, "chunk": cfg.prefill_chunk_pages,
                       "min_shared_pages": cfg.min_shared_pages},
            "pool": {"num_pages": cfg.num_pages, "page_size": self.runner.page_size},
            "follower_wait_bound": cfg.follower_wait_bound, "context": self.context,
            "max_context": cfg.max_context, "seed": cfg.seed,
            "model": self.model_name,
        }, keep=event_history)

    @classmethod
    def smollm2(cls, config: EngineConfig | None = None, *, path: str | None = None, dequantize: bool | None = None,
                event_log_path: str | None = None, event_history: int | None = None, model=None) -> "Engine":
        """The engine over the real SmolLM2-135M (the cached, verified GGUF), its tokenizer and EOS.
        ``dequantize=None`` lets the loader choose (float32 when the fast BLAS is in effect).
        ``model``: a ``load_smollm2()`` triple already loaded, so that benchmarks build one engine per
        configuration over the same weights."""
        from flightcheck.impl.gguf import load_smollm2
        from flightcheck.impl.runner import ModelRunner

        config = EngineConfig() if config is None else _check_config(config)
        _check_log_options(event_log_path, event_history)
        weights_model, tokenizer, info = model if model is not None else load_smollm2(path, dequantize)
        weights = "float32 (dequantized)" if info.is_dequantized else "4-bit"
        config.check_pool(kv_page_bytes(weights_model.args), "SmolLM2's", allocating=True)  # before the pools
        return cls(ModelRunner(weights_model, num_pages=config.num_pages), tokenizer, config,
                   eos_token_ids=[tokenizer.eos_id], event_log_path=event_log_path,
                   model_name=f"{info.name}, {weights} weights", event_history=event_history)

    @classmethod
    def tiny(cls, config: EngineConfig | None = None, *, seed: int = 0, event_log_path: str | None = None,
             event_history: int | None = None) -> "Engine":
        """The engine over the tiny random-weight model (token-id prompts only; no tokenizer, no EOS)."""
        from flightcheck.impl.runner import ModelRunner
        from flightcheck.impl.tiny import tiny_model

        from flightcheck.impl.tiny import TINY_ARGS

        config = EngineConfig() if config is None else _check_config(config)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise InvalidArgumentError(f"seed must be an integer in [0, {MAX_SEED}], got {shown(seed)}")
        _check_log_options(event_log_path, event_history)
        config.check_pool(kv_page_bytes(TINY_ARGS), "the tiny model's", allocating=True)  # before the pools
        return cls(ModelRunner(tiny_model(seed), num_pages=config.num_pages), None, config,
                   event_log_path=event_log_path, model_name=f"tiny random Llama (seed {seed})",
                   event_history=event_history)

    # --- requests ------------------------------------------------------------------------------
    def add_request(self, prompt: str | Sequence[int], sampling: SamplingParams | dict[str, Any] | None = None) -> int:
        """Validates and enqueues a request; returns its ID. Raises before any change on bad input.

        ``prompt``: text (with a tokenizer) or a sequence of token ids (a list, a tuple; not bytes, a
        dict or a set); ``sampling``: ``SamplingParams``, a dict of its fields, or None."""
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
            odd = [k for k in sampling if not isinstance(k, str)]
            if odd:
                raise InvalidSamplingError(f"sampling field names must be strings, got {shown(odd[0])}")
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
            try:
                token_ids = tuple(self.tokenizer.encode(prompt))
            except UnicodeError as error:  # a lone surrogate, say: text no tokenizer can encode
                raise InvalidRequestError(f"prompt cannot be tokenized: {error}") from None
        elif isinstance(prompt, (bytes, bytearray, memoryview)) or not isinstance(prompt, Sequence):
            # Why not any iterable: bytes look like token ids but are not the vocabulary's, a dict or a
            # set has no order, and an iterator would be consumed by the check.
            raise InvalidRequestError(f"prompt must be a string or a list of token ids, got {type(prompt).__name__}")
        else:
            if len(prompt) > self.context:  # before copying it: a huge range is cheap to pass, not to copy
                raise InvalidRequestError(f"prompt has {len(prompt)} tokens, longer than the context of {self.context}")
            token_ids = tuple(prompt)
        if not token_ids:
            raise InvalidRequestError("prompt is empty: a request needs at least one token")
        vocab = self.runner.vocab_size
        for i, t in enumerate(token_ids):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
                raise InvalidRequestError(f"prompt token {i} is {shown(t)}, not a token id in [0, {vocab})")
        if len(token_ids) > self.context:
            raise InvalidRequestError(f"prompt has {len(token_ids)} tokens, longer than the context of {self.context}")
        return token_ids

    def abort(self, request_id: int) -> None:
        """Cancels a live request (any phase); an unknown or terminated ID raises ``UnknownRequestError``."""
        self._known(_check_id(request_id, "abort"))
        self.scheduler.abort(request_id)

    def forget(self, request_id: int) -> None:
        """Drops a terminated request's record (output, timings), so that a long-running server keeps a
        bounded history; afterwards ``result`` and ``phase`` raise ``UnknownRequestError`` for it, and so
        do ``abort``/``notify_termination``, as for any terminated request. A live request raises."""
        request = self.scheduler.requests.get(_check_id(request_id, "forget"))
        if request is None:
            raise UnknownRequestError(request_id, "never submitted or already forgotten")
        if request.phase.is_live:
            raise EngineError(f"request {request_id} is {request.phase.value}; only a terminated request can be forgotten")
        # Why nothing else to clean: a terminated request holds no pages and the coordinator has let it go.
        del self.scheduler.requests[request_id]

    def notify_termination(self, request_id: int) -> None:
        """A termination notice from outside: a live request is terminated (as an abort); a notice for an
        ID that was never submitted or already terminated is rejected: logged, raised, nothing changed.
        An ID that is not an integer is refused before anything is logged."""
        # Why through abort: a notice is an abort, and checks/conform's mutants patch abort to break both.
        self.abort(_check_id(request_id, "notify_termination"))

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
        request = self._live(request_id, "expire")
        if not self.scheduler.can_expire(request_id):
            raise EngineError(f"request {request_id} is {request.phase.value}, not a blocked follower: nothing to expire")
        self.scheduler.expire(request_id)

    def inject_fault(self, request_id: int) -> None:
        """Test hook: the next forward pass that computes for this request gives non-finite logits for it,
        so the engine fails that request (and no other). Raises for a request that is not live."""
        self._live(request_id, "inject_fault").fault_pending = True

    def hold(self, request_id: int) -> None:
        """Test barrier: the request's prefill does not run until ``resume`` (it may still be admitted)."""
        self._live(request_id, "hold").is_held = True

    def resume(self, request_id: int) -> None:
        self._live(request_id, "resume").is_held = False

    def _live(self, request_id: object, call: str) -> Request:
        return self.scheduler.live(_check_id(request_id, call))

    def _record(self, request_id: object, call: str) -> Request:
        """The record of a submitted request, live or terminated (not forgotten)."""
        request = self.scheduler.requests.get(_check_id(request_id, call))
        if request is None:
            raise UnknownRequestError(request_id, "never submitted")
        return request

    # --- running -------------------------------------------------------------------------------
    def step(self) -> dict[int, list[int]]:
        """One scheduling round and forward pass; returns the new tokens of each request that got one."""
        return {r.request_id: [r.output_token_ids[-1]] for r in self.scheduler.step()}

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    def run(self, max_steps: int | None = None) -> int:
        """Steps until every request has terminated (or ``max_steps``); returns the steps taken.
        Raises ``NoProgressError`` instead of spinning when only held requests are left to make progress."""
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 0):
            raise InvalidArgumentError(f"run: max_steps must be None or an integer >= 0, got {shown(max_steps)}")
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
            raise NoProgressError(f"no progress possible: request(s) {held} are held; call resume() first")

    def stream(self, request_id: int) -> Iterator[int]:
        """Yields the request's output tokens as they are produced, stepping the engine as needed.
        A bad or unknown ID raises here, at the call, not at the first ``next``."""
        return self._stream(self._record(request_id, "stream"))

    def _stream(self, request: Request) -> Iterator[int]:
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
        request = self._record(request_id, "result")
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
        if isinstance(prompts, (str, bytes, bytearray, memoryview)) or not isinstance(prompts, Sequence):
            raise InvalidRequestError(f"generate: prompts must be a list of prompts, got {type(prompts).__name__}")
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
        return self._record(request_id, "phase").phase.value

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

