"""The OpenAI-compatible routes (Starlette): completions, chat, models, health, metrics, info.

Every handler does all its checks before anything reaches the engine: the body's size (refused by its
``Content-Length`` before a byte of it is read, or while reading a chunked one) and its deadline, the
JSON, the fields (:mod:`flightcheck.impl.server.schema`), the model name, and, after tokenizing on a
worker thread (never the engine thread), the prompt against the context and ``max_tokens`` against
what is left of it. Errors are OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``,
whole or mid-stream alike; every 5xx is also logged (logger ``flightcheck.server``) with its path. With an
API key, every ``/v1/*`` request without ``Authorization: Bearer <key>`` is a 401 before its body is read.

A streaming reply is server-sent events (``data: {chunk}`` lines, then ``data: [DONE]``); when the
client goes away mid-stream, Starlette cancels the generator and its request is aborted. A
non-streaming reply watches for the client's disconnect the same way.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from flightcheck.impl.errors import EngineError
from flightcheck.impl.request import FINISH_ABORTED
from flightcheck.impl.server.loop import Delivery, EngineLoop, ServerError
from flightcheck.impl.server.metrics import CONTENT_TYPE, ServerMetrics
from flightcheck.impl.server.schema import (
    DEFAULT_MAX_TOKENS, MAX_BODY_DEPTH, ChatRequest, CompletionRequest, RequestError, parse, parse_int, prompt_parts,
    sampling_of,
)
from flightcheck.impl.tokenizer import ChatMessage

log = logging.getLogger("flightcheck.server")


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit and timeout of the server (the ``serve`` options of the same names)."""

    max_body_bytes: int = 1 << 20       # a request body above this is refused (413) before it is read
    body_timeout_s: float = 30.0        # a body not complete by then is refused (408)
    header_timeout_s: float = 10.0      # a connection whose request headers take longer is closed
    keep_alive_s: float = 5.0           # an idle keep-alive connection is closed after this
    max_connections: int = 256          # at this many open connections the idlest gives way; all busy: 503
    max_connections_per_client: int = 128  # one client address's open connections (beyond: 503 when busy)
    shutdown_timeout_s: float = 10.0    # replies still open this long after shutdown began are cut
    default_max_tokens: int = DEFAULT_MAX_TOKENS  # a chat naming no max_tokens generates at most this many

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_connections", "max_connections_per_client", "default_max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("body_timeout_s", "header_timeout_s", "keep_alive_s", "shutdown_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")


def error_response(status: int, message: str, kind: str = "invalid_request_error", param: str | None = None,
                   code: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status)


