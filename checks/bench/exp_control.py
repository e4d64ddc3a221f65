"""Experiment 7, control: N different prompts at once, coordination on against off. Nothing is
shared, so single-flight must cost nothing measurable: every request leads its own flight and is
released after its own prefill. The seed: no meaningful completion-time regression.
"""

from __future__ import annotations

from flightcheck.checks.bench.experiment import FOLLOWER_COLUMNS, Config, Experiment, Sizes, burst, register, summarize


def run(ctx) -> dict:
    prompts = [ctx.prompt(ctx.sizes.prompt_tokens, f"distinct {k}") for k in range(ctx.cell)]
    return summarize(burst(ctx.target(), prompts, ctx.sizes.max_tokens))


EXPERIMENT = register(Experiment(
    name="control",
    title="Different prompts at once: coordination on vs off",
    summary="no meaningful regression expected",
    configs=[Config("coordination off", {"coordination": "none", "publication": "incremental"}),
             Config("single-flight", {"coordination": "single-flight", "release": "after-prefill",
                                      "publication": "incremental"})],
    baseline="coordination off",
    full=Sizes(prompt_tokens=532, max_tokens=128, counts=(8,)),
    quick=Sizes(prompt_tokens=64, max_tokens=3, counts=(4,)),
    columns=FOLLOWER_COLUMNS,
    compare=["avg_ttft_ms", "slowest_completion_ms"],
    plot=[("avg_ttft_ms", "average TTFT (ms)"), ("slowest_completion_ms", "slowest completion (ms)")],
    run=run,
    seed="no meaningful completion-time regression for independent inputs",
))
