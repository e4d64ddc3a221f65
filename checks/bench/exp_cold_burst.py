"""Experiment 2, cold-burst: 4 identical requests at a cold cache, publication on completion, no
coordination. The seed recovered 0 tokens in total: every request prefilled the whole prompt,
because nothing was published before all four had looked the cache up.
"""

from __future__ import annotations

from flightcheck.checks.bench.experiment import Column, Config, Experiment, Sizes, burst, register, summarize


def run(ctx) -> dict:
    prompt = ctx.prompt(ctx.sizes.prompt_tokens, "burst")
    target = ctx.target()
    measures = burst(target, [prompt] * ctx.cell, ctx.sizes.max_tokens)
    metrics = summarize(measures)
    metrics["recovered_total"] = sum(m.recovered for m in measures)
    metrics["prefill_tokens"] = getattr(target, "prefill_tokens", None)
    return metrics


EXPERIMENT = register(Experiment(
    name="cold-burst",
    title="4 identical requests at a cold cache, publication on completion, no coordination",
    summary="tokens recovered in total (the seed saw none)",
    configs=[Config("no coordination, on-completion", {"coordination": "none", "publication": "on-completion"})],
    baseline="no coordination, on-completion",
    full=Sizes(prompt_tokens=532, max_tokens=128, counts=(4,)),
    quick=Sizes(prompt_tokens=64, max_tokens=2, counts=(4,)),
    columns=[Column("recovered in total", "recovered_total", "int"),
             Column("prompt tokens computed", "prefill_tokens", "int"),
             Column("avg TTFT ms", "avg_ttft_ms"), Column("slowest completion ms", "slowest_completion_ms")],
    compare=[],
    plot=[("avg_ttft_ms", "average TTFT (ms)"), ("slowest_completion_ms", "slowest completion (ms)")],
    run=run,
    seed="0 tokens recovered in total; every request did a full prefill",
))
