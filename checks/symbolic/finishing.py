"""Why a request finishes, as an obligation of the engine's finish guard: its finish-reason contract.

The spec's ``finish`` stands for any stop (its guard: the request decodes) and keeps no reason, so an
engine that finishes for the wrong reason, or goes on past an end-of-sequence token, matches every spec
update. The conform room reads the reasons off whole runs' outputs
(:func:`~flightcheck.checks.conform.books.finish_problems`); here the same contract is an obligation of
``Scheduler.can_finish`` at each engine state where a request decodes, asked in every finishing context
that request could be in. The harness's engine has no tokenizer, no end-of-sequence token and no stop
string, so the contexts are set on a copy of the state: the engine's EOS set, the request's
``ignore_eos``, its stop strings (none, one its decoded output contains, one it does not), and its limit
(none reached, ``max_tokens`` reached, the context full), each of the 36 combinations in turn.

The contract, OpenAI's finish reasons in their order of precedence:

- ``eos``: the last output token is one of the engine's end-of-sequence tokens and the request does not
  ignore EOS;
- ``stop``: the decoded output contains one of the request's stop strings;
- ``length``: the output has ``max_tokens`` tokens, or the request's positions are all computed;
- ``None`` otherwise: the request goes on decoding.

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> from flightcheck.checks.symbolic.harness import Command, build_engine, execute
    >>> b = Bound(1, 3)
    >>> eng = build_engine(b, "single-flight")
    >>> for c in (Command("arrive", 0), Command("admit"), Command("prefill", 0), Command("publish", 0),
    ...           Command("prefill", 0)):  # two prompt pages: the second prefill gives the first output
    ...     execute(eng, b, c)
    >>> finish_problem(eng, 0) is None
    True
    >>> [str(c) for c in CONTEXTS[:4]]
    ['nothing', 'eos', 'ignore_eos', 'stop string matched']
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

_NEVER = "\x00never"  # a stop string no decoded output of the check's detokenizer contains


def _detokenize(token_ids: list[int]) -> str:
    """The check's text of a list of token IDs (the harness's engine has no tokenizer): ``<7><7>``."""
    return "".join(f"<{t}>" for t in token_ids)


@dataclass(frozen=True)
class Context:
    """One finishing context: the last output token is an EOS token (``eos``), the request ignores EOS
    (``ignore_eos``), its stop strings (``stop``: None, ``"match"`` one the output contains, ``"miss"``
    one it does not), the limit it has reached (``limit``: None, ``"max_tokens"``, ``"context"``)."""

    eos: bool
    ignore_eos: bool
    stop: str | None
    limit: str | None

    def expected(self) -> str | None:
        """The contract's reason in this context (see the module docstring)."""
        if self.eos and not self.ignore_eos:
            return "eos"
        if self.stop == "match":
            return "stop"
        return "length" if self.limit is not None else None

    def __str__(self) -> str:
        parts = [("eos" if self.eos else ""), ("ignore_eos" if self.ignore_eos else ""),
                 {None: "", "match": "stop string matched", "miss": "stop string not matched"}[self.stop],
                 {None: "", "max_tokens": "max_tokens reached", "context": "context full"}[self.limit]]
        return ", ".join(p for p in parts if p) or "nothing"

    @property
    def size(self) -> int:
        """How many of its factors are set (the contexts are tried fewest first)."""
        return self.eos + self.ignore_eos + (self.stop is not None) + (self.limit is not None)


# Every combination, fewest factors first, so that a failure is reported in its simplest context.
CONTEXTS: tuple[Context, ...] = tuple(sorted(
    (Context(*c) for c in itertools.product((False, True), (False, True), (None, "match", "miss"),
                                            (None, "max_tokens", "context"))),
    key=lambda c: (c.size, not c.eos, not c.ignore_eos, c.stop is None, c.limit is None)))


def _set(engine: Any, request: Any, context: Context, sampling: Any, positions: int) -> None:
    """Put ``request`` of ``engine`` in ``context`` (``sampling`` and ``positions``: its own)."""
    last = request.output_token_ids[-1]
    engine.scheduler.eos_token_ids = frozenset({last}) if context.eos else frozenset()
    stop = {None: (), "match": (_detokenize([last]),), "miss": (_NEVER,)}[context.stop]
    made = len(request.output_token_ids)
    # Past the output when max_tokens is not the limit: the engine's own max_tokens may equal the output.
    max_tokens = made if context.limit == "max_tokens" else made + 1
    request.sampling = replace(sampling, stop=stop, ignore_eos=context.ignore_eos, max_tokens=max_tokens)
    request.max_positions = request.num_computed if context.limit == "context" else max(positions,
                                                                                      request.num_computed + 1)


def finish_problem(engine: Any, request_id: int) -> tuple[Context, str | None] | None:
    """The first context (in :data:`CONTEXTS`' order) in which ``engine``'s ``can_finish`` of decoding
    request ``request_id`` names another reason than the contract, with the reason it named; None when
    it names the contract's reason in every one. ``engine`` is changed: pass a copy."""
    sched = engine.scheduler
    request = sched.requests[request_id]
    if not request.output_token_ids:
        raise ValueError(f"request {request_id} has no output yet ({request.phase.value}): only a decoding "
                         "request has a finish reason to ask for")
    sampling, positions = request.sampling, request.max_positions
    sched.detokenize = _detokenize
    for context in CONTEXTS:
        _set(engine, request, context, sampling, positions)
        got = sched.can_finish(request)
        if got != context.expected():
            return context, got
    return None


__all__ = ["CONTEXTS", "Context", "finish_problem"]
