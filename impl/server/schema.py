"""The OpenAI request bodies the server accepts, checked strictly, and the errors that name a field.

The models are pydantic (strict types: ``true`` is not 1, ``"no"`` is not false; NaN and infinities are
refused; unknown fields are refused, so a misspelt option is an error rather than silently ignored).
What pydantic cannot know (the prompt against the context, ``max_tokens`` against what is left of it,
the model name) is checked in :func:`sampling_of` and by the handlers, before anything is enqueued.

Supported beyond the basics: ``stop`` (a string or up to 4), ``seed``, ``stream_options.include_usage``,
``user`` (ignored), a message's ``content`` as a list of text parts (other parts are refused by name),
and one extension, ``ignore_eos`` (fixed-length outputs for benchmarks, as vLLM has it). ``n`` > 1,
``logprobs``, ``echo``, ``best_of``, ``suffix``, penalties and ``logit_bias`` are refused with a message
saying so. Text that is not valid Unicode (a lone surrogate), an integer of more digits than Python
converts and values nested deeper than ``MAX_BODY_DEPTH`` are refused naming the field, before the models
see them.
"""

from __future__ import annotations

import sys
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flightcheck.impl.sampling import SamplingParams


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class StreamOptions(_Strict):
    include_usage: bool = False


class _Common(_Strict):
    model: str
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = Field(None, ge=0, le=2**63 - 1)
    stop: Union[str, list[str], None] = None
    n: int = Field(1, ge=1, le=1)
    user: str | None = None
    ignore_eos: bool = False
    presence_penalty: float = Field(0.0, ge=0.0, le=0.0)
    frequency_penalty: float = Field(0.0, ge=0.0, le=0.0)
    logit_bias: None = None


class CompletionRequest(_Common):
    """``POST /v1/completions``: ``prompt`` is text, a list of token ids, or a list of one of those."""

    prompt: Union[str, list[int], list[str], list[list[int]]]
    max_tokens: int | None = Field(None, ge=1)  # absent or null: COMPLETION_MAX_TOKENS, as OpenAI has it
    echo: Literal[False] = False
    logprobs: None = None
    best_of: int = Field(1, ge=1, le=1)
    suffix: None = None


class Message(_Strict):
    """A chat message; ``content`` is text or OpenAI's list of parts, of which only text parts are taken
    (``{"type": "text", "text": ...}``, joined with newlines, as vLLM joins them)."""

    role: Literal["system", "user", "assistant"]
    content: Union[str, list[dict[str, Any]]]
    name: str | None = None

    @property
    def text(self) -> str:
        content = self.content
        return content if isinstance(content, str) else "\n".join(part["text"] for part in content)


def check_content_parts(request: "ChatRequest") -> None:
    """Refuses a content part that is not a text part, naming it (``messages.0.content.1``)."""
    for i, message in enumerate(request.messages):
        if isinstance(message.content, str):
            continue
        for j, part in enumerate(message.content):
            where = f"messages.{i}.content.{j}"
            kind = part.get("type")
            if kind != "text":
                what = f"a part of type {kind!r}" if isinstance(kind, str) else "a part without a string 'type'"
                raise RequestError(f"{where} is {what}; only text parts ({{\"type\": \"text\", \"text\": ...}}) "
                                   f"are supported: this model reads text only", where)
            if not isinstance(part.get("text"), str):
                raise RequestError(f"{where}.text: a text part needs a string 'text'", f"{where}.text")
            extra = sorted(set(part) - {"type", "text"})
            if extra:
                raise RequestError(f"unknown field {where}.{extra[0]!r}", f"{where}.{extra[0]}")


class ChatRequest(_Common):
    """``POST /v1/chat/completions``: ``messages`` rendered with the model's chat template."""

    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: Literal[False] | None = None


