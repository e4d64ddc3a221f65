"""Why the spec refuses an action, in words, and which properties a state or a forced step violates.

:func:`explain_guard` names every condition of an action's guard that fails in a state (the test suite
asks it about every disabled action of every explored state of the default scenarios, and it never
falls back to a generic answer; a variant's own guard is named by its false conjuncts,
:mod:`~flightcheck.checks.conform.guard_words`); :func:`violated` lists the safety properties a state breaks;
:func:`lookahead` finds the nearest violation a few steps ahead.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> explain_guard(spec, spec.initial(), Action("admit", 0))
    ['r0 is absent, not waiting']
"""

from __future__ import annotations

from collections import deque

from flightcheck.checks.conform import fastcheck
from flightcheck.checks.conform.guard_words import guard_words
from flightcheck.spec import pool
from flightcheck.spec.actions import FLIGHT_ACTIONS
from flightcheck.spec.describe import page_name
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec import properties as spec_properties
from flightcheck.spec.state import (
    ABSENT, BLOCKED, DECODE, FINISHED, NOT_CACHED, OPEN, PHASE_NAMES, PREFILL, READY, WAITING, State, View,
)


def explain_guard(spec: FlightSpec, state: State, action: Action) -> list[str]:
    """The conditions of ``action``'s guard that fail in ``state``, in words."""
    s = spec.view(state)
    n, i = action.name, action.arg
    out: list[str] = []
    pending = [f for f in range(spec.num_requests) if spec.is_orphaned(s, f)]
    if pending and n not in FLIGHT_ACTIONS:
        f = pending[0]
        out.append(f"flight f{f}'s leader r{f} is {PHASE_NAMES[s.ph[f]]}: the engine releases or hands on its "
                   "flight in the same call, before anything else happens")
    explain = _EXPLAIN.get(n)
    out += explain(spec, s, i) if explain is not None else []
    # A guard these words do not cover (a variant's own): the false conjuncts, named from its source.
    return out or guard_words(spec, state, action) or [f"{action}'s guard is false in this state"]


def _memory(spec: FlightSpec, s: View, need: int, what: str) -> list[str]:
    if not spec.scenario.has_pool:
        return []
    free = pool.free_pages(spec, s)
    return [f"{what} needs {need} page(s) but {free} are free: an eviction must come first"] if need > free else []


def _why_evict(spec: FlightSpec, s: View, k: int) -> list[str]:
    page, out = page_name(spec, k), []
    if s.pg[k] != READY:
        out.append(f"page {page} is not cached")
    if s.ref[k] != 0:
        out.append(f"page {page} has {s.ref[k]} references")
    cached = [page_name(spec, child) for child in spec.layout.page_children[k] if s.pg[child] != NOT_CACHED]
    if cached:
        out.append(f"page {page} is not a leaf: {', '.join(cached)} after it {'is' if len(cached) == 1 else 'are'} cached")
    if spec.scenario.has_pool and not spec.scenario.eviction and not pool.under_pressure(spec, s):
        out.append(f"no allocation is short of pages ({pool.free_pages(spec, s)} free): the engine evicts only under "
                   "memory pressure")
    return out


def _why_notify(spec: FlightSpec, s: View, i: int) -> list[str]:
    return [f"r{i} is live ({PHASE_NAMES[s.ph[i]]}): its termination is not a notification"] \
        if i < spec.num_requests and spec.is_live(s, i) else []


def explain_notice(spec: FlightSpec, state: State, i: int) -> str:
    """Why the spec's coordinator accepts or rejects a termination notice for request ``i`` in ``state``
    (``i`` of the spec's requests, or ``num_requests`` for an ID that never arrived), in words.

    For example::

        >>> from flightcheck.spec.scenario import SCENARIOS
        >>> spec = FlightSpec(SCENARIOS["burst2"])
        >>> explain_notice(spec, spec.initial(), 2)
        'the ID never arrived, so the coordinator does not know it and rejects the notice'
    """
    if i >= spec.num_requests:
        return "the ID never arrived, so the coordinator does not know it and rejects the notice"
    s = spec.view(state)
    phase = PHASE_NAMES[s.ph[i]]
    if spec.accepts(s, i):
        where = f"a member of flight f{s.mem[i] - 1}" if s.mem[i] else "in the released set"
        return f"r{i} is {phase} and still known to the coordinator ({where}): it accepts the notice"
    if spec.is_live(s, i):
        return f"r{i} is {phase}: a live request's termination is not a notification"
    return f"r{i} is {phase} and its termination was already taken: the coordinator no longer knows it, and " \
        "rejects the notice"


