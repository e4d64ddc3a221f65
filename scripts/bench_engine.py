"""The seed's coordination benchmark (experiment 5, burst-8, for N = 2, 4, 8, and experiment 6, the
late arrival): a thin front to ``flightcheck bench`` (checks/bench/), kept for its old options.

    python scripts/bench_engine.py                      # tiny random model (fast)
    python scripts/bench_engine.py --model smollm2      # the real SmolLM2-135M
    python scripts/bench_engine.py --model smollm2 --max-tokens 32 --repeats 3 --out runs/bench_engine
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--prompt-tokens", type=int, default=532)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--counts", default="2,4,8")
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell; the median is reported")
    parser.add_argument("--out", default="runs/bench_engine", help="folder for the tables, JSON and plots")
    args = parser.parse_args(argv)
    counts = tuple(int(c) for c in args.counts.split(","))
    if args.prompt_tokens < 2 or args.max_tokens < 1 or args.repeats < 1 or min(counts) < 1:
        parser.error("--prompt-tokens >= 2, --max-tokens >= 1, --repeats >= 1 and counts >= 1 are required")

    from flightcheck.checks.bench import EXPERIMENTS
    from flightcheck.checks.bench.report import markdown, save
    from flightcheck.checks.bench.runner import Backend, run_experiment

    from flightcheck.impl.model_file import ModelFileError

    console = Console(width=200)
    try:
        backend = Backend.smollm2() if args.model == "smollm2" else Backend.tiny()
    except ModelFileError as error:  # bad input, not a benchmark result
        print(f"error: {error}", file=sys.stderr)  # errors go to stderr, as in every other command
        return 2
    console.print(backend.description)
    for name, sizes in (("burst-8", replace(EXPERIMENTS["burst-8"].full, counts=counts)),
                        ("late-arrival", EXPERIMENTS["late-arrival"].full)):
        sizes = replace(sizes, prompt_tokens=args.prompt_tokens, max_tokens=args.max_tokens)
        result = run_experiment(EXPERIMENTS[name], backend, repeats=args.repeats, sizes=sizes)
        save(result, Path(args.out))
        console.print(markdown(result), markup=False, highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
