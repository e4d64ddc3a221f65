"""Leader abort: eight identical requests at a cold cache, the leader aborted after its first prefill
chunk; what happens to the seven followers under each leader-loss policy (issue 11's benchmark).

``release-all`` (the seed's rule) releases every follower when the leader goes: all seven recompute
what was not cached yet, side by side. ``promote`` hands the flight to the first live follower, which
computes the rest while the other six keep waiting and then recover it. Chunks of 8 pages (128
tokens), so the leader's 532-token prompt takes five; the abort comes once the first is computed and
published. Measured: prompt tokens computed in all, and the followers' average TTFT and slowest
completion. In process only: the abort needs the engine's step loop (over HTTP a client cannot time
its disconnect to a prefill chunk).
"""

from __future__ import annotations

from flightcheck.checks.bench.experiment import Column, Config, Experiment, Sizes, register, summarize
from flightcheck.impl.pages import PAGE_SIZE

CHUNK_PAGES = 8
POLICY = {"coordination": "single-flight", "release": "after-prefill", "publication": "incremental",
          "prefill_chunk_pages": CHUNK_PAGES}


def run(ctx) -> dict:
    prompt = ctx.prompt(ctx.sizes.prompt_tokens, "burst")
    target = ctx.target()
    if not hasattr(target, "abort_after_computing"):
        raise ValueError("leader-abort runs in process only (it aborts the leader at a prefill chunk)")
    for _ in range(ctx.cell):
        target.start(prompt, ctx.sizes.max_tokens)
    target.abort_after_computing(0, min(CHUNK_PAGES * PAGE_SIZE, ctx.sizes.prompt_tokens - 1))
    measures = target.finish()
    followers = measures[1:]
    metrics = summarize(followers, followers=followers)
    metrics["prefill_tokens"] = target.prefill_tokens
    metrics["promoted"] = sum(m.role == "leader" for m in followers)
    return metrics


EXPERIMENT = register(Experiment(
    name="leader-abort",
    title="8 identical requests, the leader aborted after its first prefill chunk: release-all vs promote",
    summary="prompt tokens computed, and the followers' average TTFT and slowest completion",
    configs=[Config("release-all", {**POLICY, "leader_loss": "release-all"}),
             Config("promote", {**POLICY, "leader_loss": "promote"})],
    baseline="release-all",
    full=Sizes(prompt_tokens=532, max_tokens=128, counts=(8,)),
    quick=Sizes(prompt_tokens=200, max_tokens=3, counts=(8,)),
    columns=[Column("prompt tokens computed", "prefill_tokens", "int"),
             Column("recovered / follower", "recovered_per_follower", "int"),
             Column("avg follower TTFT ms", "avg_ttft_ms"), Column("slowest completion ms", "slowest_completion_ms")],
    compare=["prefill_tokens", "avg_ttft_ms", "slowest_completion_ms"],
    plot=[("prefill_tokens", "prompt tokens computed"), ("avg_ttft_ms", "average follower TTFT (ms)")],
    run=run,
    seed="not in the seed (its design releases every follower when the leader aborts)",
))