async def read_body(request: Request, limits: Limits) -> Any:
    """The request's JSON, under the size limit and the body deadline; ``RequestError`` otherwise."""
    declared = request.headers.get("content-length")
    if declared is not None and int(declared) > limits.max_body_bytes:  # h11 has checked it is an integer
        raise RequestError(f"the request body is {int(declared)} bytes, above the limit of "
                           f"{limits.max_body_bytes} bytes", None, 413, "body_too_large")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(limits.body_timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body_bytes:
                    raise RequestError(f"the request body is above the limit of {limits.max_body_bytes} bytes",
                                       None, 413, "body_too_large")
                chunks.append(chunk)
    except TimeoutError:
        raise RequestError(f"the request body did not arrive within {limits.body_timeout_s:g} s", None, 408,
                           "body_timeout") from None
    try:
        return json.loads(b"".join(chunks) or b"null", parse_int=parse_int)  # a 5000-digit literal: a 400, named
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RequestError(f"the request body is not valid JSON: {error}", None) from None
    except RecursionError:  # e.g. 100,000 "[": the parser recurses once per level
        raise RequestError(f"the request body nests arrays or objects too deeply to parse (at most "
                           f"{MAX_BODY_DEPTH} levels are accepted)", None) from None


class OpenAIApp:
    """The routes over one :class:`EngineLoop`; ``model_id`` is the only model name accepted."""

    def __init__(self, loop: EngineLoop, metrics: ServerMetrics, limits: Limits, model_id: str, *,
                 api_key: str | None = None) -> None:
        self.loop, self.metrics, self.limits, self.model_id = loop, metrics, limits, model_id
        engine = loop.engine
        self.tokenizer, self.context, self.created = engine.tokenizer, engine.context, int(time.time())
        self.info = engine.info()
        routes = [Route("/v1/completions", self.completions, methods=["POST"]),
                  Route("/v1/chat/completions", self.chat, methods=["POST"]),
                  Route("/v1/models", self.models, methods=["GET"]),
                  Route("/health", self.health, methods=["GET"]),
                  Route("/metrics", self.metrics_text, methods=["GET"]),
                  Route("/info", self.info_json, methods=["GET"])]
        guard = [Middleware(_ApiKeyGuard, key=api_key, on_refused=self.counted_error)] if api_key else []
        self.app = Starlette(routes=routes, middleware=guard,
                             exception_handlers={HTTPException: self._http_error, Exception: self._unexpected_error})

    # --- small endpoints -----------------------------------------------------------------------
    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": self.model_id, "object": "model", "created": self.created, "owned_by": "flightcheck",
             "context_length": self.context}]})

    async def health(self, request: Request) -> Response:
        loop = self.loop
        status = "failed" if loop.failure else "degraded" if loop.conformance else "ok"
        body = {"status": status, "engine_thread": loop.is_running, "failure": loop.failure,
                "conformance_failure": loop.conformance, "pages": loop.snapshot.pages,
                "live_requests": loop.snapshot.phases}
        return JSONResponse(body, 200 if status != "failed" and loop.is_running else 503)

    async def metrics_text(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def info_json(self, request: Request) -> Response:
        return JSONResponse(self.info)

    async def _http_error(self, request: Request, exc: HTTPException) -> Response:
        what = "no such endpoint" if exc.status_code == 404 else exc.detail
        return self._error(request, exc.status_code, f"{what}: {request.method} {request.url.path}",
                           "invalid_request_error")

    async def _unexpected_error(self, request: Request, exc: Exception) -> Response:
        # Why: Starlette's own 500 is plain text, outside OpenAI's shape and logged without the path;
        # it re-raises the error after this reply, so uvicorn still logs the traceback.
        return self._error(request, 500, f"internal error: {_first_line(exc)}", "server_error")

    # --- completions ---------------------------------------------------------------------------
    async def completions(self, request: Request) -> Response:
        return await self._serve(request, CompletionRequest)

    async def chat(self, request: Request) -> Response:
        return await self._serve(request, ChatRequest)

    async def _serve(self, request: Request, model_class: type) -> Response:
        try:
            body = parse(model_class, await read_body(request, self.limits))
            if body.model != self.model_id:
                raise RequestError(f"the model {body.model!r} does not exist; this server serves {self.model_id!r}",
                                   "model", 404, "model_not_found")
            token_ids = await self._token_ids(body)
            sampling = sampling_of(body, len(token_ids), self.context, has_tokenizer=self.tokenizer is not None,
                                   default_max_tokens=self.limits.default_max_tokens)
            request_id, out = await self.loop.submit(token_ids, sampling)
        except RequestError as error:
            return self._error(request, error.status, error.message, "invalid_request_error", error.param, error.code)
        except EngineError as error:  # the engine's own checks (e.g. the page pool), nothing enqueued
            return self._error(request, 400, str(error), "invalid_request_error", _param_of(error))
        except ServerError as error:
            return self._error(request, error.status, error.message, error.kind, error.param)
        except ClientDisconnect:
            return Response(status_code=499)
        except Exception as error:  # the monitor rejected the arrival, or a bug: never a bare traceback
            return self._error(request, 500, f"internal error: {_first_line(error)}", "server_error", exc=error)
        reply = _Reply(self, body, request.url.path, request_id, len(token_ids), sampling.stop)
        if body.stream:
            return StreamingResponse(reply.events(out), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                                     background=BackgroundTask(reply.cleanup))
        return await reply.whole(out, request)

    def _error(self, request: Request, status: int, message: str, kind: str, param: str | None = None,
               code: str | None = None, *, exc: BaseException | None = None) -> Response:
        self.counted_error(request.url.path, status, message, exc)
        return error_response(status, message, kind, param, code)

    def counted_error(self, path: str, status: int, message: str, exc: BaseException | None = None) -> None:
        """Counts an error reply in /metrics; a 5xx is logged too (the operator's only trace of it)."""
        self.metrics.http_errors.labels(str(status)).inc()
        if status >= 500:
            # Why a warning for 503: it is the shutdown or an unavailable engine, not a fault of this request.
            level = logging.WARNING if status == 503 else logging.ERROR
            log.log(level, "%s: %d %s", path, status, message, exc_info=exc)

    async def _token_ids(self, body: Any) -> list[int]:
        """Token ids of the prompt; text is tokenized on a worker thread, never the engine's."""
        if isinstance(body, ChatRequest):
            if self.tokenizer is None:
                raise RequestError("chat needs a model with a tokenizer; this one takes token ids "
                                   "(use /v1/completions with a list of token ids)", "messages")
            messages = [ChatMessage(m.role, m.text) for m in body.messages]
            self._fits_before_tokenizing(sum(len(m.content) for m in messages), len(messages), "messages")
            # Why encode_messages: a message's text must stay text; "<|im_end|>" in it is not a marker.
            return await anyio.to_thread.run_sync(self.tokenizer.encode_messages, messages)
        prompt = prompt_parts(body)
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise RequestError("a text prompt needs a model with a tokenizer; send a list of token ids", "prompt")
            self._fits_before_tokenizing(len(prompt), 0, "prompt")
            return await anyio.to_thread.run_sync(self.tokenizer.encode, prompt)
        vocab = self.loop.engine.runner.vocab_size
        for i, token in enumerate(prompt):
            if not 0 <= token < vocab:
                raise RequestError(f"prompt token {i} is {token}, not a token id in [0, {vocab})", "prompt")
        return list(prompt)

    def _fits_before_tokenizing(self, num_chars: int, num_messages: int, param: str) -> None:
        """Refuses text that cannot fit the context whatever its tokens, before it is tokenized: no token
        spans more than the tokenizer's longest, and every chat message costs its turn's markers."""
        most = self.context * self.tokenizer.max_token_chars
        if num_chars > most:
            raise RequestError(f"the {param} has {num_chars:,} characters; no text of more than {most:,} fits the "
                               f"context of {self.context} tokens (a token spans at most "
                               f"{self.tokenizer.max_token_chars} characters)", param)
        if num_messages * MIN_TOKENS_PER_MESSAGE > self.context:
            raise RequestError(f"the chat has {num_messages:,} messages; each takes at least "
                               f"{MIN_TOKENS_PER_MESSAGE} tokens of markup, so at most "
                               f"{self.context // MIN_TOKENS_PER_MESSAGE:,} fit the context of {self.context} "
                               "tokens", param)


class _ApiKeyGuard:
    """Refuses every ``/v1/*`` request without ``Authorization: Bearer <key>`` (401, OpenAI's shape), before
    its body is read; /health, /metrics and /info stay open to probes and scrapers."""

    def __init__(self, app: ASGIApp, key: str, on_refused: Any) -> None:
        self.app, self.key, self.on_refused = app, key.encode(), on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == "/v1" or path.startswith("/v1/")):
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization")
        scheme, _, token = (given or b"").partition(b" ")
        if given is not None and scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key):
            await self.app(scope, receive, send)
            return
        message = ("the API key is not valid" if given is not None else
                   "no API key: send the header 'Authorization: Bearer <key>'")
        self.on_refused(path, 401, message)
        await error_response(401, message, "invalid_request_error", None, "invalid_api_key")(scope, receive, send)


