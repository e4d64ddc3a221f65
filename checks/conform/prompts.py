"""Prompts and lifetimes for conformance runs: the arithmetic that turns a spec request into engine input.

A spec request has a prompt class, full pages, an optional tail and a decode bound; the engine needs
token ids and ``max_tokens``, and admission reserves ``lifetime_pages`` pages for it. Every check that
drives the engine from a scenario (campaigns, replay, coverage, the probe) builds its prompts here.

For example::

    >>> tokens = class_tokens(1, 40, 256)
    >>> len(tokens), tokens[0], lifetime_pages(40, max_tokens=3)
    (40, 2, 3)
    >>> from flightcheck.spec.scenario import Request
    >>> len(request_tokens(Request(0, 2, has_tail=True), tail=5))
    37
"""

from __future__ import annotations

import random

from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.spec.scenario import Request

DEFAULT_TAIL = 5  # tail tokens of a spec request with a partial last page, unless a run draws its own


def class_tokens(c: int, num_tokens: int, vocab: int, salt: int = 0) -> list[int]:
    """Deterministic prompt tokens of class ``c``; classes differ in their first token (no shared pages)."""
    rng = random.Random(1009 * c + salt)
    return [c + 1] + [rng.randrange(1, min(vocab, 256)) for _ in range(num_tokens - 1)]


def num_prompt_tokens(request: Request, tail: int = DEFAULT_TAIL) -> int:
    """Prompt length of a spec request: its full pages, plus ``tail`` tokens if it has a tail."""
    return PAGE_SIZE * request.num_pages + (tail if request.has_tail else 0)


def request_tokens(request: Request, tail: int = DEFAULT_TAIL, vocab: int = 256) -> list[int]:
    """The prompt token ids of a spec request (requests of one class get the same ids)."""
    return class_tokens(request.cls, num_prompt_tokens(request, tail), vocab)


def lifetime_pages(num_tokens: int, max_tokens: int) -> int:
    """Pages a request may ever hold: prompt plus ``max_tokens - 1`` decoded positions, in whole pages."""
    return -(-(num_tokens + max_tokens - 1) // PAGE_SIZE)
