"""One sequence through the paged model runner, token by token: what ``flightcheck generate`` streams.

A simple single-sequence loop (prefill in chunks, then one token a step, stopping at EOS or
``max_tokens``); the engine (:mod:`flightcheck.impl.engine`) is the batched, prefix-cached path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


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


def stream_generate(model, tokenizer, prompt_ids: list[int], sampler, max_tokens: int, prefill_chunk: int,
                    ignore_eos: bool = False):
    """Yields (token_id, text_piece) for one sequence over a ModelRunner, then returns GenerationStats."""
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
