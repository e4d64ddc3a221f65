"""Why the engine's own scheduling never takes some spec edges: each missed edge named with its reason.

The spec lets every engine step happen in any order; the engine takes them in the fixed order of its
step loop. So some edges of a scenario's graph are out of reach for the engine whatever a client does,
and the coverage figures say which and why instead of hiding them. :func:`reason` reads the edge's
source state and action and names the first rule of the step loop that rules it out:

- ``publish-in-step``: under incremental publication a request publishes in the step that computed
  the pages, so nothing else happens while it holds computed, unpublished shareable pages; under
  on-completion publication with the after-prefill release point, a flight's leader publishes in the
  step that completes its prefill (its followers' early release needs the pages), so nothing else
  happens while such a leader decodes with unpublished shareable pages;
- ``release-in-step``: a flight whose leader reached the after-prefill release point is released in
  that same step;
- ``finish-at-limit``: a request that took its last allowed decode step finishes in that step;
- ``admit-first``: a step admits every waiting request that fits before it computes anything, and
  arrivals, cancels and the like come between steps, so no engine step runs while an admission waits;
- ``decodes-first``: a step gives every decoding request its token before it prefills, so a prefill
  never precedes a decode that the same step owes;
- ``finish-after-token``: a request finishes right after its own token (EOS or ``max_tokens``), never
  after another request's step; the states where another request moved in between are out of reach;
- ``prefill-budget``: the step's prefill budget goes to the running requests in order, so a later one
  prefills only when every earlier one is held or done (holds reach some such states, not all);
- ``pressure-only``: the engine evicts only when an allocation is short, and then its LRU victim;
- ``fifo-admission``: the engine admits the first waiting request that fits, in the order they started
  waiting (while at most two turnovers of its running set wait: deeper, it alternates with the longest
  prompt, and a scenario that may queue so deep is not filtered), where the spec admits any that fits. The order is not part of a spec state, so no per-edge
  test can say it; :func:`flightcheck.checks.conform.edge_classes.class_paths` searches with the order
  carried beside each state, and an edge class no such search reaches is out of reach by this rule.

An edge no rule explains is reported as ``unexplained``: either the campaign has not found it yet or a
rule is missing, and the benchmark lists those edges in full.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> s = spec.initial()
    >>> for a in ("arrive(0)", "admit(0)", "prefill(0)"):
    ...     s = spec.apply(s, Action(a.split("(")[0], int(a[-2])))
    >>> reason(spec, s, Action("arrive", 1))
    'publish-in-step'
"""

from __future__ import annotations

from typing import Any

from flightcheck.spec import pool
from flightcheck.spec.actions import (ADMISSIONS, CACHE_PUBLICATIONS, COMPLETIONS, FLIGHT_ACTIONS, FOLLOWER_RELEASES,
                                       PROMPT_PASSES, SLOT_ACTIONS, Action, parse_action)
from flightcheck.spec.state import DECODE, PREFILL

RULES = ("publish-in-step", "release-in-step", "finish-at-limit", "admit-first", "decodes-first",
         "finish-after-token", "prefill-budget", "pressure-only", "fifo-admission")


def reason(spec: Any, state: Any, action: Action) -> str:
    """The first step-loop rule that keeps the engine from taking ``action`` in ``state``, or ``unexplained``."""
    s = spec.view(state)
    n = spec.num_requests
    name, i = action.name, action.arg
    if spec.policy.publication == "incremental":
        for j in range(n):
            if pool.is_running(s, j) and s.pubd[j] < spec.published_upto(s, j) and not (name in CACHE_PUBLICATIONS and i == j):
                return "publish-in-step"
    elif spec.policy.release == "after-prefill" and spec.policy.single_flight:
        for j in range(n):
            if spec.leads_open_flight(s, j) and s.ph[j] == DECODE and s.pubd[j] < spec.shareable(j) \
                    and not (name in CACHE_PUBLICATIONS and i == j):
                return "publish-in-step"
    if spec.policy.release == "after-prefill" and spec.policy.single_flight:
        for f in range(n):
            if spec.leads_open_flight(s, f) and s.ph[f] == DECODE and s.pubd[f] >= spec.shareable(f) \
                    and not (name in FOLLOWER_RELEASES and i == f):
                return "release-in-step"
    for j in range(n):
        if s.ph[j] == DECODE and s.dec[j] >= spec.scenario.requests[j].num_decode and not (name in COMPLETIONS and i == j):
            return "finish-at-limit"
    engine_step = spec.is_engine(action) and name not in FLIGHT_ACTIONS
    if engine_step and name not in ADMISSIONS and any(spec.guard(state, Action(a, j)) for a in ADMISSIONS for j in range(n)):
        return "admit-first"
    if name in PROMPT_PASSES and any(s.ph[j] == DECODE and s.dec[j] < spec.scenario.requests[j].num_decode
                                 for j in range(n) if j != i):
        return "decodes-first"
    if name in COMPLETIONS:
        return "finish-after-token"
    if name in PROMPT_PASSES and any(s.ph[j] == PREFILL for j in range(n) if j < i):
        return "prefill-budget"
    if name in SLOT_ACTIONS:
        return "pressure-only"
    return "unexplained"


def explain_missed(graph: Any, covered: set, spec: Any) -> dict[str, list[tuple[Any, Any, str]]]:
    """Every edge of ``graph`` not in ``covered``, grouped by :func:`reason` (rule -> [(u, v, action)])."""
    out: dict[str, list[tuple[Any, Any, str]]] = {}
    for u, v, data in graph.edges(data=True):
        if (u, v) in covered:
            continue
        text = data["actions"][0]
        out.setdefault(reason(spec, u, parse_action(text)), []).append((u, v, text))
    return out