_UNSUPPORTED = {"n": "n must be 1 (one choice per request)", "best_of": "best_of must be 1",
                "presence_penalty": "presence_penalty is not supported (must be 0)",
                "frequency_penalty": "frequency_penalty is not supported (must be 0)",
                "logit_bias": "logit_bias is not supported", "echo": "echo is not supported",
                "logprobs": "logprobs are not supported", "suffix": "suffix is not supported",
                # OpenAI's fields this server does not implement: named as such, not as misspellings
                "top_logprobs": "top_logprobs are not supported",
                "response_format": "response_format is not supported (replies are plain text, unconstrained)",
                "tools": "tools are not supported (no tool or function calling)",
                "tool_choice": "tool_choice is not supported (no tool or function calling)",
                "parallel_tool_calls": "parallel_tool_calls is not supported (no tool or function calling)",
                "functions": "functions are not supported (no tool or function calling)",
                "function_call": "function_call is not supported (no tool or function calling)",
                "modalities": "modalities are not supported (text only)", "audio": "audio is not supported (text only)"}
_UNIONS = {"prompt": "prompt must be a string, a list of token ids (integers), or a list of one of those",
           "stop": "stop must be a string or a list of strings"}
_CONTENT_UNION = "must be a string or a list of content parts ({\"type\": \"text\", \"text\": ...})"


