"""Overlap: eight concurrent requests over one document that differ at the tail; how much overlap is
worth waiting for? (the seed's open question, issue 12's benchmark).

Each cell is a shared fraction: every prompt is the first ``fraction`` of its length taken from one
document, then a tail of its own (different from the tail's second token on, so the page where the
document ends is not shared either); at 100% the eight prompts are identical. Eight requests arrive
at once at a cold cache, under:

- ``none``: every request computes what the cache lacks (side by side, nothing cached yet: all of it);
- ``single-flight``: identical prompts wait for one leader (only the 100% cell has any);
- ``prefix>=K``: coordination "prefix" with ``min_shared_pages`` K: a request sharing at least K pages
  with an open flight waits for that flight's release (after the leader's whole prefill), then
  computes only its own tail.

All released after prefill, publication incremental; measured: prompt tokens computed, average and
slowest TTFT, slowest completion, and how many requests waited via another flight.
"""

from __future__ import annotations

from flightcheck.checks.bench.experiment import Column, Config, Experiment, Sizes, register
from flightcheck.checks.bench.workload import prompt_ids
from flightcheck.impl.pages import PAGE_SIZE

NUM_REQUESTS = 8
MIN_SHARED_PAGES = (1, 8, 16, 24)
POLICY = {"release": "after-prefill", "publication": "incremental"}


def prompts(ctx) -> list[list[int]]:
    """The cell's eight prompts: a shared document prefix of ``cell`` percent, then distinct tails."""
    length = ctx.sizes.prompt_tokens
    shared = length * ctx.cell // 100
    document = ctx.prompt(shared, "document")
    # Why the request's number first: the tails must differ from their start, so that sharing stops
    # exactly where the document does (prompt_ids opens with "[" + the nonce).
    return [document + prompt_ids(ctx.backend.tokenizer, length - shared, f"{i} {ctx.nonce} tail")
            if shared < length else list(document) for i in range(NUM_REQUESTS)]


def run(ctx) -> dict:
    from flightcheck.impl.coordinator import num_shared
    from flightcheck.impl.events import chain_keys

    group = prompts(ctx)
    target = ctx.target(num_requests=NUM_REQUESTS)
    for prompt in group:
        target.start(prompt, ctx.sizes.max_tokens)
    measures = target.finish()
    keys = [chain_keys(p, (len(p) - 1) // PAGE_SIZE, PAGE_SIZE) for p in group[:2]]
    engine = getattr(target, "engine", None)
    return {"shared_pages": num_shared(*keys),
            "prefill_tokens": getattr(target, "prefill_tokens", None),
            "via_waits": engine.counters["num_via_waits"] if engine is not None else None,
            "avg_ttft_ms": 1e3 * sum(m.ttft_s for m in measures) / len(measures),
            "slowest_ttft_ms": 1e3 * max(m.ttft_s for m in measures),
            "slowest_completion_ms": 1e3 * max(m.completion_s for m in measures)}


EXPERIMENT = register(Experiment(
    name="overlap",
    title="8 concurrent requests sharing 0-100% of a document prefix, differing at the tail: "
          "none vs single-flight vs prefix>=K (min_shared_pages K)",
    summary="prompt tokens computed, average and slowest TTFT, slowest completion, by shared fraction",
    configs=[Config("none", {**POLICY, "coordination": "none"}),
             Config("single-flight", {**POLICY, "coordination": "single-flight"})]
    + [Config(f"prefix>={k}", {**POLICY, "coordination": "prefix", "min_shared_pages": k}) for k in MIN_SHARED_PAGES],
    baseline="none",
    full=Sizes(prompt_tokens=560, max_tokens=8, counts=(0, 25, 50, 75, 90, 100)),
    quick=Sizes(prompt_tokens=40, max_tokens=2, counts=(50, 100)),
    columns=[Column("shared pages", "shared_pages", "int"), Column("waited via", "via_waits", "int"),
             Column("prompt tokens computed", "prefill_tokens", "int"), Column("avg TTFT ms", "avg_ttft_ms"),
             Column("slowest TTFT ms", "slowest_ttft_ms"), Column("slowest completion ms", "slowest_completion_ms")],
    compare=["prefill_tokens", "avg_ttft_ms", "slowest_ttft_ms", "slowest_completion_ms"],
    plot=[("avg_ttft_ms", "average TTFT (ms)"), ("slowest_ttft_ms", "slowest TTFT (ms)"),
          ("prefill_tokens", "prompt tokens computed")],
    run=run,
    seed="an open question: requests share a long document but differ at the tail; how much overlap is worth "
         "waiting for?",
    cell_name="shared %",
    plot_lines=True,
))
