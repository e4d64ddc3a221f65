"""The seed's coordination benchmark on this engine: N identical requests at a cold cache, at once.

Strategies (the seed's table): independent execution with publication on completion (the baseline),
single-flight with release on leader completion, and single-flight with release after the leader's
prefill. For N in 2, 4, 8: average TTFT, slowest completion, tokens recovered per follower, and each
strategy's change against the baseline measured in the same run.

    python scripts/bench_engine.py                      # tiny random model (fast)
    python scripts/bench_engine.py --model smollm2      # the real SmolLM2-135M
    python scripts/bench_engine.py --model smollm2 --max-tokens 32 --repeats 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from rich.console import Console
from rich.table import Table

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.model_file import ModelFileError
from flightcheck.impl.runner import ModelRunner
from flightcheck.impl.sampling import SamplingParams

STRATEGIES = {
    "independent": dict(coordination="none", publication="on-completion"),
    "release-on-completion": dict(coordination="single-flight", release="on-completion", publication="on-completion"),
    "release-after-prefill": dict(coordination="single-flight", release="after-prefill", publication="on-completion"),
}
TEXT = ("Prefix caching reuses the attention key-value cache of repeated prompt prefixes. When identical "
        "requests reach a cold cache at once, one request computes the prefix and publishes its pages while "
        "the others wait for it and then reuse them. ")


def build(model_name: str, num_pages: int):
    if model_name == "smollm2":
        from flightcheck.impl.gguf import load_smollm2

        # float32 weights: the fast path on CPU whatever the loader's timed BLAS probe says on a busy machine
        model, tokenizer, info = load_smollm2(dequantize=True)
        return model, tokenizer, [tokenizer.eos_id], f"{info.name} ({'fp32 dequantized' if info.is_dequantized else '4-bit'}; {info.blas})"
    from flightcheck.impl.tiny import tiny_model

    return tiny_model(0), None, [], "tiny random Llama (2 layers, hidden 64)"


def prompt_ids(tokenizer, length: int) -> list[int]:
    if tokenizer is None:
        import numpy as np

        return [int(t) for t in np.random.default_rng(0).integers(0, 256, size=length)]
    ids: list[int] = []
    while len(ids) < length:
        ids += tokenizer.encode(TEXT)
    return ids[:length]


def run_once(runner, tokenizer, eos, strategy: str, num_requests: int, prompt: list[int], max_tokens: int,
             chunk_pages: int) -> dict:
    config = EngineConfig(num_pages=runner.num_pages, max_running=8, prefill_chunk_pages=chunk_pages,
                          **STRATEGIES[strategy])
    engine = Engine(runner, tokenizer, config, eos_token_ids=eos)
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    start = time.perf_counter()
    ids = [engine.add_request(prompt, params) for _ in range(num_requests)]
    engine.run()
    wall = time.perf_counter() - start
    results = [engine.result(i) for i in ids]
    assert all(len(r.output_token_ids) == max_tokens for r in results)
    return {
        "avg_ttft_s": statistics.mean(r.ttft_s for r in results),
        "slowest_completion_s": max(r.completion_s for r in results),
        "recovered_per_follower": [r.recovered_tokens for r in results[1:]],
        "wall_s": wall,
        "prefill_tokens": engine.counters["num_prefill_tokens"],
    }


def run_late(runner, tokenizer, eos, strategy: str, prompt: list[int], max_tokens: int, chunk_pages: int) -> dict:
    """The seed's separate test: a second identical request arrives once the first is decoding."""
    config = EngineConfig(num_pages=runner.num_pages, max_running=8, prefill_chunk_pages=chunk_pages,
                          **STRATEGIES[strategy])
    engine = Engine(runner, tokenizer, config, eos_token_ids=eos)
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    first = engine.add_request(prompt, params)
    while engine.phase(first) != "decode":
        engine.step()
    engine.step()  # one decode step in, as in the seed's setup
    second = engine.add_request(prompt, params)
    engine.run()
    results = [engine.result(first), engine.result(second)]
    return {"avg_ttft_s": statistics.mean(r.ttft_s for r in results),
            "slowest_completion_s": max(r.completion_s for r in results),
            "recovered": results[1].recovered_tokens, "second_role": results[1].role}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--prompt-tokens", type=int, default=532)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--counts", default="2,4,8")
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell; the median is reported")
    parser.add_argument("--chunk-pages", type=int, default=32, help="prefill budget per step, in 16-token pages")
    parser.add_argument("--json", help="write the raw figures here")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    if args.prompt_tokens < 2 or args.max_tokens < 1 or args.repeats < 1 or min(counts) < 1:
        parser.error("--prompt-tokens >= 2, --max-tokens >= 1, --repeats >= 1 and counts >= 1 are required")

    console = Console(width=150)
    pages_per_request = -(-(args.prompt_tokens + args.max_tokens) // 16)
    try:
        model, tokenizer, eos, description = build(args.model, 0)
    except ModelFileError as error:  # a missing or corrupt model is bad input: exit 2, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    runner = ModelRunner(model, num_pages=max(counts) * pages_per_request + 16)
    prompt = prompt_ids(tokenizer, args.prompt_tokens)
    console.print(f"model: {description}; prompt {len(prompt)} tokens, {args.max_tokens} output tokens, "
                  f"{args.repeats} repeat(s), median reported")
    run_once(runner, tokenizer, eos, "independent", 2, prompt, min(args.max_tokens, 4), args.chunk_pages)  # warm-up

    rows = []
    for n in counts:
        for strategy in STRATEGIES:
            runs = [run_once(runner, tokenizer, eos, strategy, n, prompt, args.max_tokens, args.chunk_pages)
                    for _ in range(args.repeats)]
            rows.append({"n": n, "strategy": strategy,
                         "avg_ttft_s": statistics.median(r["avg_ttft_s"] for r in runs),
                         "slowest_completion_s": statistics.median(r["slowest_completion_s"] for r in runs),
                         "recovered_per_follower": runs[0]["recovered_per_follower"],
                         "prefill_tokens": runs[0]["prefill_tokens"]})

    table = Table(title=f"{len(prompt)}-token prompt, identical requests at once ({args.model})")
    for col in ("N", "strategy", "recovered/follower", "prefill tokens", "avg TTFT ms", "vs indep.",
                "slowest completion ms", "vs indep."):
        table.add_column(col, justify="right")
    for row in rows:
        base = next(r for r in rows if r["n"] == row["n"] and r["strategy"] == "independent")
        recovered = sorted(set(row["recovered_per_follower"]))
        table.add_row(str(row["n"]), row["strategy"], ",".join(map(str, recovered)), str(row["prefill_tokens"]),
                      f"{row['avg_ttft_s'] * 1e3:.1f}", _change(row["avg_ttft_s"], base["avg_ttft_s"]),
                      f"{row['slowest_completion_s'] * 1e3:.1f}",
                      _change(row["slowest_completion_s"], base["slowest_completion_s"]))
    console.print(table)

    late = {}
    for strategy in ("release-on-completion", "release-after-prefill"):
        runs = [run_late(runner, tokenizer, eos, strategy, prompt, args.max_tokens, args.chunk_pages)
                for _ in range(args.repeats)]
        late[strategy] = {"avg_ttft_s": statistics.median(r["avg_ttft_s"] for r in runs),
                          "slowest_completion_s": statistics.median(r["slowest_completion_s"] for r in runs),
                          "recovered": runs[0]["recovered"], "second_role": runs[0]["second_role"]}
    late_table = Table(title="a second identical request arrives while the first decodes")
    for col in ("strategy", "second's role", "recovered", "avg TTFT ms", "vs on-completion",
                "slowest completion ms", "vs on-completion"):
        late_table.add_column(col, justify="right")
    base = late["release-on-completion"]
    for strategy, row in late.items():
        late_table.add_row(strategy, row["second_role"], str(row["recovered"]), f"{row['avg_ttft_s'] * 1e3:.1f}",
                           _change(row["avg_ttft_s"], base["avg_ttft_s"]), f"{row['slowest_completion_s'] * 1e3:.1f}",
                           _change(row["slowest_completion_s"], base["slowest_completion_s"]))
    console.print(late_table)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"model": description, "args": vars(args), "rows": rows, "late": late}, f, indent=2)
    return 0


def _change(value: float, base: float) -> str:
    return f"{(value / base - 1) * 100:+.1f}%"


if __name__ == "__main__":
    sys.exit(main())
