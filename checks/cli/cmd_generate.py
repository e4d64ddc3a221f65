"""Command ``generate``: stream the real model's answer to a prompt.

For example::

    $ flightcheck generate "What is the capital of France?" --chat --max-tokens 32
    The capital of France is Paris.
    $ flightcheck generate "Once upon a time" --temperature 0.8 --seed 7

It runs one sequence through the paged model runner (prefill in chunks of ``--prefill-chunk`` tokens,
then one token a step: :func:`flightcheck.impl.generate.stream_generate`). A missing or corrupt model
file is bad input (exit 2), as for every command that loads a model.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape


def _error(message: str, code: int) -> typer.Exit:
    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``generate`` to the app."""

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
        from flightcheck.impl.generate import GenerationStats, stream_generate

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
