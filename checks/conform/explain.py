"""Why the spec refuses an action, in words, and which properties a state or a forced step violates.

:func:`explain_guard` names every condition of an action's guard that fails in a state (the test suite
asks it about every disabled action of every explored state of the default scenarios, and it never
falls back to a generic answer); :func:`violated` lists the safety properties a state breaks;
:func:`lookahead` finds the nearest violation a few steps ahead.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> explain_guard(spec, spec.initial(), Action("admit", 0))
    ['r0 is absent, not waiting']
"""

from __future__ import annotations

from collections import deque

from flightcheck.spec.describe import page_name
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.properties import safety_properties
from flightcheck.spec.state import BLOCKED, DECODE, NOT_CACHED, OPEN, PHASE_NAMES, PREFILL, READY, WAITING, State


def explain_guard(spec: FlightSpec, state: State, action: Action) -> list[str]:
    """The conditions of ``action``'s guard that fail in ``state``, in words."""
    s = spec.view(state)
    n, i = action.name, action.arg
    pol = spec.policy
    out: list[str] = []
    if n == "evict":
        page = page_name(spec, i)
        if s.pg[i] != READY:
            out.append(f"page {page} is not cached")
        if s.ref[i] != 0:
            out.append(f"page {page} has {s.ref[i]} references")
        c, p = spec.layout.page_slots[i]
        if p + 1 < spec.layout.num_shareable[c] and s.pg[i + 1] != NOT_CACHED:
            out.append(f"page {page} is not a leaf: its successor is cached")
        return out or ["guard false"]
    if n == "notify":
        return [f"r{i} is live ({PHASE_NAMES[s.ph[i]]}): its termination is not a notification"]
    ph = PHASE_NAMES[s.ph[i]]
    if n == "arrive":
        out.append(f"r{i} already arrived ({ph})")
    elif n == "admit":
        if s.ph[i] != WAITING:
            out.append(f"r{i} is {ph}, not waiting" + (" (a follower of an open flight)" if s.ph[i] == BLOCKED else ""))
        if spec.num_running(s) >= pol.capacity:
            out.append(f"{spec.num_running(s)} requests already run (capacity {pol.capacity})")
    elif n == "prefill":
        if s.ph[i] != PREFILL:
            out.append(f"r{i} is {ph}, not prefill")
        elif pol.publication == "incremental" and s.pubd[i] < spec.published_upto(s, i):
            out.append(f"r{i} has computed pages not yet published ({s.pubd[i]} of {spec.published_upto(s, i)}): "
                       "incremental publication publishes before the next prefill")
    elif n == "publish":
        if not PREFILL <= s.ph[i] <= DECODE:
            out.append(f"r{i} is {ph}, not running")
        elif s.pubd[i] >= spec.published_upto(s, i):
            out.append(f"r{i} has nothing computed to publish (published {s.pubd[i]}, computed shareable "
                       f"{spec.published_upto(s, i)})")
        elif pol.publication == "on-completion":
            if not (pol.single_flight and pol.release == "after-prefill"):
                out.append("on-completion publication publishes only at finish")
            elif s.ph[i] != DECODE:
                out.append(f"r{i}'s prefill is not complete (on-completion publication)")
            elif not spec.leads_open_flight(s, i):
                out.append(f"r{i} does not lead an open flight (on-completion publication)")
    elif n == "release":
        if not pol.single_flight:
            out.append("coordination is none: there are no flights")
        elif s.fl[i] != OPEN:
            out.append(f"flight f{i} is not open")
        elif pol.release == "after-prefill":
            out.append(f"leader r{i} is {ph} with {s.pubd[i]} of {spec.shareable(i)} shareable pages published "
                       "(after-prefill release needs its prefill complete and every shareable page published, "
                       "or the leader terminated)")
        else:
            out.append(f"leader r{i} is {ph}: on-completion release waits for the leader to terminate")
    elif n == "decode":
        if s.ph[i] != DECODE:
            out.append(f"r{i} is {ph}, not decode")
        else:
            out.append(f"r{i} already took {s.dec[i]} decode steps (max_tokens allows "
                       f"{spec.scenario.requests[i].num_decode})")
    elif n == "finish":
        out.append(f"r{i} is {ph}, not decode")
    elif n == "abort":
        out.append(f"r{i} is {ph}, not live")
    return out or ["guard false"]


def violated(spec: FlightSpec, state: State) -> list[str]:
    """Names of the safety properties ``state`` violates."""
    return [p.name for p in safety_properties(spec) if not p.holds(spec, state)]


def lookahead(spec: FlightSpec, state: State, depth: int = 2) -> tuple[str, list[str]] | None:
    """The nearest safety violation the spec reaches from ``state`` within ``depth`` steps: (property, path)."""
    seen = {state}
    queue = deque([(state, [])])
    while queue:
        s, path = queue.popleft()
        if path:
            bad = violated(spec, s)
            if bad:
                return bad[0], path
        if len(path) >= depth:
            continue
        for a, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                queue.append((t, path + [str(a)]))
    return None


def forced(spec: FlightSpec, state: State, action: Action) -> list[str]:
    try:
        return violated(spec, spec.apply(state, action))
    except Exception:  # a forced update may index out of range; then it names nothing
        return []
