"""The engine's own books, checked at every event: what no spec slot holds must still add up.

:func:`abstract_state` reads what the spec's layout names; this module reads everything else the
engine keeps about a request, a flight or a page, and checks it against the other structures and
against the figures the spec derives (:mod:`flightcheck.spec.pool`):

- the waiting queue holds exactly the waiting requests, the running list exactly the running ones, once;
- a blocked follower holds no page and no reservation and is listed by exactly its own flight; a
  terminated request holds nothing (no page, no reservation, no place in a flight or the released set),
  except a flight leader whose flight is being released or handed on in the same call;
- the coordinator names only live requests (or that pending leader), indexes only open flights, each
  under its leader's input, and never knows a request twice;
- the pool's free list, cache and reference counts agree with each other and with every block table;
  every cached page is a shareable page of some prompt the run has seen;
- the free pages, each running request's block table and its remaining reservation equal the spec's.

Each finding is one sentence naming the request, flight or page; an empty list means the books balance.

For example::

    >>> from flightcheck.impl.engine import Engine, EngineConfig
    >>> from flightcheck.checks.conform.monitor import Monitor
    >>> eng = Engine.tiny(EngineConfig(num_pages=16))
    >>> mon = Monitor(eng)
    >>> _ = eng.add_request([7] * 40)
    >>> engine_books(eng, mon.tracker, mon.state)
    []
    >>> eng.scheduler.waiting.append(eng.scheduler.waiting[0])  # a request queued twice
    >>> engine_books(eng, mon.tracker, mon.state)
    ['the waiting queue holds r0 (engine 0) twice']
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from flightcheck.checks.conform import fastcheck
from flightcheck.checks.conform.abstraction import computed_pages
from flightcheck.checks.conform.witness import chain_tags
from flightcheck.impl.request import Phase
from flightcheck.spec import pool as spec_pool


def engine_books(engine: Any, tracker: Any, expected: Any, witness: Any = None) -> list[str]:
    """Every way the engine's structures disagree with each other or with the spec's derived figures
    (and, given the run's :class:`~flightcheck.checks.conform.witness.KVWitness`, with the K/V written)."""
    sched = engine.scheduler
    out: list[str] = []
    name = _namer(tracker)
    out += _queues(sched, name)
    out += _requests(sched, name)
    out += _coordinator(sched, name)
    out += _pool(sched, tracker)
    if witness is not None:
        out += kv_problems(sched, witness, name)
    if tracker.spec is not None and tracker.spec.scenario.has_pool and not out:
        out += _figures(sched, tracker, expected, name)
    return out


def planned_pages(engine: Any) -> int:
    """Pages running requests hold for work a step has planned but not yet reported (see computed_pages)."""
    size = engine.scheduler.page_size
    return sum(max(0, len(r.block_table) - computed_pages(r, size)) for r in engine.scheduler.running)


def _namer(tracker: Any):
    def name(engine_id: Any) -> str:
        i = tracker.index_of.get(engine_id)
        return f"r{i} (engine {engine_id})" if i is not None else f"engine request {engine_id}"
    return name


def _queues(sched: Any, name) -> list[str]:
    out = []
    for label, queue, phases in (("waiting queue", list(sched.waiting), (Phase.WAITING,)),
                                 ("running list", list(sched.running), (Phase.PREFILL, Phase.DECODE))):
        counts = Counter(r.request_id for r in queue)
        out += [f"the {label} holds {name(rid)} twice" for rid, k in counts.items() if k > 1]
        out += [f"the {label} holds {name(r.request_id)}, which is {r.phase.value}"
                for r in queue if r.phase not in phases]
        out += [f"{name(rid)} is {r.phase.value} but not in the {label}"
                for rid, r in sched.requests.items() if r.phase in phases and rid not in counts]
    return out


# The finish reason of each terminated phase (a finished request's is read off its outputs at its finish).
_END_REASONS = {Phase.FINISHED: ("eos", "stop", "length"), Phase.ABORTED: ("abort",), Phase.FAILED: ("error",)}


def _requests(sched: Any, name) -> list[str]:
    coord = sched.coordinator
    out = []
    follows, waits = _listed_by(coord, "follower_request_ids"), _listed_by(coord, "via_request_ids")
    for rid, r in sched.requests.items():
        flight = coord.flights.get(r.flight_id) if r.flight_id is not None else None
        pending_leader = flight is not None and flight.leader_request_id == rid and not flight.is_leader_live
        if not r.phase.is_live:
            # What a client reads of a terminated request: why it ended and when.
            if r.finish_reason not in _END_REASONS.get(r.phase, ()):
                out.append(f"{name(rid)} is {r.phase.value} but its finish reason is {r.finish_reason!r}")
            if r.finish_time is None:
                out.append(f"{name(rid)} is {r.phase.value} but has no finish time")
            if r.phase is Phase.FAILED and not r.error:
                out.append(f"{name(rid)} failed but carries no error for its client")
            if r.block_table and not pending_leader:
                out.append(f"{name(rid)} is {r.phase.value} but still holds pages {r.block_table}")
            if r.num_pages_reserved:
                out.append(f"{name(rid)} is {r.phase.value} but still reserves {r.num_pages_reserved} pages")
            if rid in coord.released_request_ids:
                out.append(f"{name(rid)} is {r.phase.value} but still in the released set")
            out += [f"{name(rid)} is {r.phase.value} but still follows flight {fid}" for fid in follows.get(rid, [])]
        elif r.phase is Phase.BLOCKED:
            if r.block_table or r.num_pages_reserved:
                out.append(f"{name(rid)} is blocked but holds pages {r.block_table} or reserves {r.num_pages_reserved}")
            lists = follows.get(rid, [])
            own = coord.flights.get(r.flight_id)
            via = own.via_flight_id if own is not None and own.leader_request_id == rid else None
            if via is not None:  # a leader waiting via another prompt's flight (prefix coordination)
                waiting = waits.get(rid, [])
                if lists or waiting != [via]:
                    out.append(f"{name(rid)} waits via flight {via} but is listed by flights {lists} as a follower "
                               f"and by {waiting} as waiting via them")
            elif lists != [r.flight_id]:
                out.append(f"{name(rid)} is blocked on flight {r.flight_id} but listed by flights {lists}")
        elif r.phase is Phase.WAITING and r.num_pages_reserved:
            out.append(f"{name(rid)} is waiting but reserves {r.num_pages_reserved} pages")
    return out


def _listed_by(coord: Any, field: str) -> dict[Any, list]:
    """Request ID -> the IDs of the flights whose ``field`` (followers, or leaders waiting via it) lists it,
    in the flights' order (every request of a long run is looked up: one pass over the flights)."""
    out: dict[Any, list] = {}
    for fid, fl in coord.flights.items():
        for rid in getattr(fl, field):
            listed = out.setdefault(rid, [])
            if fid not in listed:
                listed.append(fid)
    return out


def _coordinator(sched: Any, name) -> list[str]:
    coord, reqs = sched.coordinator, sched.requests
    out = []
    for rid in coord.released_request_ids:
        if rid not in reqs or not reqs[rid].phase.is_live:
            out.append(f"the released set holds {name(rid)}, which is not live")
    members: Counter = Counter()
    for fid, fl in coord.flights.items():
        leader = reqs.get(fl.leader_request_id)
        if leader is None or (fl.is_leader_live != leader.phase.is_live):
            out.append(f"flight {fid}'s leader {name(fl.leader_request_id)} is "
                       f"{leader.phase.value if leader else 'unknown'} but the flight says "
                       f"{'live' if fl.is_leader_live else 'gone'}")
        if fl.is_leader_live:
            members[fl.leader_request_id] += 1
            if leader.role != "leader":  # what a client reads of it (promotion makes a follower the leader)
                out.append(f"{name(fl.leader_request_id)} leads flight {fid} but its role is {leader.role!r}")
        for rid in fl.follower_request_ids:
            members[rid] += 1
            if rid in reqs and reqs[rid].role != "follower":
                out.append(f"{name(rid)} follows flight {fid} but its role is {reqs[rid].role!r}")
        if coord.index.get(fl.input_token_ids) != fid:
            out.append(f"flight {fid} is open but its input is not indexed to it")
    for rid, k in members.items():
        if k > 1:
            out.append(f"{name(rid)} belongs to {k} flights")
        if rid in coord.released_request_ids:
            out.append(f"{name(rid)} is both in a flight and in the released set")
    for fid in coord.index.values():
        if fid not in coord.flights:
            out.append(f"the index names flight {fid}, which is not open")
    # The page-key index lists each open flight under each of its page keys, and nothing else: an entry
    # left behind (even an empty one) is a structure that grows with every flight a server ever had.
    listed = {key: set(fids) for key, fids in coord.by_page_key.items()}
    want: dict[str, set] = {}
    for fid, fl in coord.flights.items():
        for key in fl.page_keys:
            want.setdefault(key, set()).add(fid)
    if listed != want:
        key = min(k for k in listed.keys() | want.keys() if listed.get(k) != want.get(k))
        out.append(f"the page-key index lists flights {sorted(listed.get(key, ()))} under key {key}, the open "
                   f"flights with that page {sorted(want.get(key, ()))}")
    out += _via_books(coord, name)
    return out


def _via_books(coord: Any, name) -> list[str]:
    """Prefix coordination's structures agree: a flight's waiting leaders wait via it, a wait names an
    open flight, and the page-key index lists exactly the open flights under each of their keys."""
    out = []
    for fid, fl in coord.flights.items():
        via = fl.via_flight_id
        if via is not None and (via not in coord.flights
                                or fl.leader_request_id not in coord.flights[via].via_request_ids):
            out.append(f"flight {fid}'s leader {name(fl.leader_request_id)} waits via flight {via}, which does not "
                       "list it")
        for rid in fl.via_request_ids:
            own = next((g for g in coord.flights.values() if g.leader_request_id == rid), None)
            if own is None or own.via_flight_id != fid:
                out.append(f"flight {fid} lists {name(rid)} as waiting via it, but {name(rid)} leads no flight that does")
    want: dict = {}
    for fid, fl in coord.flights.items():
        for key in fl.page_keys:
            want.setdefault(key, set()).add(fid)
    if {k: set(v) for k, v in coord.by_page_key.items() if v} != want:
        out.append("the page-key index of open flights does not list exactly the open flights' pages")
    return out


def _pool(sched: Any, tracker: Any) -> list[str]:
    pool = sched.pool
    out = []
    try:
        pool.check_invariants()
    except AssertionError as error:
        out.append(f"the page pool is inconsistent: {error}")
    refs: Counter = Counter()
    for r in sched.requests.values():
        refs.update(r.block_table)
    for page in pool.pages:
        if page.ref_count != refs.get(page.page_id, 0):
            out.append(f"page {page.page_id} has {page.ref_count} references but {refs.get(page.page_id, 0)} "
                       "block tables hold it")
    for key in pool.cached:
        if key not in tracker.key_slot:
            out.append(f"page key {key} is cached, but it is no shareable page of any prompt seen")
    return out


def kv_problems(sched: Any, witness: Any, name=str) -> list[str]:
    """Every running request's computed positions hold the K/V of its own tokens.

    Position p of a request (prompt, then outputs) lives in slot p % page_size of page
    block_table[p // page_size]; once computed, that slot must carry the chain tag of the request's own
    first p + 1 tokens, whether the request wrote it or took the page from the cache. A wrong page in
    a block table, a cache hit on another prompt's page, K/V written at the wrong position or a page
    overwritten under a reader all show here, one sentence per request, at its first wrong position."""
    size = sched.page_size
    out = []
    known = getattr(witness, "__dict__", {}).get("_chains", {})
    chains: dict[int, tuple[tuple, list[int]]] = {}  # the running requests' sequences and their chain tags
    for r in sched.running:
        n = r.num_computed
        expected = _chain(known, chains, r)[:n]
        table, tags = r.block_table, witness.tags
        # Page by page first: the common case (every position right) costs one comparison a page.
        if all(index < len(table) and (tags.get(table[index]) or [])[:len(expected[lo:lo + size])]
               == expected[lo:lo + size] for index, lo in enumerate(range(0, len(expected), size))):
            continue
        for p, tag in enumerate(expected):
            index = p // size
            page = r.block_table[index] if index < len(r.block_table) else None
            written = witness.tags.get(page, [None] * size)[p % size] if page is not None else None
            if written != tag:
                where = f"page {page} (index {index})" if page is not None else f"no page (index {index})"
                out.append(f"{name(r.request_id)}'s position {p} in {where} does not hold the K/V of its own tokens")
                break
    if hasattr(witness, "__dict__"):
        witness.__dict__["_chains"] = chains  # the next event extends them (a request's sequence only grows)
    return out


def _chain(known: dict, chains: dict, r: Any) -> list[int]:
    """:func:`chain_tags` of ``r``'s prompt and outputs, extended from what the last event computed."""
    seq = tuple(r.token_ids) + tuple(r.output_token_ids)
    old = known.get(r.request_id)
    if old is not None and 0 < len(old[0]) <= len(seq) and seq[:len(old[0])] == old[0]:
        tags = old[1] + chain_tags(seq[len(old[0]):], old[1][-1]) if len(seq) > len(old[0]) else old[1]
    else:
        tags = chain_tags(seq)
    chains[r.request_id] = (seq, tags)
    return tags


def _figures(sched: Any, tracker: Any, expected: Any, name) -> list[str]:
    spec = tracker.spec
    s = spec.view(expected)
    size = sched.page_size
    out = []
    planned = 0
    for rid, r in sched.requests.items():
        i = tracker.index_of.get(rid)
        if i is None or r.phase not in (Phase.PREFILL, Phase.DECODE):
            continue
        table = computed_pages(r, size)
        ahead = len(r.block_table) - table
        planned += max(ahead, 0)
        want_table = spec_pool.block_table(spec, s, i)
        if spec_pool.is_running(s, i) and table != want_table:
            out.append(f"{name(rid)}'s block table covers {table} pages of computed K/V, the spec's {want_table}")
        want_reserved = spec_pool.reserved(spec, s, i)
        if r.num_pages_reserved + max(ahead, 0) != want_reserved:
            out.append(f"{name(rid)} reserves {r.num_pages_reserved} more pages (and planned {max(ahead, 0)}), "
                       f"the spec {want_reserved}")
    free, want_free = sched.pool.num_free + planned, fastcheck.free_pages(spec, expected)
    if free != want_free:
        out.append(f"the pool has {sched.pool.num_free} free pages ({planned} more planned for this step), "
                   f"the spec {want_free}")
    return out


def finish_problems(engine: Any, engine_id: int, event: dict[str, Any]) -> list[str]:
    """Whether a request finished at the first output that ends it, for the reason that ends it.

    Read from its outputs alone (not from the engine's own test): the first output that is an EOS
    token (unless ignored), completes a stop string, reaches ``max_tokens`` or fills the context ends
    the request, with reason "eos", "stop" or "length" in that order of precedence; and the first of
    them has its time (what a client reads as the time to first token)."""
    request = engine.scheduler.requests.get(engine_id)
    if request is None:
        return [f"finish: the engine no longer knows request {engine_id}"]
    outputs, params = list(request.output_token_ids), request.sampling
    eos = frozenset() if params.ignore_eos else engine.scheduler.eos_token_ids
    detokenize = engine.scheduler.detokenize
    end = None
    for k, token in enumerate(outputs):
        if token in eos:
            end = (k, "eos")
        elif params.stop and detokenize is not None and any(s in detokenize(outputs[:k + 1]) for s in params.stop):
            end = (k, "stop")
        elif k + 1 >= params.max_tokens or len(request.token_ids) + k >= engine.context:
            end = (k, "length")
        if end is not None:
            break
    if end is None:
        return [f"finish: r{engine_id} finished ({event.get('reason')}) after {len(outputs)} outputs, none of which ends it"]
    k, reason = end
    out = []
    if request.first_token_time is None or request.first_token_time < request.arrival_time:
        out.append(f"finish: r{engine_id} produced {len(outputs)} outputs but its time to first token is "
                   f"{request.ttft_s!r}")
    if k + 1 != len(outputs):
        out.append(f"finish: r{engine_id} should have finished at output {k + 1} ({reason}), finished after {len(outputs)}")
    elif event.get("reason") != reason:
        out.append(f"finish reason: engine {event.get('reason')}, its outputs say {reason}")
    return out
