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
from typing import Any, Sequence

from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.spec.scenario import Request

DEFAULT_TAIL = 5  # tail tokens of a spec request with a partial last page, unless a run draws its own


def class_tokens(c: int, num_tokens: int, vocab: int, salt: int = 0, prefix: Sequence[int] = ()) -> list[int]:
    """Deterministic prompt tokens of class ``c``; classes differ in their first token (no shared pages),
    unless ``prefix`` is given: then the prompt starts with it (a shared document, an earlier turn) and
    goes on with class ``c``'s own tokens (:func:`scenario_tokens` makes sure it differs right after).

    For example::

        >>> doc = class_tokens(0, 40, 256)
        >>> q = class_tokens(1, 40, 256, prefix=doc[:16])
        >>> q[:16] == doc[:16], q[16] != doc[16]
        (True, True)
    """
    rng = random.Random(1009 * c + salt)
    own = [c + 1] + [rng.randrange(1, min(vocab, 256)) for _ in range(num_tokens - 1)]
    if not prefix:
        return own
    n = min(len(prefix), num_tokens)
    return list(prefix[:n]) + own[n:]


def tree_shapes(randint: Any, choice: Any, num_classes: int, vocab: int = 256) -> list[list[int]]:
    """Random prompts of every shape for a free conformance run: shorter than a page, whole pages, a
    tail; each after the first starts, two times in three, with one to all of an earlier prompt's full
    pages (then differs). ``randint(a, b)`` and ``choice(seq)`` draw the numbers (``random.Random``'s,
    or a Hypothesis ``data.draw`` wrapped the same way), so both generators share the shapes.

    For example::

        >>> import random
        >>> rng = random.Random(3)
        >>> doc, question, other = tree_shapes(rng.randint, rng.choice, 3)
        >>> len(doc), len(question), len(other), question[:16] == doc[:16], other[:16] == doc[:16]
        (17, 47, 33, True, False)
    """
    prompts: list[list[int]] = []
    for c in range(num_classes):
        pages = randint(0, 3)
        tail = choice((1, 9, 15)) if pages == 0 else choice((0, 1, 9, 15))
        n = PAGE_SIZE * pages + tail
        donors = [p for p in prompts if len(p) >= PAGE_SIZE]
        if donors and choice((False, True, True)):
            base = choice(donors)
            shared = randint(1, len(base) // PAGE_SIZE)
            n = max(n, PAGE_SIZE * shared + choice((0, 1, 9)))
            tokens = class_tokens(c, n, vocab, prefix=base[:PAGE_SIZE * shared])
            cut = PAGE_SIZE * shared
            if cut < min(n, len(base)) and tokens[cut] == base[cut]:
                tokens[cut] = tokens[cut] % (min(vocab, 256) - 1) + 1
        else:
            tokens = class_tokens(c, n, vocab)
        prompts.append(tokens)
    return prompts


def scenario_tokens(scenario: Any, tails: dict[int, int] | None = None, vocab: int = 256) -> dict[int, list[int]]:
    """The prompt of every class of a scenario, honouring its prompt tree: a class with a parent starts
    with the parent's first shared pages and differs right after them.

    For example::

        >>> from flightcheck.spec.scenario import SCENARIOS
        >>> toks = scenario_tokens(SCENARIOS["doc2"])
        >>> toks[0][:16] == toks[1][:16], toks[0][16:32] == toks[1][16:32]
        (True, False)
    """
    out: dict[int, list[int]] = {}
    for c in scenario.classes:
        r = scenario.class_request(c)
        tail = (tails or {}).get(c, r.tail_tokens)
        n = num_prompt_tokens(r, tail)
        parent = scenario.parent_of(c)
        if parent is None:
            out[c] = class_tokens(c, n, vocab)
            continue
        base = out[parent[0]]
        tokens = class_tokens(c, n, vocab, prefix=base[:PAGE_SIZE * parent[1]])
        cut = PAGE_SIZE * parent[1]
        if cut < min(n, len(base)) and tokens[cut] == base[cut]:
            tokens[cut] = tokens[cut] % (min(vocab, 256) - 1) + 1  # differ right after the shared pages
        out[c] = tokens
    return out


def num_prompt_tokens(request: Request, tail: int = DEFAULT_TAIL) -> int:
    """Prompt length of a spec request: its full pages, plus ``tail`` tokens if it has a tail."""
    return PAGE_SIZE * request.num_pages + (tail if request.has_tail else 0)


def request_tokens(request: Request, tail: int = DEFAULT_TAIL, vocab: int = 256) -> list[int]:
    """The prompt token ids of a spec request (requests of one class get the same ids)."""
    return class_tokens(request.cls, num_prompt_tokens(request, tail), vocab)


def lifetime_pages(num_tokens: int, max_tokens: int) -> int:
    """Pages a request may ever hold: prompt plus ``max_tokens - 1`` decoded positions, in whole pages."""
    return -(-(num_tokens + max_tokens - 1) // PAGE_SIZE)