def _why_arrive(spec: FlightSpec, s: View, i: int) -> list[str]:
    return [f"r{i} already arrived ({PHASE_NAMES[s.ph[i]]})"] if s.ph[i] != ABSENT else []


def _why_admit(spec: FlightSpec, s: View, i: int) -> list[str]:
    out, pol = [], spec.policy
    if s.ph[i] != WAITING:
        out.append(f"r{i} is {PHASE_NAMES[s.ph[i]]}, not waiting" + (" (a follower of an open flight)" if s.ph[i] == BLOCKED else ""))
    if spec.num_running(s) >= pol.capacity:
        out.append(f"{spec.num_running(s)} requests already run (capacity {pol.capacity})")
    if s.ph[i] == WAITING and not spec.fits(s, i):
        out.append(f"r{i} needs up to {spec.scenario.requests[i].num_lifetime_pages} pages, less its hits, but the free and "
                   f"evictable pages ({pool.free_pages(spec, s)} + {pool.num_evictable(spec, s)}) do not cover that and the "
                   f"{pool.total_reserved(spec, s)} the running requests reserved")
    return out


def _why_prefill(spec: FlightSpec, s: View, i: int) -> list[str]:
    if s.ph[i] != PREFILL:
        return [f"r{i} is {PHASE_NAMES[s.ph[i]]}, not prefill"]
    out = []
    if spec.policy.publication == "incremental" and s.pubd[i] < spec.published_upto(s, i):
        out.append(f"r{i} has computed pages not yet published ({s.pubd[i]} of {spec.published_upto(s, i)}): "
                   "incremental publication publishes before the next prefill")
    return out + _memory(spec, s, pool.prefill_need(spec, s, i), f"r{i}'s next prefill")


def _why_publish(spec: FlightSpec, s: View, i: int) -> list[str]:
    pol = spec.policy
    if not pol.prefix_caching:
        return ["prefix caching is off: nothing is published"]
    if not PREFILL <= s.ph[i] <= DECODE:
        return [f"r{i} is {PHASE_NAMES[s.ph[i]]}, not running"]
    if s.pubd[i] >= spec.published_upto(s, i):
        return [f"r{i} has nothing computed to publish (published {s.pubd[i]}, computed shareable "
                f"{spec.published_upto(s, i)})"]
    if pol.publication == "on-completion":
        if not (pol.single_flight and pol.release == "after-prefill"):
            return ["on-completion publication publishes only at finish"]
        if s.ph[i] != DECODE:
            return [f"r{i}'s prefill is not complete (on-completion publication)"]
        if not spec.leads_open_flight(s, i):
            return [f"r{i} does not lead an open flight (on-completion publication)"]
    return []


def _why_release(spec: FlightSpec, s: View, f: int) -> list[str]:
    pol = spec.policy
    if not pol.single_flight:
        return ["coordination is none: there are no flights"]
    if s.fl[f] != OPEN:
        return [f"flight f{f} is not open"]
    ph = PHASE_NAMES[s.ph[f]]
    if spec.is_terminated(s, f):
        if not spec.releases_everyone(s, f):
            return [f"leader r{f} is {ph} and a follower is waiting: under leader loss 'promote' the flight is handed on"]
        return []
    out = []
    others = [g for g in range(spec.num_requests) if g != f and spec.is_orphaned(s, g)]
    if others:
        out.append(f"flight f{others[0]} is pending: its release or hand-over comes first")
    if pol.release == "after-prefill":
        out.append(f"leader r{f} is {ph} with {s.pubd[f]} of {spec.shareable(f)} shareable pages published "
                   "(after-prefill release needs its prefill complete and every shareable page published, "
                   "or the leader terminated)")
    else:
        out.append(f"leader r{f} is {ph}: on-completion release waits for the leader to terminate")
    return out


