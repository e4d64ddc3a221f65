"""The outside probe: the seed's shapes sent to a live OpenAI-compatible server at a cold cache, and what
it recomputed, read from every source the server offers.

The shapes (each run ``repeats`` times, interleaved: round r runs every shape once):

- ``identical-N`` (N = 2, 4, 8): N identical requests at once;
- ``shared-prefix-8``: 8 requests at once sharing a prefix, each with a tail of its own (a page and more);
- ``late-arrival``: one request, then an identical one once the first has streamed its first token;

and after each of them a **warm control**: the first prompt sent again once everything completed, which
shows whether the server caches prefixes at all and reports it.

Every prompt starts with a fresh random **nonce** (one KV page of token ids, shortened by the tokens the
server adds in front, such as a BOS token, so that the shared part after it starts on a page boundary):
the cache is cold for every shape without restarting the server. Token-id prompts are used where the
server takes them (exact alignment); otherwise text, where the server's tokenizer decides where pages
fall and the page counts are approximate (the report says so).

Per request, prompt tokens computed and tokens recovered from the cache come from, in order of
exactness: flightcheck's reply extension (``prompt_tokens_computed``), llama.cpp's ``timings``
(``prompt_n``, ``cache_n``), OpenAI's ``usage.prompt_tokens_details.cached_tokens`` (computed =
prompt_tokens - cached). Prometheus counters are sampled before and after each shape; when no request
reports its cached tokens, the counters' totals give an estimate, and with no counters at all the
TTFTs do, marked as an estimate. "Computations per shared page" counts, for each page of the shared
part, the requests that did not recover it: the internal probe's ``[8, 8, 8, 8]`` / ``[1, 1, 1, 1]``.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.outside.client import (
    Endpoint, Exchange, ProbeError, error_text, fetch, scrape, send_burst, settle, stream_completion,
)

MAX_CONCURRENT = 8          # never more requests in flight at once
BURST_SIZES = (2, 4, 8)
SHARED_PREFIX_REQUESTS = 8
DEFAULT_PAGE_SIZE = 16      # vLLM's default block size; used when the server does not say its own
TAIL_TOKENS = 5             # after the shared pages: the internal probe's 4 pages + 5 tokens
TOKEN_LO, TOKEN_HI = 10, 250  # token ids every vocabulary has (the tiny model's holds 256)
WORDS = ("river stone lantern orchard copper meadow signal harbor violet cedar ember falcon quartz "
         "willow summit canyon thistle beacon marble saffron").split()

# Prometheus counters by what they count (flightcheck, vLLM, SGLang, llama.cpp); others that look
# related are reported as they are.
COMPUTED_COUNTERS = ("flightcheck_engine_prefill_tokens_total", "llamacpp:prompt_tokens_total")
CACHED_COUNTERS = ("flightcheck_engine_recovered_tokens_total", "vllm:prefix_cache_hits_total",
                   "vllm:gpu_prefix_cache_hits_total", "sglang:cached_tokens_total")
PROMPT_COUNTERS = ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total")
RELATED = ("prompt", "prefill", "prefix", "cache", "recover", "hit")


@dataclass(frozen=True)
class Options:
    """How the probe runs: sizes, repeats and its bounds."""

    shared_pages: int = 4
    repeats: int = 3
    max_tokens: int = 4            # generated per request (the late arrival's first request: 4x)
    timeout_s: float = 60.0        # per request, and per control exchange
    max_total_tokens: int = 200_000
    seed: int | None = None


@dataclass
class Server:
    """What the probe learnt about the server before the shapes."""

    endpoint: Endpoint
    model: str
    page_size: int
    page_size_source: str
    token_prompts: bool
    added_tokens: int              # tokens the server puts before a token-id prompt (a BOS)
    has_usage: bool
    metrics: bool
    notes: list[str] = field(default_factory=list)


@dataclass
class Instance:
    """One run of one shape: its requests, the warm control, the counters' deltas."""

    shape: str
    repeat: int
    exchanges: list[Exchange]
    control: Exchange | None
    metrics_delta: dict[str, float] | None
    prompt_tokens: list[int]
    shared_pages: list[int]        # page indexes (server positions) of the shared part


