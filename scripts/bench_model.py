"""Model-layer speed with the real SmolLM2-135M, side by side with mlx-lm's llama on the same weights.

    python scripts/bench_model.py                 # full run (3 interleaved repeats, medians)
    python scripts/bench_model.py --repeats 1 --decode-steps 8   # quick look
    python scripts/bench_model.py --json out.json

Measures, for flightcheck's paged ModelRunner and for mlx-lm's ``models.llama.Model`` with its own
``KVCache`` (both on the float32 weights dequantized from the GGUF):

- prefill: one 512-token prompt to the logits of its last token;
- decode, 1 sequence: greedy tokens/s after a 512-token prompt;
- decode, 8 sequences: aggregate greedy tokens/s, 8 different 128-token prompts decoded together.

Also flightcheck's own model on a plain contiguous cache (what paging costs) and the paged runner
with ``fastops``' numpy route switched off (what that route gains). Runs are interleaved (ours,
theirs, ours, ...) and medians reported, because other processes on a small machine slow some runs.

mlx-lm is the ``bench`` extra; only its model code is used, so ``pip install --no-deps mlx-lm`` is
enough (its package ``__init__`` imports transformers for tokenizers this script does not need, so
the script imports ``mlx_lm.models`` without running that ``__init__``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import statistics
import subprocess
import sys
import time
import types

import numpy as np

from flightcheck.impl.blas import blas_status, mx  # first: the fast BLAS before mlx.nn  # isort: skip
from mlx.utils import tree_flatten  # noqa: E402

from flightcheck.impl import fastops  # noqa: E402
from flightcheck.impl.gguf import load_model, load_smollm2  # noqa: E402
from flightcheck.impl.model_file import ModelFileError  # noqa: E402
from flightcheck.impl.runner import ModelRunner, SeqChunk  # noqa: E402

PAGE = 16
TEXT = ("The history of the printing press begins in the fifteenth century, when movable type changed how "
        "books were made, sold and read across Europe. Scholars still argue about its effects on science, "
        "religion and politics, and about which earlier inventions made it possible. ")


def import_mlx_lm():
    spec = importlib.util.find_spec("mlx_lm")
    if spec is None:
        sys.exit("mlx-lm is not installed; it is the benchmark extra: pip install --no-deps 'mlx-lm>=0.24'")
    if "mlx_lm" not in sys.modules:
        package = types.ModuleType("mlx_lm")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["mlx_lm"] = package
    version = importlib.metadata.version("mlx-lm")
    return importlib.import_module("mlx_lm.models.llama"), importlib.import_module("mlx_lm.models.cache"), version


def mlx_lm_model(llama_module):
    # The same float32 weights, with mlx-lm's separate q/k/v and gate/up projections (not fused).
    unfused, _meta, _info = load_model(dequantize=True, fuse=False)
    a = unfused.args
    args = llama_module.ModelArgs.from_dict({
        "model_type": "llama", "hidden_size": a.hidden_size, "num_hidden_layers": a.num_hidden_layers,
        "intermediate_size": a.intermediate_size, "num_attention_heads": a.num_attention_heads,
        "num_key_value_heads": a.num_key_value_heads, "rms_norm_eps": a.rms_norm_eps, "vocab_size": a.vocab_size,
        "rope_theta": a.rope_theta, "rope_traditional": True, "tie_word_embeddings": a.tie_word_embeddings,
        "max_position_embeddings": a.max_position_embeddings})
    theirs = llama_module.Model(args)
    theirs.load_weights(tree_flatten(unfused.parameters()), strict=True)
    mx.eval(theirs.parameters())
    return theirs


# ---- flightcheck: the paged runner ------------------------------------------------------------

def ours_prefill(model, prompt):
    runner = ModelRunner(model, num_pages=64)
    start = time.perf_counter()
    logits = runner.forward([SeqChunk(prompt, 0, list(range(64)))])
    return time.perf_counter() - start, int(mx.argmax(logits[0]))


def ours_decode(model, prompts, steps):
    runner = ModelRunner(model, num_pages=64 * len(prompts))
    tables = [list(range(64 * i, 64 * (i + 1))) for i in range(len(prompts))]
    logits = runner.forward([SeqChunk(p, 0, t) for p, t in zip(prompts, tables)])
    # Greedy on the host, as the engine's sampler does: forward's logits are already evaluated.
    tokens = np.asarray(logits).argmax(axis=-1).tolist()
    positions = [len(p) for p in prompts]
    out = [[] for _ in prompts]
    start = time.perf_counter()
    for _ in range(steps):
        logits = runner.forward([SeqChunk([t], pos, tab) for t, pos, tab in zip(tokens, positions, tables)])
        tokens = np.asarray(logits).argmax(axis=-1).tolist()
        positions = [p + 1 for p in positions]
        for seq, t in zip(out, tokens):
            seq.append(t)
    return len(prompts) * steps / (time.perf_counter() - start), out


def contiguous_prefill(model, prompt):
    start = time.perf_counter()
    logits = model.head(model.hidden(mx.array([prompt]), model.make_cache())[:, -1])
    mx.eval(logits)
    return time.perf_counter() - start, int(mx.argmax(logits[0]))


# ---- mlx-lm: its model and KVCache, in the manner of its generate_step ----------------------

def theirs_prefill(model, cache_module, prompt):
    cache = cache_module.make_prompt_cache(model)
    start = time.perf_counter()
    # As mlx-lm's generate_step: all but the last token only fill the cache, the last gives logits.
    model(mx.array([prompt[:-1]]), cache=cache)
    mx.eval([c.state for c in cache])
    logits = model(mx.array([prompt[-1:]]), cache=cache)[:, -1, :]
    mx.eval(logits)
    return time.perf_counter() - start, int(mx.argmax(logits[0]))


def theirs_decode(model, cache_module, prompts, steps):
    cache = cache_module.make_prompt_cache(model)
    batch = mx.array(prompts)
    logits = model(batch, cache=cache)[:, -1, :]
    y = mx.argmax(logits, axis=-1)
    mx.eval(y)
    out = [[] for _ in prompts]
    start = time.perf_counter()
    # mlx-lm's decode loop overlaps building the next step's graph with the running one (async_eval).
    next_y = mx.argmax(model(y[:, None], cache=cache)[:, -1, :], axis=-1)
    mx.async_eval(next_y)
    for step in range(steps):
        y = next_y
        if step + 1 < steps:
            next_y = mx.argmax(model(y[:, None], cache=cache)[:, -1, :], axis=-1)
            mx.async_eval(next_y)
        for seq, t in zip(out, y.tolist()):
            seq.append(t)
    return len(prompts) * steps / (time.perf_counter() - start), out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decode-steps", type=int, default=32)
    parser.add_argument("--prefill-tokens", type=int, default=512)
    parser.add_argument("--json", help="write the results here as JSON")
    args = parser.parse_args(argv)
    try:
        model, tokenizer, info = load_smollm2(dequantize=True)  # first: a bad model file ends it at once
    except ModelFileError as error:  # a missing or corrupt model is bad input: exit 2, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2

    status = blas_status()
    print(f"BLAS: {status.describe()}; MLX {status.mlx_version} on {status.device}")
    # The same matmul with MLX bound to the reference BLAS (MLX imported before flightcheck).
    probe = ("import mlx.core\nfrom flightcheck.impl.blas import measure_matmul_gflops\n"
             "print(measure_matmul_gflops())")
    reference_gflops = float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                            check=True).stdout)
    print(f"fp32 384x384 matmul: {status.matmul_gflops:.0f} GFLOP/s with OpenBLAS, {reference_gflops:.1f} GFLOP/s "
          f"with MLX's default BLAS ({status.matmul_gflops / reference_gflops:.0f}x)")
    llama_module, cache_module, mlx_lm_version = import_mlx_lm()
    theirs = mlx_lm_model(llama_module)
    ids = tokenizer.encode(TEXT * 40)
    prompt = ids[: args.prefill_tokens]
    batch = [ids[17 * i: 17 * i + 128] for i in range(8)]  # 8 different 128-token prompts
    assert len(prompt) == args.prefill_tokens and all(len(p) == 128 for p in batch)

    # Warm-up (first-call allocations, thread pools) and a correctness cross-check of the two models.
    _, first_ours = ours_prefill(model, prompt)
    _, first_theirs = theirs_prefill(theirs, cache_module, prompt)
    if first_ours != first_theirs:
        print(f"warning: first greedy token differs: ours {first_ours}, mlx-lm {first_theirs}")

    results: dict[str, list[float]] = {}
    tokens_agree = True

    def record(name: str, value: float) -> None:
        results.setdefault(name, []).append(value)

    for rep in range(args.repeats):
        record("prefill_s/flightcheck", ours_prefill(model, prompt)[0])
        record("prefill_s/mlx-lm", theirs_prefill(theirs, cache_module, prompt)[0])
        record("prefill_s/contiguous", contiguous_prefill(model, prompt)[0])
        fastops.set_numpy_route(False)
        record("prefill_s/no-numpy-route", ours_prefill(model, prompt)[0])
        fastops.set_numpy_route(True)
        rate, ours_seq = ours_decode(model, [prompt], args.decode_steps)
        record("decode1_tok_s/flightcheck", rate)
        rate, theirs_seq = theirs_decode(theirs, cache_module, [prompt], args.decode_steps)
        record("decode1_tok_s/mlx-lm", rate)
        rate, ours_batch = ours_decode(model, batch, args.decode_steps)
        record("decode8_tok_s/flightcheck", rate)
        rate, theirs_batch = theirs_decode(theirs, cache_module, batch, args.decode_steps)
        record("decode8_tok_s/mlx-lm", rate)
        tokens_agree &= ours_seq == theirs_seq and ours_batch == theirs_batch
        print(f"repeat {rep + 1}/{args.repeats} done", file=sys.stderr)

    medians = {k: statistics.median(v) for k, v in results.items()}
    ratios = {
        "prefill (mlx-lm time / ours)": medians["prefill_s/mlx-lm"] / medians["prefill_s/flightcheck"],
        "decode 1 (ours tok/s / mlx-lm)": medians["decode1_tok_s/flightcheck"] / medians["decode1_tok_s/mlx-lm"],
        "decode 8 (ours tok/s / mlx-lm)": medians["decode8_tok_s/flightcheck"] / medians["decode8_tok_s/mlx-lm"],
        "paging cost (paged / contiguous prefill time)": medians["prefill_s/flightcheck"] / medians["prefill_s/contiguous"],
        "numpy route gain (prefill time without / with)": medians["prefill_s/no-numpy-route"] / medians["prefill_s/flightcheck"],
    }
    print(f"\nSmolLM2-135M float32, {args.prefill_tokens}-token prefill, {args.decode_steps} decode steps, "
          f"median of {args.repeats}; mlx-lm {mlx_lm_version}")
    for name, value in medians.items():
        unit = "s" if name.startswith("prefill") else "tok/s"
        print(f"  {name:32s} {value:8.2f} {unit}   (runs: {', '.join(f'{v:.2f}' for v in results[name])})")
    for name, value in ratios.items():
        print(f"  {name:48s} {value:5.2f}x")
    print(f"  greedy tokens identical to mlx-lm's: {tokens_agree}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"medians": medians, "runs": results, "ratios": ratios, "tokens_agree": tokens_agree,
                       "mlx_lm_version": mlx_lm_version, "blas": status.describe(),
                       "matmul_gflops": {"openblas": status.matmul_gflops, "reference": reference_gflops}}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
