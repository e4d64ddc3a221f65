"""From what the server said to what it did: per-request readings, computations per shared page, verdicts.

Each reading names its source. Per request (best first): flightcheck's ``prompt_tokens_computed``,
llama.cpp's ``timings`` (``prompt_n`` computed, ``cache_n`` from the cache), OpenAI's
``usage.prompt_tokens_details.cached_tokens`` (computed = ``prompt_tokens`` - cached). A request
computed shared page q (0-based, in the server's token positions) when the cache gave it fewer than
``(q + 1) * page_size`` tokens. Without per-request readings, Prometheus totals give the number of
requests that computed the shared part (an estimate); without those, the TTFTs do (an estimate too).

For example::

    >>> from flightcheck.checks.outside.client import Exchange
    >>> e = Exchange(0, 85, usage={"prompt_tokens": 85, "prompt_tokens_details": {"cached_tokens": 80}})
    >>> reading(e)
    (5, 80, 'usage.prompt_tokens_details.cached_tokens')
    >>> pages_computed([0, 80, 80], [1, 2, 3, 4], 16)
    [1, 1, 1, 1]
"""

from __future__ import annotations

import statistics
from flightcheck.checks.outside.client import Exchange
from flightcheck.checks.outside.probe import (
    CACHED_COUNTERS, COMPUTED_COUNTERS, PROMPT_COUNTERS, Instance, Server, ShapeResult, median_int,
)

SOURCE_FLIGHTCHECK = "flightcheck.prompt_tokens_computed + usage.prompt_tokens_details.cached_tokens"
SOURCE_TIMINGS = "timings.prompt_n / timings.cache_n (llama.cpp)"
SOURCE_USAGE = "usage.prompt_tokens_details.cached_tokens"
SOURCE_METRICS = "/metrics totals (estimate: the server does not report per request)"
SOURCE_TIMING = "TTFT only (estimate: the server reports no cache counters)"
BURSTS = ("identical-", "shared-prefix-")  # the shapes whose requests are sent together
SERIAL_SLACK_S = 0.002
SERIAL_RECOMPUTE = 0.75  # of a serial burst's first (cold) time beyond a warm one: a follower past it recomputed  # a first token this much before the previous reply's end still counts as after it


def reading(e: Exchange) -> tuple[int | None, int | None, str | None]:
    """(prompt tokens computed, tokens recovered from the cache, source) of one request, or Nones."""
    usage = e.usage or {}
    details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    cached = details.get("cached_tokens") if isinstance(details.get("cached_tokens"), int) else None
    ext = e.extension or {}
    if isinstance(ext.get("prompt_tokens_computed"), int):
        recovered = cached if cached is not None else ext.get("recovered_tokens")
        return ext["prompt_tokens_computed"], recovered, SOURCE_FLIGHTCHECK
    t = e.timings or {}
    if isinstance(t.get("prompt_n"), int) and isinstance(t.get("cache_n"), int):
        return t["prompt_n"], t["cache_n"], SOURCE_TIMINGS
    if cached is not None and isinstance(usage.get("prompt_tokens"), int):
        return usage["prompt_tokens"] - cached, cached, SOURCE_USAGE
    return None, None, None


def pages_computed(cached: list[int], pages: list[int], page_size: int) -> list[int]:
    """For each shared page, how many requests computed it (their cache gave them less than its end)."""
    return [sum(1 for c in cached if c < (q + 1) * page_size) for q in pages]


def _counter(delta: dict[str, float] | None, names: tuple[str, ...]) -> tuple[str, float] | None:
    for name in names:
        if delta is not None and name in delta:
            return name, delta[name]
    return None


def _metrics_estimate(inst: Instance, server: Server) -> int | None:
    """Requests that computed the shared part, from the counters' totals over the shape (or None)."""
    delta = inst.metrics_delta
    computed = _counter(delta, COMPUTED_COUNTERS)
    if computed is None:
        prompt, cached = _counter(delta, PROMPT_COUNTERS), _counter(delta, CACHED_COUNTERS)
        if prompt is None or cached is None:
            return None
        computed = ("", prompt[1] - cached[1])
    n, p = len(inst.exchanges), server.page_size
    length = statistics.median(inst.prompt_tokens)
    recoverable = (inst.shared_pages[-1] + 1) * p if inst.shared_pages else 0
    if recoverable <= 0:
        return None
    k = round((computed[1] - n * (length - recoverable)) / recoverable)
    return max(1, min(n, k))