@dataclass
class ShapeResult:
    """A shape over its repeats: per-request readings, computations per shared page, verdict, evidence."""

    shape: str
    num_requests: int
    shared_tokens: int
    computations_per_page: list[int]
    per_repeat: list[list[int]]
    kind: str                      # "coalesces", "recomputes", "partial", "varies", "recovered", "no-reuse", "unknown"
    verdict: str
    source: str
    exact: bool
    evidence: list[str]
    ttft_spread_ms: float | None
    ttft_ms: list[list[float | None]]
    computed: list[list[int | None]]
    cached: list[list[int | None]]
    metrics_delta: list[dict[str, float] | None]
    control_cached: list[int | None]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return dict(self.__dict__)


@dataclass
class Report:
    """The whole probe: the server as seen, each shape's result, and how long it took."""

    url: str
    model: str
    page_size: int
    page_size_source: str
    prompts: str
    sources: list[str]
    notes: list[str]
    shapes: list[ShapeResult]
    seconds: float
    date: str

    def identical_kinds(self) -> list[str]:
        """The kinds of the identical-N shapes (what ``--expect`` compares)."""
        return [s.kind for s in self.shapes if s.shape.startswith("identical-")]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {**{k: v for k, v in self.__dict__.items() if k != "shapes"},
                "shapes": [s.to_json() for s in self.shapes]}


# --- discovery -------------------------------------------------------------------------------------
async def discover(endpoint: Endpoint, model: str | None, opts: Options, rng: random.Random) -> Server:
    """Checks the server is OpenAI-compatible and learns its model, page size, prompt form and counters."""
    status, body = await fetch(endpoint, endpoint.path + "/models", timeout=opts.timeout_s)
    if status in (404, 405):
        raise ProbeError(f"GET {endpoint.base}/models answered {status}: not an OpenAI-compatible endpoint "
                         f"(does the URL end in /v1?)")
    if status != 200:
        raise ProbeError(f"GET {endpoint.base}/models answered {status}: {error_text(body)}")
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in data):
        raise ProbeError(f"GET {endpoint.base}/models did not list models as OpenAI does ({{\"data\": [{{\"id\": ...}}]}})")
    ids = [m["id"] for m in data]
    if model is None:
        if not ids:
            raise ProbeError(f"GET {endpoint.base}/models lists no model; name one with --model")
        model = ids[0]
    notes: list[str] = []
    if ids and model not in ids:
        notes.append(f"--model {model!r} is not among the listed models {ids}")
    page_size, page_source = DEFAULT_PAGE_SIZE, f"assumed {DEFAULT_PAGE_SIZE} (the server does not say its KV page size)"
    try:
        status, info = await fetch(endpoint, "/info", timeout=opts.timeout_s)
        if status == 200 and isinstance(info, dict) and isinstance(info.get("page_size"), int) and info["page_size"] > 0:
            page_size, page_source = info["page_size"], "GET /info page_size"
    except ProbeError:
        pass  # /info is flightcheck's own; other servers need not have it
    metrics = await scrape(endpoint, opts.timeout_s) is not None
    nonce = [rng.randrange(TOKEN_LO, TOKEN_HI) for _ in range(8)]
    probe = Exchange(-1, len(nonce))
    await stream_completion(endpoint, _body(model, nonce, 1), probe, timeout=opts.timeout_s)
    token_prompts, added = True, 0
    if probe.error is None and probe.usage and isinstance(probe.usage.get("prompt_tokens"), int):
        added = max(0, probe.usage["prompt_tokens"] - len(nonce))
    elif probe.error is None:
        notes.append("the stream carries no usage (stream_options.include_usage): prompt lengths are the probe's own")
    else:
        first_error = probe.error
        probe = Exchange(-1, 0)
        await stream_completion(endpoint, _body(model, " ".join(rng.choice(WORDS) for _ in range(8)), 1), probe,
                                timeout=opts.timeout_s)
        if probe.error is not None:
            raise ProbeError(f"{endpoint.base}: a streamed completion failed: {first_error}")
        token_prompts = False
        notes.append(f"token-id prompts were refused ({first_error}); text prompts: the server's tokenizer "
                     f"decides where pages fall, so page counts are approximate")
    if added >= page_size:
        notes.append(f"the server adds {added} tokens in front of a prompt: the nonce cannot absorb them")
    elif added:
        notes.append(f"the server adds {added} token(s) in front of a prompt (a BOS); the nonce is "
                     f"{page_size - added} tokens so the shared part starts on a page boundary")
    has_usage = bool(probe.usage)
    return Server(endpoint, model, page_size, page_source, token_prompts, added, has_usage, metrics, notes)


