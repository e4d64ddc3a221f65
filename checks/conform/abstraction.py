"""The engine's real state, abstracted into a spec state of the matching :class:`~flightcheck.spec.state.Layout`.

The abstraction reads the engine's own structures, never its event log: each request's phase, hit
pages, computed units, published pages and decode count; the coordinator's flights, index and released
set; the prefix cache's pages (by chained key) with their reference counts. Whether a cached page's KV
was really computed is not a field of the engine, so :class:`KVWitness` sits between the scheduler and
the model runner and records, for every page slot the runner is asked to write, a chained tag of the
tokens that produced it; a cached page whose slots do not carry the tags of its own prefix is abstracted
as ``RESERVED`` (visible but not computed), which the spec's ``visible_after_compute`` forbids.

Terminated requests are normalised as the spec's ``_terminate`` does (hit/done/published/decoded 0),
ghost variables are 0 (the engine has no history variables; the ghost-based properties are checked on
the state the spec reaches by replaying the engine's events instead).

For example::

    >>> from flightcheck.impl.engine import Engine, EngineConfig
    >>> from flightcheck.checks.conform.tracker import SpecTracker
    >>> from flightcheck.spec.scenario import Policy
    >>> eng = Engine.tiny(EngineConfig(num_pages=16))
    >>> witness = KVWitness.attach(eng)
    >>> tracker = SpecTracker(Policy(capacity=8, chunk=32))
    >>> eng.events.add_listener(lambda ev: tracker.observe_arrival(ev, eng))
    >>> _ = eng.add_request([7] * 40)
    >>> abstract_state(eng, tracker, witness) == tracker.spec.apply(tracker.spec.initial(), tracker.last_action)
    True
"""

from __future__ import annotations

from typing import Any, Sequence

from flightcheck.impl.request import Phase
from flightcheck.spec.state import (
    ABORTED, BLOCKED, DECODE, FINISHED, NOT_CACHED, OPEN, PREFILL, READY, RESERVED, WAITING, State,
)

_PHASES = {Phase.BLOCKED: BLOCKED, Phase.WAITING: WAITING, Phase.PREFILL: PREFILL, Phase.DECODE: DECODE,
           Phase.FINISHED: FINISHED, Phase.ABORTED: ABORTED}
_ROOT_TAG = 0x5EED


def chain_tags(token_ids: Sequence[int]) -> list[int]:
    """The KV identity of every position of a sequence: tag(p) = hash(tag(p - 1), token p).

    Two positions carry the same tag exactly when their whole prefixes agree (up to hash collisions),
    which is what makes their K/V equal.
    """
    tags, prev = [], _ROOT_TAG
    for t in token_ids:
        prev = hash((prev, int(t)))
        tags.append(prev)
    return tags


class KVWitness:
    """A transparent proxy of a ``ModelRunner`` that records which page slots each forward pass wrote.

    ``tags[page_id][slot]`` is the chain tag (see :func:`chain_tags`) of the token whose K/V was last
    written into that slot. Everything else is forwarded to the real runner, so the engine runs exactly
    as before. :meth:`attach` installs it on an engine.
    """

    def __init__(self, runner: Any) -> None:
        self._runner = runner
        self.tags: dict[int, list[int | None]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)

    @classmethod
    def attach(cls, engine: Any) -> "KVWitness":
        """Put a witness between ``engine``'s scheduler and its runner; returns the witness."""
        runner = engine.scheduler.runner
        if isinstance(runner, KVWitness):
            return runner
        witness = cls(runner)
        engine.runner = engine.scheduler.runner = witness
        return witness

    def forward(self, chunks: list) -> Any:
        """Record the slots each chunk writes, then run the real forward pass."""
        size = self._runner.page_size
        for chunk in chunks:
            table, pos = chunk.block_table, chunk.start_pos
            prev = _ROOT_TAG if pos == 0 else self._tag(table, pos - 1, size)
            for token in chunk.token_ids:
                prev = hash((prev, int(token)))
                self.tags.setdefault(table[pos // size], [None] * size)[pos % size] = prev
                pos += 1
        return self._runner.forward(chunks)

    def _tag(self, table: list[int], pos: int, size: int) -> int | None:
        slots = self.tags.get(table[pos // size])
        return None if slots is None else slots[pos % size]

    def holds(self, page_id: int, expected: Sequence[int]) -> bool:
        """True when every slot of ``page_id`` carries the expected tags (the page's KV was computed)."""
        return self.tags.get(page_id) == list(expected)


def abstract_state(engine: Any, tracker: Any, witness: KVWitness | None = None) -> State:
    """The engine's current state as a spec state of ``tracker.spec``'s layout.

    ``tracker`` (a :class:`~flightcheck.checks.conform.validator.SpecTracker`) supplies the naming: engine
    request ID -> spec request index (arrival order), input -> class slot, page key -> page slot.
    Requests the tracker has not seen are left absent.
    """
    spec = tracker.spec
    lay = spec.layout
    sched = engine.scheduler
    coord, pool = sched.coordinator, sched.pool
    e = lay.view(lay.initial()).edit()
    page_size = sched.page_size
    for engine_id, i in tracker.index_of.items():
        req = sched.requests.get(engine_id)
        if req is None:
            continue
        ph = _PHASES[req.phase]
        live = ph <= DECODE
        if ph == PREFILL and req.is_prefill_done:
            ph = DECODE  # the first token is due in the same call: prefill complete is decode
        e.ph[i] = ph
        if ph in (PREFILL, DECODE):
            units = spec.scenario.requests[i].num_units
            e.hit[i] = req.num_hit_pages
            e.done[i] = min(-(-min(req.num_computed, req.num_tokens) // page_size), units)
            e.pubd[i] = req.num_published
            e.dec[i] = max(0, len(req.output_token_ids) - 1)
        if live or ph in (FINISHED, ABORTED):
            e.rel[i] = 1 if engine_id in coord.released_request_ids else 0
    for flight_id, flight in coord.flights.items():
        f = tracker.index_of.get(flight_id)
        if f is None:
            continue
        e.fl[f] = OPEN
        if flight.is_leader_live:
            e.mem[f] = f + 1
        for follower_id in flight.follower_request_ids:
            j = tracker.index_of.get(follower_id)
            if j is not None:
                e.mem[j] = f + 1
    for tokens, flight_id in coord.index.items():
        c = tracker.class_of_tokens.get(tuple(tokens))
        f = tracker.index_of.get(flight_id)
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
    names = spec.layout.slot_names()
    return [(names[k], a, b) for k, (a, b) in enumerate(zip(expected, actual))
            if a != b and (ghosts or not names[k].startswith("g_"))]


def without_ghosts(spec: Any, state: State) -> State:
    """``state`` with its ghost slots zeroed (what :func:`abstract_state` can observe)."""
    names = spec.layout.slot_names()
    return tuple(0 if names[k].startswith("g_") else v for k, v in enumerate(state))