def _serial_times(inst: Instance) -> list[float] | None:
    """Each request's own time to its first token when the server served the burst one request at a time
    (every first token came after the previous reply had ended), else None. Bursts only: their requests'
    last bytes went out together, so their times share one origin (the late arrival's do not)."""
    if not inst.shape.startswith(BURSTS):
        return None
    ex = sorted((e for e in inst.exchanges if e.ttft_s is not None and e.completion_s is not None),
                key=lambda e: e.ttft_s)
    if len(ex) < 2 or len(ex) != len(inst.exchanges):
        return None
    if any(b.ttft_s < a.completion_s - SERIAL_SLACK_S for a, b in zip(ex, ex[1:])):
        return None
    return [ex[0].ttft_s] + [max(0.0, b.ttft_s - a.completion_s) for a, b in zip(ex, ex[1:])]


def _ttft_estimate(inst: Instance, cold_s: float | None) -> int | None:
    """Requests that computed the shared part, from the TTFTs: one request at a time (a server that
    serializes), the first one and each other that took three quarters of the first one's time beyond a
    warm first token (:data:`SERIAL_RECOMPUTE`); otherwise how many cold prefills the last first token took
    beyond a warm one."""
    ttfts = [e.ttft_s for e in inst.exchanges if e.ttft_s is not None]
    warm = inst.control.ttft_s if inst.control is not None else None
    if not ttfts or cold_s is None or warm is None or cold_s <= warm:
        return None
    own = _serial_times(inst)
    if own is not None:
        # Queueing behind a whole reply is not recomputation: each request's own share of the wait. The
        # first one served computed the whole cold prompt (a fresh nonce) at the same moment and under the
        # same load as the others, so it is the cold reference (a cold prompt measured in another shape
        # may have met another load).
        # A request that reused the shared part still computes what is its own (a shared-prefix burst's
        # tails, a fifth of its prompt here, which a loaded machine stretched to half the cold time), so
        # only one that took three quarters of the first one's time beyond a warm one recomputed it.
        return 1 + sum(1 for t in own[1:] if t > warm + SERIAL_RECOMPUTE * (own[0] - warm))
    return max(1, min(len(inst.exchanges), round((max(ttfts) - warm) / (cold_s - warm))))


def analyse(shape: str, runs: list[Instance], server: Server, cold_s: float | None = None) -> ShapeResult:
    """The shape's result over its repeats: computations per shared page (median per page), the verdict."""
    p = server.page_size
    n = len(runs[0].exchanges)
    pages = runs[0].shared_pages
    shared_tokens = len(pages) * p
    per_repeat, computed, cached, ttfts, spreads, controls = [], [], [], [], [], []
    sources: set[str] = set()
    for inst in runs:
        readings = [reading(e) for e in inst.exchanges]
        computed.append([r[0] for r in readings])
        cached.append([r[1] for r in readings])
        ttft = [None if e.ttft_s is None else round(e.ttft_s * 1e3, 2) for e in inst.exchanges]
        ttfts.append(ttft)
        known = [t for t in ttft if t is not None]
        if len(known) > 1:
            spreads.append(max(known) - min(known))
        controls.append(reading(inst.control)[1] if inst.control is not None else None)
        if all(r[1] is not None for r in readings):
            sources.add(readings[0][2])
            per_repeat.append(pages_computed([r[1] for r in readings], pages, p))
            continue
        k = _metrics_estimate(inst, server)
        if k is not None:
            sources.add(SOURCE_METRICS)
        else:
            k = _ttft_estimate(inst, cold_s)
            sources.add(SOURCE_TIMING)
        per_repeat.append([k] * len(pages) if k is not None else [])
    usable = [r for r in per_repeat if r]
    per_page = [median_int([r[i] for r in usable]) for i in range(len(pages))] if usable else []
    source = ", ".join(sorted(sources))
    per_request = sources <= {SOURCE_FLIGHTCHECK, SOURCE_TIMINGS, SOURCE_USAGE}
    exact = server.token_prompts and per_request
    kind, verdict = _verdict(shape, n, per_page, shared_tokens, exact)
    kinds = [_verdict(shape, n, r, shared_tokens, exact)[0] for r in usable]
    if per_request and len(set(kinds)) > 1:  # the median would pick a side of a race: say that it is one
        kind = "varies"
        counts = ", ".join(f"{k} in {kinds.count(k)}" for k in sorted(set(kinds), key=kinds.index))
        verdict = (f"varies between repeats: {counts} of {len(kinds)} (per repeat {usable}): the outcome of a "
                   "cold burst depends on its timing, a race in the server's admission"
                   + ("" if exact else " (page counts approximate: text prompts)"))
    evidence = _evidence(runs, computed, cached, controls, ttfts, source)
    serial = [_serial_times(inst) for inst in runs if SOURCE_TIMING in sources]
    if serial and all(t is not None for t in serial):
        evidence.append("the server served each burst one request at a time (every first token after the previous "
                        "reply ended): each request's own time to its first token, ms: "
                        + "; ".join(str([round(t * 1e3, 1) for t in times]) for times in serial)
                        + (f" (a cold prompt alone {cold_s * 1e3:.1f} ms)" if cold_s is not None else ""))
    if per_page and all(c == 0 for c in controls if c is not None) and any(c is not None for c in controls):
        evidence.append("the warm control recovered nothing: the server reused no prefix (caching off, or "
                        "pages larger than the prompt)")
    return ShapeResult(shape, n, shared_tokens, per_page, per_repeat, kind, verdict, source, exact, evidence,
                       round(statistics.median(spreads), 2) if spreads else None, ttfts, computed, cached,
                       [i.metrics_delta for i in runs], controls)