class RequestError(ValueError):
    """A 400 (or 404 for ``model``) naming the offending field, in OpenAI's error shape."""

    def __init__(self, message: str, param: str | None, status: int = 400, code: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.status, self.code = message, param, status, code


def parse(model_class: type[_Common], body: Any) -> _Common:
    """The validated request, or a ``RequestError`` whose message and ``param`` name the first problem."""
    if not isinstance(body, dict):
        raise RequestError(f"the request body must be a JSON object, got {type(body).__name__}", None)
    check_text_and_depth(body)
    try:
        request = model_class.model_validate(body)
    except ValidationError as error:
        raise _request_error(error) from None
    if isinstance(request, ChatRequest):
        check_content_parts(request)
    return request


# Why a depth limit: no OpenAI body nests deeper than a few levels, and an error message's repr() of a
# value nested hundreds deep (JSON allows it up to Python's recursion limit) raises RecursionError.
MAX_BODY_DEPTH = 32


class LongInteger:
    """An integer literal of more digits than Python converts (``sys.get_int_max_str_digits()``), left by
    :func:`parse_int` in the parsed body so that :func:`check_text_and_depth` can name its field."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


def parse_int(text: str) -> int | LongInteger:
    """``json.loads``'s ``parse_int``: ``int(text)``, or a :class:`LongInteger` where ``int`` would raise.

    Why: past Python's limit (4300 digits) ``int()`` raises a ValueError out of the parser, which knows no
    field: it was a 500. No field of a request takes such a number; the marker makes it a 400 naming it."""
    limit = sys.get_int_max_str_digits()
    digits = len(text) - text.startswith("-")
    return LongInteger(digits) if limit and digits > limit else int(text)


def check_text_and_depth(body: Any) -> None:
    """Refuses text that is not valid Unicode, integers of more digits than Python converts and values
    nested beyond ``MAX_BODY_DEPTH``, naming where.

    Why: JSON's ``\\ud800`` escapes decode to lone surrogates, which no tokenizer (nor UTF-8) can encode;
    found here, they are a 400 naming the field rather than a 500 out of the tokenizer."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), body)]
    while stack:
        path, value = stack.pop()
        if len(path) > MAX_BODY_DEPTH:
            where = ".".join(path[:3]) + "..."
            raise RequestError(f"{where} nests arrays or objects more than {MAX_BODY_DEPTH} levels deep", path[0])
        if isinstance(value, LongInteger):
            where = ".".join(path) or "the body"
            raise RequestError(f"{where} is an integer of {value.digits} digits: the number is too large (at most "
                               f"{sys.get_int_max_str_digits()} digits are read)", ".".join(path) or None)
        if isinstance(value, str):
            _check_unicode(value, ".".join(path), ".".join(path))
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_unicode(key, f"a key of {'.'.join(path) or 'the body'}", ".".join(path) or None)
                stack.append((path + (key,), item))
        elif isinstance(value, list):
            # Why only containers and text: a prompt of token ids is a long list of integers.
            stack.extend((path + (str(i),), item) for i, item in enumerate(value)
                         if isinstance(item, (str, list, dict, LongInteger)))


def _check_unicode(text: str, where: str, param: str | None) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise RequestError(f"{where} is not valid Unicode text: it holds a lone surrogate "
                           f"{text[error.start]!r} at character {error.start} (a \\ud800-\\udfff escape that is "
                           f"not half of a pair)", param) from None


def _request_error(error: ValidationError) -> RequestError:
    first = error.errors()[0]
    loc = [str(part) for part in first["loc"]]
    param = loc[0] if loc else None
    if param in _UNSUPPORTED and first["type"] not in ("missing",):
        return RequestError(_UNSUPPORTED[param], param)
    if param in _UNIONS and first["type"] not in ("missing", "extra_forbidden"):
        return RequestError(_UNIONS[param], param)
    if first["type"] == "extra_forbidden":
        return RequestError(f"unknown field {'.'.join(loc)!r}", ".".join(loc))
    if loc[:1] == ["messages"] and len(loc) > 3 and loc[2] == "content" and first["type"] != "missing":
        where = ".".join(loc[:3])  # the union's branch names (str, list[...]) are pydantic's, not the client's
        return RequestError(f"{where} {_CONTENT_UNION}", where)
    where = ".".join(part for part in loc if not part.isdigit() or len(loc) > 1)
    value = first.get("input")
    shown = "" if first["type"] == "missing" else f", got {value!r}" if len(repr(value)) < 60 else ""
    return RequestError(f"{where}: {first['msg'].lower()}{shown}", where)


def prompt_parts(request: CompletionRequest) -> str | list[int]:
    """The one prompt of a completion request (text or token ids); a batch of several is refused."""
    prompt = request.prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
        if len(prompt) != 1:
            raise RequestError(f"prompt holds {len(prompt)} prompts; send one prompt per request", "prompt")
        prompt = prompt[0]
    if not prompt:
        raise RequestError("prompt is empty: a request needs at least one token", "prompt")
    return prompt


def stop_strings(request: _Common) -> tuple[str, ...]:
    stop = request.stop
    strings = () if stop is None else (stop,) if isinstance(stop, str) else tuple(stop)
    if len(strings) > 4:
        raise RequestError(f"stop holds {len(strings)} strings; at most 4 are allowed", "stop")
    if any(not s for s in strings):
        raise RequestError("stop strings must not be empty", "stop")
    return strings


COMPLETION_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
DEFAULT_MAX_TOKENS = 256     # the server's default cap for a chat that names no limit (``serve --default-max-tokens``)


def sampling_of(request: _Common, num_prompt_tokens: int, context: int, *, has_tokenizer: bool,
                default_max_tokens: int = DEFAULT_MAX_TOKENS) -> SamplingParams:
    """The engine's sampling settings, after the checks that need the prompt's length: the prompt fits
    the context, and ``max_tokens`` (chat: ``max_completion_tokens`` too) fits what is left of it.
    Absent or null, ``max_tokens`` is 16 for a completion (OpenAI's default) and, for a chat,
    ``default_max_tokens`` or what is left of the context if that is less.

    Why a cap for chat: admission reserves pages for the prompt plus ``max_tokens``, and the ``openai``
    client sends no limit by default, so an uncapped chat would reserve the whole context's pages."""
    is_chat = isinstance(request, ChatRequest)
    if num_prompt_tokens > context:
        field = "messages" if is_chat else "prompt"
        raise RequestError(f"{field} has {num_prompt_tokens} tokens, longer than the context of {context}", field)
    room = context - num_prompt_tokens
    field, max_tokens = "max_tokens", request.max_tokens
    if is_chat and request.max_completion_tokens is not None:
        field, max_tokens = "max_completion_tokens", request.max_completion_tokens
    if max_tokens is None:
        if is_chat and room < 1:
            raise RequestError(f"messages has {num_prompt_tokens} tokens, filling the context of {context}: "
                               f"no room is left for a reply", "messages")
        max_tokens = min(default_max_tokens, room) if is_chat else COMPLETION_MAX_TOKENS
    if max_tokens > room or room < 1:
        raise RequestError(f"{field} is {max_tokens}, but the prompt's {num_prompt_tokens} tokens leave room for "
                           f"{room} in the context of {context}", field)
    stop = stop_strings(request)
    if stop and not has_tokenizer:
        raise RequestError("stop needs a model with a tokenizer; this one takes token ids only", "stop")
    return SamplingParams(temperature=request.temperature, top_p=request.top_p, seed=request.seed,
                          max_tokens=max_tokens, stop=stop, ignore_eos=request.ignore_eos)
