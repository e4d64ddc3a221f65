"""Experiment 4, release-points: groups of N identical concurrent requests, 128 output tokens each,
single-flight released on the leader's completion against after its prefill.

The seed's table (average TTFT): N=2 1,357.5 -> 584.7 ms (-56.9%), N=4 1,757.9 -> 617.1 ms (-64.9%),
N=8 1,984.4 -> 646.7 ms (-67.4%).
"""

from __future__ import annotations

from flightcheck.checks.bench.experiment import (
    FOLLOWER_COLUMNS, Config, Experiment, Sizes, burst, register, summarize,
)


def run(ctx) -> dict:
    prompt = ctx.prompt(ctx.sizes.prompt_tokens, "group")
    return summarize(burst(ctx.target(), [prompt] * ctx.cell, ctx.sizes.max_tokens))


EXPERIMENT = register(Experiment(
    name="release-points",
    title="N identical concurrent requests: release on completion vs after prefill",
    summary="average TTFT and slowest completion",
    configs=[Config("on-completion", {"coordination": "single-flight", "release": "on-completion",
                                      "publication": "on-completion"}),
             Config("after-prefill", {"coordination": "single-flight", "release": "after-prefill",
                                      "publication": "on-completion"})],
    baseline="on-completion",
    full=Sizes(prompt_tokens=532, max_tokens=128, counts=(2, 4, 8)),
    quick=Sizes(prompt_tokens=64, max_tokens=3, counts=(2,)),
    columns=FOLLOWER_COLUMNS,
    compare=["avg_ttft_ms", "slowest_completion_ms"],
    plot=[("avg_ttft_ms", "average TTFT (ms)"), ("slowest_completion_ms", "slowest completion (ms)")],
    run=run,
    seed="avg TTFT on-completion -> after-prefill: N=2 1357.5 -> 584.7 ms (-56.9%), "
         "N=4 1757.9 -> 617.1 (-64.9%), N=8 1984.4 -> 646.7 (-67.4%)",
))
