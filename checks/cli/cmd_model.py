"""Commands ``generate`` (stream the real model's answer) and ``doctor`` (is the fast path in effect?).

For example::

    $ flightcheck generate "What is the capital of France?" --chat --max-tokens 32
    The capital of France is Paris.
    $ flightcheck generate "Once upon a time" --temperature 0.8 --seed 7
    $ flightcheck doctor
    $ flightcheck doctor --json

``generate`` runs one sequence through the paged model runner (prefill in chunks of
``--prefill-chunk`` tokens, then one token a step). ``doctor`` exits 1 when the fast BLAS is not in
effect on Linux and 2 when the model file is missing or corrupt (bad input, as for every command that
loads a model), and says how to fix it.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table


@dataclass(frozen=True)
class GenerationStats:
    """Timings of one ``generate`` run, printed to stderr after the answer."""

    num_prompt_tokens: int
    num_generated_tokens: int
    prefill_seconds: float
    decode_seconds: float
    finish_reason: str

    def describe(self) -> str:
        rate = (self.num_generated_tokens - 1) / self.decode_seconds if self.decode_seconds > 0 else float("nan")
        return (f"{self.num_prompt_tokens} prompt tokens in {self.prefill_seconds:.2f} s, "
                f"{self.num_generated_tokens} generated ({rate:.1f} tok/s decoding), finish: {self.finish_reason}")


def _error(message: str, code: int) -> typer.Exit:
    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def stream_generate(model, tokenizer, prompt_ids: list[int], sampler, max_tokens: int, prefill_chunk: int,
                    ignore_eos: bool = False):
    """Yields (token_id, text_piece) for one sequence over a ModelRunner, then returns GenerationStats.

    A simple single-sequence loop; the engine (impl/engine.py) is the batched, prefix-cached path.
    """
    from flightcheck.impl.pages import PAGE_SIZE
    from flightcheck.impl.runner import ModelRunner, SeqChunk

    total = len(prompt_ids) + max_tokens
    block_table = list(range(-(-total // PAGE_SIZE)))
    runner = ModelRunner(model, num_pages=len(block_table), page_size=PAGE_SIZE)
    decoder = tokenizer.stream_decoder()
    start = time.perf_counter()
    for pos in range(0, len(prompt_ids), prefill_chunk):
        logits = runner.forward([SeqChunk(prompt_ids[pos: pos + prefill_chunk], pos, block_table)])
    prefill_done = time.perf_counter()
    pos, num_generated, reason = len(prompt_ids), 0, "length"
    while True:
        token = sampler.sample(_row(logits))
        num_generated += 1
        if token == tokenizer.eos_id and not ignore_eos:
            reason = "eos"
            break
        yield token, decoder.push(token)
        if num_generated == max_tokens:
            break
        logits = runner.forward([SeqChunk([token], pos, block_table)])
        pos += 1
    return GenerationStats(len(prompt_ids), num_generated, prefill_done - start,
                           time.perf_counter() - prefill_done, reason)


def _row(logits):
    import numpy as np

    return np.asarray(logits[0])


def register(app: typer.Typer) -> None:
    """Add ``generate`` and ``doctor`` to the app."""

    @app.command()
    def generate(
        prompt: str = typer.Argument(..., help="The prompt text."),
        max_tokens: int = typer.Option(64, "--max-tokens", help="Most tokens to generate (>= 1)."),
        temperature: float = typer.Option(0.0, "--temperature", help="0 is greedy; higher samples more freely."),
        top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling mass in (0, 1]."),
        seed: int = typer.Option(0, "--seed", help="Random seed for sampling."),
        chat: bool = typer.Option(False, "--chat", help="Wrap the prompt in the model's chat template."),
        system: Optional[str] = typer.Option(None, "--system", help="System message under --chat."),
        model_path: Optional[str] = typer.Option(None, "--model", help="GGUF file (default: the verified cached SmolLM2)."),
        prefill_chunk: int = typer.Option(512, "--prefill-chunk", help="Prompt tokens per forward pass."),
        stats: bool = typer.Option(True, "--stats/--no-stats", help="Print timings to stderr afterwards."),
    ) -> None:
        """Stream the model's answer to PROMPT (SmolLM2-135M-Instruct on MLX, paged KV cache)."""
        if not prompt.strip():
            raise _error("PROMPT is empty; give the text to continue, e.g. flightcheck generate \"Hello\"", 2)
        if prefill_chunk < 1:
            raise _error(f"--prefill-chunk must be >= 1, got {prefill_chunk}", 2)
        if system is not None and not chat:
            raise _error("--system needs --chat", 2)
        from flightcheck.impl.errors import InvalidSamplingError
        from flightcheck.impl.sampling import Sampler, SamplingParams

        try:
            params = SamplingParams(temperature=temperature, top_p=top_p, seed=seed, max_tokens=max_tokens)
        except InvalidSamplingError as exc:
            raise _error(str(exc).replace("sampling.", "--").replace("_", "-"), 2) from None
        from flightcheck.impl.gguf import load_smollm2
        from flightcheck.impl.model_file import ModelFileError

        try:
            model, tokenizer, info = load_smollm2(model_path)
        except ModelFileError as exc:  # a missing or corrupt model is bad input: exit 2
            raise _error(str(exc), 2) from None
        prompt_ids = tokenizer.encode_chat(prompt, system) if chat else tokenizer.encode(prompt)
        context = info.args.max_position_embeddings
        if len(prompt_ids) + max_tokens > context:
            raise _error(f"the prompt ({len(prompt_ids)} tokens) plus --max-tokens {max_tokens} exceeds the "
                         f"model's context of {context} tokens", 2)
        stream = stream_generate(model, tokenizer, prompt_ids, Sampler(params, seed), max_tokens, prefill_chunk)
        while True:
            try:
                _token, piece = next(stream)
            except StopIteration as done:
                result: GenerationStats = done.value
                break
            sys.stdout.write(piece)
            sys.stdout.flush()
        sys.stdout.write("\n")
        if stats:
            Console(stderr=True).print(f"[dim]{result.describe()}[/]", highlight=False)

    @app.command()
    def doctor(
        as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
        model_path: Optional[str] = typer.Option(None, "--model", help="GGUF file to check (default: the cache)."),
    ) -> None:
        """Check the fast CPU path (OpenBLAS under MLX), MLX's version and device, and the model file."""
        import platform

        from flightcheck.impl.blas import blas_status
        from flightcheck.impl.model_file import FILE_SHA256, ModelFileError, locate

        status = blas_status()
        try:
            model_file, model_ok, model_note = str(locate(model_path)), True, f"sha256 {FILE_SHA256[:16]}... ok"
        except ModelFileError as exc:
            # Why not resolve() again: an empty --model has no file to name, and resolving raises again.
            model_file = str(exc.path) if exc.path is not None else repr(model_path)
            model_ok, model_note = False, str(exc)
        findings = {
            "platform": f"{platform.system()} {platform.machine()}",
            "mlx_version": status.mlx_version,
            "mlx_device": status.device,
            "blas_library": status.loaded_path,
            "matmul_gflops": round(status.matmul_gflops, 1),
            "fast_blas": status.is_fast,
            "blas": status.describe(),
            "model_file": model_file,
            "model_ok": model_ok,
            "model": model_note,
        }
        if as_json:
            print(json.dumps(findings, indent=2))
        else:
            table = Table(title="flightcheck doctor", show_header=False)
            table.add_column("item")
            table.add_column("finding")
            mark = {True: "[green]ok[/]", False: "[bold red]PROBLEM[/]"}
            table.add_row("platform", findings["platform"])
            table.add_row("MLX", f"{status.mlx_version} on {status.device}")
            table.add_row("BLAS", f"{mark[status.is_fast]} {status.describe()}")
            table.add_row("model file", f"{mark[model_ok]} {model_file}: {model_note}")
            Console().print(table)
        if not model_ok:
            raise typer.Exit(2)  # a missing or corrupt model file: bad input, whatever the BLAS
        if not status.is_fast:
            raise typer.Exit(1)
