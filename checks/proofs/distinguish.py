"""A shortest distinguishing sequence by explicit breadth-first search over the product of two designs.

The two designs run in lockstep over one action vocabulary, exactly as in
:mod:`flightcheck.checks.proofs.equivalence`; a pair of concrete states is compared through the same
:func:`~flightcheck.checks.proofs.equivalence.observe`. Level by level, the pairs reached after ``d``
steps are asked first whether their phases (or ``g_term``) differ (a sequence of length ``d``), then
whether what they offer differs (enabled actions, termination verdicts: length ``d + 1``), and only
then expanded. So the first difference found is a shortest one, and, because actions are tried in
the spec's deterministic order, the same one on every run.

This answers the same question as z3's bounded search on the product, at the speed of plain Python on
small graphs (the product of two default designs has about as many pairs as one design has states),
while z3 finds its answer by solving an unrolling whose size grows with the depth and the spec
(minutes for the three-request variants). The test suite checks that both give the same length.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.variants import VARIANTS
    >>> scn = SCENARIOS["burst2-abort"]
    >>> r = shortest_difference(VARIANTS["correct"].build(scn), VARIANTS["no-unknown-check"].build(scn), depth=3)
    >>> r.prefix, r.length, r.exhausted
    ([], 1, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flightcheck.spec.model import FlightSpec


@dataclass
class SearchResult:
    """``prefix``: the actions to the first pair that differs (None when none differs up to ``depth``);
    ``length``: the distinguishing sequence's length (the prefix, plus one when the offers differ);
    ``pairs``: product pairs visited; ``exhausted``: every reachable pair was visited (no difference at
    any depth, on this scenario)."""

    prefix: list[str] | None
    length: int | None
    pairs: int
    exhausted: bool


def shortest_difference(spec_a: FlightSpec, spec_b: FlightSpec, depth: int) -> SearchResult:
    """Search the lockstep product of ``spec_a`` and ``spec_b`` to ``depth`` steps (sequences of at most
    ``depth + 1`` actions, as the bounded search does)."""
    from flightcheck.checks.proofs.equivalence import observe

    tail = spec_a.num_requests + 1  # phases and g_term: the last entries of an observation
    start = (spec_a.initial(), spec_b.initial())
    parent: dict[Any, tuple[Any, str] | None] = {start: None}
    level = [start]
    for d in range(depth + 1):
        seen = [(pair, observe(spec_a, pair[0]), observe(spec_b, pair[1])) for pair in level]
        for pair, oa, ob in seen:
            if oa[-tail:] != ob[-tail:]:
                return SearchResult(_path(parent, pair), d, len(parent), False)
        for pair, oa, ob in seen:
            if oa[:-tail] != ob[:-tail]:
                return SearchResult(_path(parent, pair), d + 1, len(parent), False)
        if d == depth:
            break
        nxt = []
        for pair in level:
            sa, sb = pair
            for action in spec_a.enabled(sa):  # the offers are equal, so b can take it too
                child = (spec_a.apply(sa, action), spec_b.apply(sb, action))
                if child not in parent:
                    parent[child] = (pair, str(action))
                    nxt.append(child)
        if not nxt:
            return SearchResult(None, None, len(parent), True)
        level = nxt
    return SearchResult(None, None, len(parent), False)


def _path(parent: dict[Any, tuple[Any, str] | None], pair: Any) -> list[str]:
    out = []
    while parent[pair] is not None:
        pair, action = parent[pair]
        out.append(action)
    return out[::-1]