def _why_promote(spec: FlightSpec, s: View, j: int) -> list[str]:
    if not (spec.policy.single_flight and spec.policy.leader_loss == "promote"):
        return ["leader loss is 'release-all': nobody is promoted"]
    if s.ph[j] != BLOCKED:
        return [f"r{j} is {PHASE_NAMES[s.ph[j]]}, not a waiting follower"]
    f = s.mem[j] - 1
    if not spec.is_orphaned(s, f):
        return [f"r{j}'s flight f{f} still has its leader r{f} ({PHASE_NAMES[s.ph[f]]})"]
    if s.ph[f] == FINISHED:
        return [f"r{j}'s leader r{f} finished: its followers are released, not handed a flight"]
    return [f"r{j} follows flight f{f} but is of another input than its leader"]


def _why_decode(spec: FlightSpec, s: View, i: int) -> list[str]:
    if s.ph[i] != DECODE:
        return [f"r{i} is {PHASE_NAMES[s.ph[i]]}, not decode"]
    if s.dec[i] >= spec.scenario.requests[i].num_decode:
        return [f"r{i} already took {s.dec[i]} decode steps (max_tokens allows {spec.scenario.requests[i].num_decode})"]
    return _memory(spec, s, pool.decode_need(spec, s, i), f"r{i}'s next decode step")


def _why_finish(spec: FlightSpec, s: View, i: int) -> list[str]:
    return [f"r{i} is {PHASE_NAMES[s.ph[i]]}, not decode"] if s.ph[i] != DECODE else []


def _why_abort(spec: FlightSpec, s: View, i: int) -> list[str]:
    return [f"r{i} is {PHASE_NAMES[s.ph[i]]}, not live"] if not spec.is_live(s, i) else []


def _why_fail(spec: FlightSpec, s: View, i: int) -> list[str]:
    return [f"r{i} is {PHASE_NAMES[s.ph[i]]}: only a running request's forward pass can fail"] \
        if not PREFILL <= s.ph[i] <= DECODE else []


def _why_expire(spec: FlightSpec, s: View, j: int) -> list[str]:
    return [f"r{j} is {PHASE_NAMES[s.ph[j]]}, not a blocked follower"] if s.ph[j] != BLOCKED else []


_EXPLAIN = {"arrive": _why_arrive, "admit": _why_admit, "prefill": _why_prefill, "publish": _why_publish,
            "release": _why_release, "promote": _why_promote, "decode": _why_decode, "finish": _why_finish,
            "evict": _why_evict, "abort": _why_abort, "notify": _why_notify, "fail": _why_fail,
            "expire": _why_expire}


_VIOLATED: dict[tuple, list[str]] = {}
_VIOLATED_SIZE = 1 << 16


def violated(spec: FlightSpec, state: State) -> list[str]:
    """Names of the safety properties ``state`` violates (remembered per design, scenario, policy and
    state: the monitor asks after every event, and runs of one scenario revisit the same states).

    A property with a linear-time form (:mod:`~flightcheck.checks.conform.fastcheck`) is decided by it
    when it holds; a violation is always named by the property's own definition."""
    key = (type(spec), spec.scenario, spec.policy, state)
    bad = _VIOLATED.get(key)
    if bad is None:
        bad = [p.name for p in _safety(spec) if not fastcheck.holds(p, spec, state) and not p.holds(spec, state)]
        if len(_VIOLATED) >= _VIOLATED_SIZE:
            _VIOLATED.clear()
        _VIOLATED[key] = bad
    return list(bad)


_SAFETY: dict[int, tuple] = {}


def _safety(spec: FlightSpec) -> list:
    """:func:`~flightcheck.spec.properties.safety_properties` of ``spec``, remembered per spec object and
    policy (which properties apply is static, but deciding it ranges over every pair of requests)."""
    every = spec_properties.PROPERTIES
    known = _SAFETY.get(id(spec))
    if known is not None and known[0] is spec and known[1] == spec.policy and known[2] is every:
        return known[3]
    # safety_properties(spec), without deciding whether the "sometimes" properties apply (one does over every pair)
    props = [p for p in every if p.kind == "always" and p.applies(spec)]
    if len(_SAFETY) >= 64:
        _SAFETY.clear()
    _SAFETY[id(spec)] = (spec, spec.policy, every, props)  # the spec kept alive: its id is not reused while here
    return props


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