def _verdict(shape: str, n: int, per_page: list[int], shared: int, exact: bool) -> tuple[str, str]:
    hedge = "" if exact else " (estimate)"
    if not per_page:
        return "unknown", "unknown: the server reports no cache counters and the timings did not separate cold from warm"
    top = max(per_page)
    if shape == "late-arrival":
        if top <= 1:
            return "recovered", f"the late arrival recovered the shared {shared} tokens from the cache{hedge}"
        return "recomputes", f"recomputes: the late arrival prefilled the shared {shared} tokens again{hedge}"
    what = "identical cold requests" if shape.startswith("identical") else "prefix-sharing cold requests"
    if all(c == 1 for c in per_page):
        return "coalesces", (f"coalesces {what}: the shared {shared} tokens were prefilled once for {n} "
                             f"requests{hedge}")
    if all(c == n for c in per_page):
        return "recomputes", f"recomputes: {n} of {n} requests prefilled the shared {shared} tokens{hedge}"
    return "partial", (f"partly coalesces {what}: up to {top} of {n} requests prefilled shared pages "
                       f"(per page {per_page}){hedge}")


def _evidence(runs: list[Instance], computed: list, cached: list, controls: list, ttfts: list, source: str) -> list[str]:
    lines = []
    for i, inst in enumerate(runs):
        known = [t for t in ttfts[i] if t is not None]
        ttft = f"TTFT {min(known):.1f}-{max(known):.1f} ms" if known else "no TTFT"
        lines.append(f"repeat {inst.repeat}: computed {computed[i]}, cached {cached[i]}; {ttft}; "
                     f"warm control cached {controls[i]}")
        if inst.metrics_delta:
            shown = ", ".join(f"{k} +{v:g}" for k, v in sorted(inst.metrics_delta.items()))
            lines.append(f"repeat {inst.repeat}: /metrics delta over the shape: {shown}")
    return lines


def sources_of(runs: list[Instance], server: Server) -> list[str]:
    """Every source the server offered, named as the report shows them."""
    out: list[str] = []
    exchanges = [e for inst in runs for e in inst.exchanges]
    found = {reading(e)[2] for e in exchanges} - {None}
    if any((e.usage or {}).get("prompt_tokens_details") for e in exchanges):
        out.append("usage.prompt_tokens_details.cached_tokens (per request)")
    if SOURCE_FLIGHTCHECK in found:
        out.append("flightcheck.prompt_tokens_computed (per request, flightcheck's reply extension)")
    if SOURCE_TIMINGS in found:
        out.append("timings.prompt_n / cache_n (per response, llama.cpp)")
    names = sorted({k for inst in runs for k in (inst.metrics_delta or {})})
    if names:
        out.append("/metrics counters sampled before and after each shape: " + ", ".join(names))
    elif server.metrics:
        out.append("/metrics (no prompt or cache counter moved)")
    out.append("TTFT per request from the stream (the probe's clock)")
    if not found and not names:
        out.append("no cache counters at all: computations are estimated from timing alone")
    return out


def describe_cold(runs: dict[str, list[Instance]]) -> float | None:
    """A cold single request's TTFT: the median of the late-arrival shape's first requests."""
    firsts = [i.exchanges[0].ttft_s for i in runs.get("late-arrival", []) if i.exchanges[0].ttft_s is not None]
    return statistics.median(firsts) if firsts else None


__all__ = ["analyse", "describe_cold", "pages_computed", "reading", "sources_of"]
