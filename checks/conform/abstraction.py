"""The engine's real state, abstracted into a spec state of the matching :class:`~flightcheck.spec.state.Layout`.

The abstraction reads the engine's own structures, never its event log: each request's phase, hit
pages, computed units, the cached pages it references from the front of its prompt (hits and published
pages while it runs, pins while it waits, what a terminated flight leader still keeps), decode count,
whether its wait expired, its arrival rank (where the layout keeps one) and the flight whose shared
pages it waits for (prefix coordination); the coordinator's flights (named after their current leader),
index and released set; the prefix cache's pages (by chained key) with their reference counts, and with the
:class:`~flightcheck.checks.conform.witness.KVWitness` whether their KV was really written. Everything
the engine holds that this layout has no slot for is checked by :mod:`flightcheck.checks.conform.books`.

Terminated requests are normalised as the spec's ``_terminate`` does (hit/done/decoded 0, and no pages
unless a leader's flight is pending); ghost variables are 0 (the engine has no history variables; the
ghost-based properties are checked on the state the spec reaches by replaying the engine's events).

For example::

    >>> from flightcheck.impl.engine import Engine, EngineConfig
    >>> from flightcheck.checks.conform.tracker import SpecTracker
    >>> from flightcheck.checks.conform.witness import KVWitness
    >>> from flightcheck.spec.scenario import Policy
    >>> eng = Engine.tiny(EngineConfig(num_pages=16))
    >>> witness = KVWitness.attach(eng)
    >>> tracker = SpecTracker(Policy(capacity=8, chunk=32), num_pages=16)
    >>> eng.events.add_listener(lambda ev: tracker.observe_arrival(ev, eng))
    >>> _ = eng.add_request([7] * 40)
    >>> abstract_state(eng, tracker, witness) == tracker.spec.apply(tracker.spec.initial(), tracker.last_action)
    True
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.conform.witness import KVWitness
from flightcheck.impl.request import Phase
from flightcheck.spec.state import (
    ABORTED, BLOCKED, DECODE, FAILED, FINISHED, NOT_CACHED, OPEN, PREFILL, READY, RESERVED, WAITING, State,
)

_PHASES = {Phase.BLOCKED: BLOCKED, Phase.WAITING: WAITING, Phase.PREFILL: PREFILL, Phase.DECODE: DECODE,
           Phase.FINISHED: FINISHED, Phase.ABORTED: ABORTED, Phase.FAILED: FAILED}


def computed_pages(request: Any, page_size: int) -> int:
    """Pages holding the K/V a request has computed (or recovered): its block table as the spec counts it.

    A step allocates its pages while it plans, before the forward pass and before the step's events, so
    between those points a block table may hold pages for work not yet done; they count as planned.
    """
    return -(-request.num_computed // page_size)


def abstract_state(engine: Any, tracker: Any, witness: KVWitness | None = None) -> State:
    """The engine's current state as a spec state of ``tracker.spec``'s layout.

    ``tracker`` (a :class:`~flightcheck.checks.conform.tracker.SpecTracker`) supplies the naming: engine
    request ID -> spec request index (arrival order), input -> class slot, page key -> page slot.
    Requests the tracker has not seen are left absent.
    """
    spec = tracker.spec
    lay = spec.layout
    sched = engine.scheduler
    coord, pool = sched.coordinator, sched.pool
    e = lay.view(lay.initial()).edit()
    page_size = sched.page_size
    if lay.has_via_ties:  # arrival ranks: engine request IDs grow with arrival
        for rank, engine_id in enumerate(sorted(tracker.index_of), start=1):
            e.seq[tracker.index_of[engine_id]] = rank
    for engine_id, i in tracker.index_of.items():
        req = sched.requests.get(engine_id)
        if req is None:
            continue
        ph = _PHASES[req.phase]
        if ph == PREFILL and req.is_prefill_done:
            ph = DECODE  # the first token is due in the same call: prefill complete is decode
        e.ph[i] = ph
        e.exp[i] = 1 if req.is_expired else 0
        e.rel[i] = 1 if engine_id in coord.released_request_ids else 0
        if ph <= DECODE:
            units = spec.scenario.requests[i].num_units
            e.hit[i] = req.num_hit_pages
            e.done[i] = min(-(-min(req.num_computed, req.num_tokens) // page_size), units)
            e.pubd[i] = req.num_published
            e.dec[i] = max(0, len(req.output_token_ids) - 1)
        else:
            e.pubd[i] = len(req.block_table)  # a terminated leader keeps its pages only while its flight is pending
    for flight in coord.flights.values():
        f = tracker.index_of.get(flight.leader_request_id)
        if f is None:
            continue
        e.fl[f] = OPEN
        if flight.is_leader_live:
            e.mem[f] = f + 1
        for follower_id in flight.follower_request_ids:
            j = tracker.index_of.get(follower_id)
            if j is not None:
                e.mem[j] = f + 1
    for flight in coord.flights.values():
        # Under prefix coordination: the flight (named after its current leader) whose shared pages this
        # flight's leader waits for; a lost leader's wait stays until its flight is settled (same call).
        via = coord.flights.get(flight.via_flight_id) if flight.via_flight_id is not None else None
        i = tracker.index_of.get(flight.leader_request_id)
        f = tracker.index_of.get(via.leader_request_id) if via is not None else None
        if i is not None and f is not None:
            e.via[i] = f + 1
    for tokens, flight_id in coord.index.items():
        c = tracker.class_of_tokens.get(tuple(tokens))
        flight = coord.flights.get(flight_id)
        f = tracker.index_of.get(flight.leader_request_id) if flight is not None else None
        if c is not None and f is not None:
            e.idx[c] = f + 1
    for k, (c, p) in enumerate(lay.page_slots):
        key = tracker.page_key(c, p)
        page_id = pool.cached.get(key) if key is not None else None
        if page_id is None:
            e.pg[k] = NOT_CACHED
            continue
        written = witness is None or witness.holds(page_id, tracker.page_tags(c, p, page_size))
        e.pg[k] = READY if written else RESERVED
        e.ref[k] = pool.pages[page_id].ref_count
    return e.build()


def state_diff(spec: Any, expected: State, actual: State, *, ghosts: bool = False) -> list[tuple[str, int, int]]:
    """The slots where two states differ, as ``(slot name, expected, actual)``; ghosts skipped unless asked."""
    if expected == actual:
        return []
    names = _slot_names(spec.layout)[0]
    return [(names[k], a, b) for k, (a, b) in enumerate(zip(expected, actual))
            if a != b and (ghosts or not names[k].startswith("g_"))]


def without_ghosts(spec: Any, state: State) -> State:
    """``state`` with its ghost slots zeroed (what :func:`abstract_state` can observe)."""
    ghosts = _slot_names(spec.layout)[1]
    if not any(state[k] for k in ghosts):
        return tuple(state)
    out = list(state)
    for k in ghosts:
        out[k] = 0
    return tuple(out)


_NAMES: dict[int, tuple[Any, list[str], list[int]]] = {}


def _slot_names(layout: Any) -> tuple[list[str], list[int]]:
    """``layout.slot_names()`` and the ghost slots' positions, remembered per layout (the monitor asks at
    every event)."""
    known = _NAMES.get(id(layout))
    if known is None or known[0] is not layout:
        names = layout.slot_names()
        if len(_NAMES) >= 64:
            _NAMES.clear()
        known = _NAMES[id(layout)] = (layout, names, [k for k, x in enumerate(names) if x.startswith("g_")])
    return known[1], known[2]
