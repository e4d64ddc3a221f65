"""The benchmark's prompts: fixed lengths, fresh for every run so that every run meets a cold cache
(also on a long-running server), shared exactly where an experiment wants them shared.

For example::

    >>> a, b = prompt_ids(None, 40, "run 1"), prompt_ids(None, 40, "run 2")
    >>> len(a), a == prompt_ids(None, 40, "run 1"), a[:16] == b[:16]
    (40, True, False)
"""

from __future__ import annotations

import hashlib

import numpy as np

TEXT = ("Prefix caching reuses the attention key-value cache of repeated prompt prefixes. When identical "
        "requests reach a cold cache at once, one request computes the prefix and publishes its pages while "
        "the others wait for it and then reuse them. Publication decides when a page becomes reusable; "
        "coordination decides who waits and for how long. ")


def prompt_ids(tokenizer, length: int, nonce: str, *, vocab: int = 256) -> list[int]:
    """``length`` token ids starting with a run-specific tag, then the benchmark text (real model)
    or seeded random ids (tiny model): equal nonces give equal prompts, different ones differ from
    the first page on."""
    if tokenizer is None:
        seed = int.from_bytes(hashlib.sha256(nonce.encode()).digest()[:8], "little")
        return [int(t) for t in np.random.default_rng(seed).integers(0, vocab, size=length)]
    ids = tokenizer.encode(f"[{nonce}] ")
    while len(ids) < length:
        ids += tokenizer.encode(TEXT)
    return ids[:length]