def _body(model: str, prompt: Any, max_tokens: int) -> dict:
    return {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}


# --- prompts ---------------------------------------------------------------------------------------
@dataclass
class _Prompts:
    prompts: list[Any]
    lengths: list[int]             # server tokens (estimated for text)
    shared_pages: list[int]


def _make_prompts(server: Server, opts: Options, rng: random.Random, n: int, distinct_tails: bool) -> _Prompts:
    """``n`` prompts: a fresh nonce page, ``shared_pages`` shared pages, then a tail (shared, or one of
    its own per request: a page and ``TAIL_TOKENS`` more, so each has a page nobody else has)."""
    p = server.page_size
    nonce_len = max(1, p - server.added_tokens % p)
    body_len = opts.shared_pages * p
    tail_len = p + TAIL_TOKENS if distinct_tails else TAIL_TOKENS
    first_shared = (server.added_tokens + nonce_len) // p
    if server.token_prompts:
        nonce = [rng.randrange(TOKEN_LO, TOKEN_HI) for _ in range(nonce_len)]
        body = [rng.randrange(TOKEN_LO, TOKEN_HI) for _ in range(body_len)]
        tail = [rng.randrange(TOKEN_LO, TOKEN_HI) for _ in range(tail_len)]
        prompts = []
        for i in range(n):
            own = [rng.randrange(TOKEN_LO, TOKEN_HI) for _ in range(tail_len)] if distinct_tails else tail
            prompts.append(nonce + body + own)
    else:  # about a token per word in common tokenizers
        def words(k: int) -> str:
            return " ".join(rng.choice(WORDS) for _ in range(k))
        nonce, body, tail = words(nonce_len), words(body_len), words(tail_len)
        prompts = [" ".join((nonce, body, words(tail_len) if distinct_tails else tail)) for _ in range(n)]
    total = server.added_tokens + nonce_len + body_len + tail_len
    shared_end = (server.added_tokens + nonce_len + body_len) if distinct_tails else (total - 1)
    pages = list(range(first_shared, shared_end // p))
    return _Prompts(prompts, [total] * n, pages)


def planned_tokens(server: Server, opts: Options) -> int:
    """Prompt and output tokens the whole probe will ask for (checked against ``max_total_tokens``)."""
    p = server.page_size
    one = server.added_tokens + p + opts.shared_pages * p + p + TAIL_TOKENS + opts.max_tokens * 4
    per_round = sum(BURST_SIZES) + SHARED_PREFIX_REQUESTS + 2 + len(BURST_SIZES) + 2
    return one * per_round * opts.repeats


# --- running ---------------------------------------------------------------------------------------
async def _metrics_delta(server: Server, before: dict[str, float] | None, opts: Options) -> dict[str, float] | None:
    if before is None:
        return None
    after = await scrape(server.endpoint, opts.timeout_s)
    if after is None:
        return None
    return {k: after[k] - before.get(k, 0.0) for k in after
            if any(w in k.lower() for w in RELATED) and after[k] != before.get(k, 0.0)}


def _check(exchanges: list[Exchange], shape: str, server: Server) -> None:
    for e in exchanges:
        if e.error is not None:
            raise ProbeError(f"{server.endpoint.base}: shape {shape}, request {e.index}: {e.error}")
    # Why: a server that stops one stream when another request arrives (llama-cpp-python's default
    # --interrupt_requests) ends it cleanly, [DONE] and no error, after one chunk; timings and counters of
    # such a burst measure the interruption, not the cache, so no verdict is given from it. Identical
    # greedy requests end alike: not always with the same text (a request computed over cached pages may
    # round differently: llama-cpp-python's do), but not one after a chunk while another runs on.
    if shape.startswith("identical-"):
        made = [e.num_outputs for e in exchanges]
        if max(made) >= 2 and 2 * min(made) <= max(made):
            raise ProbeError(f"{server.endpoint.base}: shape {shape}: identical greedy requests ended after "
                             f"{made} output chunks: the server cut some short (a server that interrupts one "
                             "request for another, such as llama-cpp-python without --interrupt_requests False, "
                             "cannot be probed)")


async def run_shape(server: Server, opts: Options, rng: random.Random, shape: str, repeat: int) -> Instance:
    """Runs one shape at a cold cache (a fresh nonce), then its warm control; every stream is closed
    before this returns, whatever happens."""
    model = server.model
    before = await scrape(server.endpoint, opts.timeout_s) if server.metrics else None
    if shape == "late-arrival":
        made = _make_prompts(server, opts, rng, 2, False)
        exchanges = [Exchange(i, len(made.prompts[i]) if server.token_prompts else 0) for i in range(2)]
        first = asyncio.create_task(stream_completion(server.endpoint, _body(model, made.prompts[0], opts.max_tokens * 4),
                                                      exchanges[0], timeout=opts.timeout_s))
        tasks = [first]
        try:
            await asyncio.wait_for(exchanges[0].first_token.wait(), opts.timeout_s)
            tasks.append(asyncio.create_task(stream_completion(
                server.endpoint, _body(model, made.prompts[1], opts.max_tokens), exchanges[1], timeout=opts.timeout_s)))
            await settle(tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    else:
        n = SHARED_PREFIX_REQUESTS if shape.startswith("shared-prefix") else int(shape.rsplit("-", 1)[1])
        if n > MAX_CONCURRENT:
            raise ProbeError(f"shape {shape} needs {n} concurrent requests, above the cap of {MAX_CONCURRENT}")
        made = _make_prompts(server, opts, rng, n, shape.startswith("shared-prefix"))
        exchanges = [Exchange(i, len(made.prompts[i]) if server.token_prompts else 0) for i in range(n)]
        tasks = await send_burst(server.endpoint, [_body(model, pr, opts.max_tokens) for pr in made.prompts],
                                 exchanges, timeout=opts.timeout_s)
        await settle(tasks)
    _check(exchanges, shape, server)
    delta = await _metrics_delta(server, before, opts)
    control = Exchange(len(exchanges), exchanges[0].prompt_sent)
    await stream_completion(server.endpoint, _body(model, made.prompts[0], 1), control, timeout=opts.timeout_s)
    _check([control], shape + " (warm control)", server)
    lengths = [(e.usage or {}).get("prompt_tokens") or made.lengths[i] for i, e in enumerate(exchanges)]
    return Instance(shape, repeat, exchanges, control, delta, lengths, made.shared_pages)


def shape_names() -> list[str]:
    """The shapes in the order each round runs them."""
    return [f"identical-{n}" for n in BURST_SIZES] + [f"shared-prefix-{SHARED_PREFIX_REQUESTS}", "late-arrival"]


async def run(url: str, model: str | None = None, opts: Options | None = None) -> Report:
    """Discovers the server, runs every shape ``repeats`` times (interleaved), and analyses them."""
    opts = opts or Options()
    rng = random.Random(opts.seed)
    started = time.perf_counter()
    endpoint = Endpoint.parse(url)
    server = await discover(endpoint, model, opts, rng)
    planned = planned_tokens(server, opts)
    if planned > opts.max_total_tokens:
        raise ProbeError(f"the probe would send about {planned} tokens, above --max-total-tokens "
                         f"{opts.max_total_tokens}; lower --repeats or --shared-pages")
    instances: dict[str, list[Instance]] = {name: [] for name in shape_names()}
    for repeat in range(opts.repeats):
        for name in shape_names():
            instances[name].append(await run_shape(server, opts, rng, name, repeat))
    from flightcheck.checks.outside.verdict import analyse, describe_cold, sources_of

    cold = describe_cold(instances)
    results = [analyse(name, runs, server, cold) for name, runs in instances.items()]
    all_runs = [i for runs in instances.values() for i in runs]
    return Report(endpoint.base, server.model, server.page_size, server.page_size_source,
                  "token ids" if server.token_prompts else "text", sources_of(all_runs, server),
                  server.notes, results, round(time.perf_counter() - started, 2), time.strftime("%Y-%m-%d"))


def median_int(values: list[int]) -> int:
    """The lower median of integers (an integer, as counts must be)."""
    return int(statistics.median_low(values))


__all__ = ["BURST_SIZES", "Instance", "MAX_CONCURRENT", "Options", "Report", "Server", "ShapeResult", "discover",
           "median_int", "planned_tokens", "run", "run_shape", "shape_names"]