def _first_line(error: BaseException) -> str:
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


# Why 4: a ChatML turn is <|im_start|>, its role, a newline, <|im_end|> and a newline (5 tokens for an empty
# message with SmolLM2's tokenizer); 4 is a floor even if the role and a newline merged into one token.
MIN_TOKENS_PER_MESSAGE = 4


def _param_of(error: EngineError) -> str | None:
    text = str(error)
    if text.startswith("sampling."):
        return text.split()[0].removeprefix("sampling.")
    return "prompt" if "prompt" in text else None


class _Reply:
    """One request's reply, streamed as events or collected whole."""

    def __init__(self, app: OpenAIApp, body: Any, path: str, request_id: int, num_prompt_tokens: int,
                 stop: tuple[str, ...]) -> None:
        self.app, self.body, self.path, self.request_id = app, body, path, request_id
        self.num_prompt_tokens, self.stop = num_prompt_tokens, stop
        self.is_chat = isinstance(body, ChatRequest)
        self.id = f"{'chatcmpl' if self.is_chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
        self.token_ids: list[int] = []
        self.num_text_sent = 0
        self.how: str | None = None  # how a stream closed: done, error, disconnect (once)

    # --- text ----------------------------------------------------------------------------------
    def _new_text(self, final_text: str | None) -> str:
        """Text not yet sent; without the final text, hold back what a stop string could still cut
        and an incomplete UTF-8 character."""
        tokenizer = self.app.tokenizer
        if tokenizer is None:
            return ""
        if final_text is not None:
            text = final_text
        else:
            text = tokenizer.decode(self.token_ids)
            if text.endswith("\ufffd"):
                return ""
            hold = max((len(s) for s in self.stop), default=1) - 1
            text = text[:max(len(text) - hold, self.num_text_sent)]
        piece, self.num_text_sent = text[self.num_text_sent:], max(len(text), self.num_text_sent)
        return piece

    def _choice(self, text: str, token_ids: list[int], finish_reason: str | None, *, delta: bool) -> dict:
        if self.is_chat:
            message = {"role": "assistant", "content": text}
            content = {"delta": message} if delta else {"message": message}
        else:
            content = {"text": text}
        return {"index": 0, **content, "token_ids": token_ids, "finish_reason": finish_reason, "logprobs": None}

    def _usage(self, result: Any) -> dict:
        completion = len(result.output_token_ids)
        return {"prompt_tokens": self.num_prompt_tokens, "completion_tokens": completion,
                "total_tokens": self.num_prompt_tokens + completion,
                "prompt_tokens_details": {"cached_tokens": result.recovered_tokens}}

    def _envelope(self, choices: list, **extra: Any) -> dict:
        kind = ("chat.completion.chunk" if self.body.stream else "chat.completion") if self.is_chat else "text_completion"
        return {"id": self.id, "object": kind, "created": int(time.time()), "model": self.app.model_id,
                "choices": choices, **extra}

    def _extension(self, result: Any) -> dict:
        # Why the computed count is here: OpenAI's usage says what the cache served (cached_tokens) but not
        # what this request prefilled itself, and an outside probe needs both to count duplicated work.
        # A reply that reaches here finished its prefill, so it computed every prompt token it did not
        # recover (a follower's recovered tokens include the pages its leader published for it).
        return {"request_id": self.request_id, "role": result.role, "recovered_tokens": result.recovered_tokens,
                "prompt_tokens_computed": len(result.prompt_token_ids) - result.recovered_tokens,
                "ttft_ms": None if result.ttft_s is None else round(result.ttft_s * 1e3, 3),
                "completion_ms": None if result.completion_s is None else round(result.completion_s * 1e3, 3)}

    # --- streaming -----------------------------------------------------------------------------
    def close(self, how: str) -> None:
        """Counts how the stream closed, once; a stream that did not finish aborts its request."""
        if self.how is not None:
            return
        self.how = how
        self.app.metrics.streams.labels(how).inc()
        if how == "disconnect":
            self.app.loop.abort_soon(self.request_id)

    async def cleanup(self) -> None:
        """Runs after the response whatever happened, even if the stream never started."""
        self.close("disconnect")

    async def events(self, out: asyncio.Queue) -> AsyncIterator[str]:
        how = "disconnect"
        try:
            while True:
                item: Delivery = await out.get()
                self.token_ids.extend(item.tokens)
                if item.tokens and not item.is_final:
                    text = self._new_text(None)
                    yield _sse(self._envelope([self._choice(text, list(item.tokens), None, delta=True)]))
                if item.error is not None:
                    how = "error"
                    yield self._error_event(item.error.status, item.error.message, item.error.kind)
                    return
                if item.result is not None:
                    result = item.result
                    if result.finish_reason == FINISH_ABORTED:
                        how = "error"
                        yield self._error_event(500, "the request was aborted", "server_error")
                        return
                    text = self._new_text(result.text if result.text is not None else None)
                    last = self._choice(text, list(item.tokens), _finish(result.finish_reason), delta=True)
                    yield _sse(self._envelope([last], flightcheck=self._extension(result)))
                    options = self.body.stream_options
                    if options is not None and options.include_usage:
                        yield _sse(self._envelope([], usage=self._usage(result)))
                    yield "data: [DONE]\n\n"
                    how = "done"
                    return
        finally:
            self.close(how)  # "disconnect": Starlette cancelled the generator, the client went away

    def _error_event(self, status: int, message: str, kind: str) -> str:
        """An error mid-stream (the status line has gone): the same body a whole reply would carry, whose
        ``code`` is null like theirs (the HTTP status is not a code in OpenAI's sense)."""
        self.app.counted_error(self.path, status, message)
        return _sse({"error": {"message": message, "type": kind, "param": None, "code": None}})

    # --- whole ---------------------------------------------------------------------------------
    async def whole(self, out: asyncio.Queue, request: Request) -> Response:
        disconnect = asyncio.ensure_future(_wait_disconnect(request))
        try:
            while True:
                getter = asyncio.ensure_future(out.get())
                done, _ = await asyncio.wait({getter, disconnect}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    self.app.loop.abort_soon(self.request_id)
                    return Response(status_code=499)
                item: Delivery = getter.result()
                self.token_ids.extend(item.tokens)
                if item.error is not None:
                    return self.app._error(request, item.error.status, item.error.message, item.error.kind)
                if item.result is not None:
                    result = item.result
                    if result.finish_reason == FINISH_ABORTED:
                        return self.app._error(request, 500, "the request was aborted", "server_error")
                    text = result.text if result.text is not None else ""
                    choice = self._choice(text, list(result.output_token_ids), _finish(result.finish_reason), delta=False)
                    return JSONResponse(self._envelope([choice], usage=self._usage(result),
                                                       flightcheck=self._extension(result)))
        finally:
            disconnect.cancel()


async def _wait_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _finish(reason: str | None) -> str:
    return "stop" if reason in ("eos", "stop") else "length"


def _sse(obj: dict) -> str:
    return f"data: {json.dumps(obj)}\n\n"
