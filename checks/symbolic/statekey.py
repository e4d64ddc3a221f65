"""The name of an engine state up to what the engine cannot tell apart: the enumeration's two reductions.

:func:`state_key` names an engine state so that the enumeration (:mod:`~flightcheck.checks.symbolic.exhaustive`)
checks and explores one state per class. Page IDs are names only, so they are relabelled. On top of that
come two reductions, each with a switch that turns it off:

- **request renaming** (``symmetry``): states equal up to the names of interchangeable requests share a
  key (the least key over the renamings :func:`_renamings` offers);
- **tombstones** (``tombstones``): a terminated request that holds no page and that no flight, the
  released set or the cache's lookup names (a *tombstone*, :func:`is_tombstone`) is counted, not listed.
  Its ending (finished, aborted, failed; expired or not) and its name are forgotten.

Why tombstones, measured (BENCHMARKS.md, "The engine stage"): with three or four requests over three
pages most states hold one to three finished, aborted or failed requests, and the states that differ
only in how those ended multiply the space: N=3,M=3 single-flight 6,814 states keyed with endings,
2,633 without; N=4,M=3 single-flight unfinished past 55,000 states (157 s of CPU) with endings, covered
whole in 16,781 without (67 s). The other
reductions the issue names measured worse here: keying by the spec's abstraction instead (the
"check each command from every reachable spec state" reading) merges little (N=3,M=3 single-flight:
5,555 abstract states for 6,814 engine states) and is unsound where the engine is deterministic and
the spec is not (the queues' order, the LRU order); partial-order reduction skips states, and every
state carries obligations of its own.

Why tombstones are sound. The engine reads a terminated request only through ``phase.is_live``
(``Scheduler.live``, the termination notice's refusal); everything else a terminated request did is in
the live part of the state, which the key keeps whole (the pages it freed or left cached with their
reference counts and recency, the flights it led, the released set). The spec reads a terminated
request's ending only for a flight it led that is still open (settled in the call that ends it, so
never at a reachable state) and in its ghost slots, which the check does not compare (the engine has
no history variables: :func:`~flightcheck.checks.conform.abstraction.abstract_state`). The one
obligation that names a tombstone is its termination notice (``notify``), whose engine answer could,
in a broken engine, depend on the ending; so at every state the check runs each tombstone's notice
under every other ending too (:data:`ENDINGS`, :func:`with_ending`), which is each state of the class
the key merges. tests/symbolic/test_symbolic_symmetry.py checks both reductions by brute force at
small bounds (every state of a class has the same successor classes and findings).

For example (a request aborted before a second arrives, or failed after its admission: the same state once
the first one's ending and name are forgotten)::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> from flightcheck.checks.symbolic.harness import Command, build_engine, execute
    >>> b = Bound(2, 3)
    >>> def run(*commands):
    ...     eng = build_engine(b, "single-flight")
    ...     for name, arg in commands:
    ...         execute(eng, b, Command(name, arg))
    ...     return eng
    >>> aborted = run(("arrive", 0), ("abort", 0), ("arrive", 0))
    >>> failed = run(("arrive", 0), ("admit", -1), ("fail", 0), ("arrive", 0))
    >>> state_key(aborted) == state_key(failed), state_key(aborted, tombstones=False) == state_key(failed, tombstones=False)
    (True, False)
"""

from __future__ import annotations

import itertools
from typing import Any

from flightcheck.impl.request import Phase

# How the key shows a live request's name for a tombstone's ID (the closed flight a released follower came from).
CLOSED_FLIGHT = -2
# Every ending a tombstone may have had: its terminal phase and whether its wait as a follower expired.
ENDINGS: tuple[tuple[Phase, bool], ...] = tuple(
    (phase, expired) for phase in (Phase.FINISHED, Phase.ABORTED, Phase.FAILED) for expired in (False, True))

# Why requests may be renamed (the symmetry reduction of :func:`state_key`), and how far. The engine and
# the spec read a request ID as a name (dict keys, queue, follower and waiter entries, the released set, a
# flight's ID, which is its founder's request ID; the spec's request index likewise), never as a number,
# with two exceptions. (1) Under prefix coordination a new leader waits via the open flight whose leader
# arrived first among those sharing the most pages (``Coordinator.can_wait_via`` takes the least leader
# ID; the spec's ``via_choice`` the earliest leader index, its only use of index order). So, under prefix
# coordination, the key lists the open flights in that order and keeps the arrival order of every request
# that leads an open flight or may come to lead one (a follower, by promotion: once it leads, its order
# against the other leaders is read); two states that differ in that order never share a key. Under the
# other coordinations no order of IDs is read at all. (2) A new arrival takes an ID above every existing
# one, which any renaming of the existing IDs keeps. Dict orders are not read either:
# ``Scheduler.requests`` and ``Coordinator.flights`` are searched for a unique match, never for a first
# one; the orders that are read (the waiting and running queues, a flight's followers and waiters, the
# cache's publication order) are in the key as sequences. What a request is (its length, page keys,
# max_tokens; its flight's input) is read from the request, not from its ID, and the key carries it in a
# live request's row (:func:`_template`) and its flight's entry, so a renaming moves it with the request.
# A terminated request's row shows only its phase, whether it expired and the pages it still holds
# (nothing the engine does later reads its prompt; a refused notice names it by its ID, which the
# renaming carries along), and a tombstone has no row at all (see the module docstring). On the spec side
# each engine state is checked under its own tracker (the spec's requests in that state's arrival order),
# so the spec action a command performs is renamed with the command. Hence a renaming that keeps the
# order in (1) maps every command, event, abstraction and obligation of one state onto those of the
# other: one state per class is checked and explored, and what it finds (or not) holds for the whole
# class. tests/symbolic/test_symbolic_symmetry.py checks this by brute force at small bounds (every
# state of a class has the same successor classes and findings); it found the follower case of (1),
# which a first version missed.


def is_tombstone(sched: Any, request: Any) -> bool:
    """``request`` terminated, holds no page, and no flight (as its ID, leader, follower or waiter), the
    released set or the coordinator's lookup by page key names it: nothing the engine does reads it but
    its liveness. A live request may still name it as the flight it came from (a released follower keeps
    its founder's ID as ``flight_id``); the engine reads that only through ``coordinator.flights.get``,
    which is None for every closed flight, so the key shows any such name as one mark, "a closed flight"
    (a first version kept the raw ID there, where a renamed live request could take the same name:
    tests/symbolic/test_symbolic_symmetry.py's brute force found it)."""
    if request.phase.is_live or request.block_table:
        return False
    rid, coord = request.request_id, sched.coordinator
    if rid in coord.flights or rid in coord.released_request_ids:
        return False
    return not any(rid == f.leader_request_id or rid in f.follower_request_ids or rid in f.via_request_ids
                   for f in coord.flights.values())


def with_ending(engine: Any, request_id: int, phase: Phase, expired: bool) -> Any:
    """``engine`` (changed in place: pass a copy) with tombstone ``request_id`` ended as ``phase``, its
    wait expired or not: another state of the class :func:`state_key` names (see :data:`ENDINGS`)."""
    request = engine.scheduler.requests[request_id]
    assert is_tombstone(engine.scheduler, request), f"request {request_id} is not a tombstone"
    request.phase, request.is_expired = phase, expired
    return engine


def _template(request: Any) -> tuple:
    """What the engine reads of a request, apart from its ID, progress and flight: its length, its
    ``max_tokens`` and the keys of its shareable pages. Not its whole prompt: the rest of it (a tail in
    a page never shared) is read only to join a flight on arrival, and a flight's input is in the
    flight's entry of the key; so two prompts that differ only in such a tail (the tree's P1 and P2) are
    told apart exactly while one of them is in a flight, as the key did before the reduction."""
    return request.num_tokens, request.sampling.max_tokens, tuple(request.page_keys)


def _flights_in_order(coord: Any) -> list[tuple[int, Any]]:
    """The open flights ``(ID, flight)`` in their current leaders' arrival order (least request ID first)."""
    return sorted(coord.flights.items(), key=lambda item: item[1].leader_request_id)


def _renamings(sched: Any, reqs: list[Any], cache_label: dict[int, int]) -> list[dict[int, int]]:
    """The renamings of the IDs of ``reqs`` (the requests the key lists) :func:`state_key` tries: names
    0, 1, ... handed out in the order of a rename-free signature of each request (its template, phase,
    role, counters, queue, follower and flight positions, the cached pages it holds; of a terminated one
    only what the key shows); requests that tie on it are tried in every order."""
    if len(reqs) < 2:
        return [{r.request_id: 0 for r in reqs}]
    coord = sched.coordinator
    place: dict[int, tuple] = {}
    for flight in coord.flights.values():
        for k, rid in enumerate(flight.follower_request_ids):
            place[rid] = (1, k)
        for k, rid in enumerate(flight.via_request_ids):
            place[rid] = (2, k)
    for k, (fid, _f) in enumerate(_flights_in_order(coord)):
        place[fid] = place.get(fid, (0, 0)) + (3, k)  # founded the k-th open flight (its ID is the flight's)
    waiting = {r.request_id: k for k, r in enumerate(sched.waiting)}
    running = {r.request_id: k for k, r in enumerate(sched.running)}
    released = coord.released_request_ids

    def signature(r: Any) -> tuple:
        held = tuple(cache_label.get(p, -1) for p in r.block_table)
        if not r.phase.is_live:  # only what the key shows of a terminated request
            return (1, r.phase.value, r.is_expired, place.get(r.request_id, (0, 0)), held)
        return (0, _template(r), r.phase.value, r.role, r.num_computed, r.num_hit_pages, r.num_published,
                r.num_pages_reserved, len(r.output_token_ids), r.is_expired, r.request_id in released,
                place.get(r.request_id, (0, 0)), waiting.get(r.request_id, -1), running.get(r.request_id, -1), held)

    names = range(len(reqs))
    signed = sorted(((signature(r), r.request_id) for r in reqs), key=lambda item: item[0])
    runs: list[list[int]] = []
    for k, (sig, rid) in enumerate(signed):
        if k and signed[k - 1][0] == sig:
            runs[-1].append(rid)
        else:
            runs.append([rid])
    if all(len(run) == 1 for run in runs):
        return [dict(zip([rid for _sig, rid in signed], names))]
    out = []
    for order in itertools.product(*[itertools.permutations(run) for run in runs]):
        out.append(dict(zip([rid for run in order for rid in run], names)))
    return out


def _key_under(engine: Any, listed: list[Any], rename: dict[int, int], cached: list[tuple[str, int]],
               renamed_all: bool | None = None) -> tuple:
    """The state key of ``engine`` with the requests ``listed`` renamed by ``rename`` (see :func:`state_key`);
    with ``renamed_all``, an ID ``rename`` does not name is a tombstone's, shown as :data:`CLOSED_FLIGHT`."""
    sched = engine.scheduler
    pool, coord = sched.pool, sched.coordinator
    label: dict[int, int] = {}

    def name(page_id: int) -> int:
        return label.setdefault(page_id, len(label))

    def rid(x: int | None) -> int:
        if x is None:
            return -1
        return rename.get(x, x) if renamed_all is None else rename.get(x, CLOSED_FLIGHT)

    cache = tuple((key, name(p)) for key, p in cached)
    rows = []
    for r in sorted(listed, key=lambda r: rename.get(r.request_id, r.request_id)):
        table = tuple(map(name, r.block_table))
        if r.phase.is_live:
            rows.append((rid(r.request_id), r.phase.value, _template(r), r.role, rid(r.flight_id), table,
                         r.num_computed, r.num_hit_pages, r.num_published, r.num_pages_reserved,
                         len(r.output_token_ids), r.is_expired))
        else:
            rows.append((rid(r.request_id), r.phase.value, table, r.is_expired))
    clocks = sorted({pool.pages[p].last_used for p in label})
    pages = tuple((pool.pages[p].ref_count, pool.pages[p].key or "", pool.pages[p].index,
                   clocks.index(pool.pages[p].last_used)) for p in label)
    flights = tuple((rid(fid), f.input_token_ids, rid(f.leader_request_id), tuple(map(rid, f.follower_request_ids)),
                     f.is_leader_live, f.page_keys, rid(f.via_flight_id), tuple(map(rid, f.via_request_ids)))
                    for fid, f in _flights_in_order(coord))
    members: tuple[int, ...] = ()
    if coord.coordination == "prefix":
        # The open flights stay in their leaders' arrival order, and the arrival order of every request
        # that leads an open flight or may come to lead one (a follower, by promotion) is kept: the order
        # of IDs a later via choice reads (see above is_tombstone).
        members = tuple(map(rid, sorted({f.leader_request_id for f in coord.flights.values()}
                                        | {x for f in coord.flights.values() for x in f.follower_request_ids})))
    else:
        flights = tuple(sorted(flights))  # no order of IDs is read: the flights as a set
    coordinator = (flights, members, tuple(sorted((tokens, rid(f)) for tokens, f in coord.index.items())),
                   tuple(sorted(map(rid, coord.released_request_ids))),
                   tuple(sorted((k, tuple(sorted(map(rid, v)))) for k, v in coord.by_page_key.items())))
    return (len(pool.free_page_ids), cache, pages, coordinator, tuple(rid(r.request_id) for r in sched.waiting),
            tuple(rid(r.request_id) for r in sched.running), tuple(rows), len(sched.requests))


def state_key(engine: Any, *, symmetry: bool = True, tombstones: bool = True) -> tuple:
    """A name of the engine's state up to the names of its pages, (with ``symmetry``) of its
    interchangeable requests and (with ``tombstones``) of the endings of its tombstones: everything its
    behaviour depends on (the cached pages in publication order, reference counts, the LRU order of the
    pages in use, the number of free pages, the coordinator, the queues, the live requests, how many
    requests have arrived), with page IDs relabelled in order of first appearance (the cache, then the
    requests' block tables by request ID), since the engine treats page IDs as names only; not its
    counters, its clock's absolute values or a terminated request's leftover fields (only its phase and
    what it still holds).

    With ``symmetry`` (the default), the request IDs are renamed too (the template a live request was
    sent with is in its row, so a renaming moves it along): the key is the least over the renamings
    :func:`_renamings` offers (every order of the requests a rename-free signature cannot tell apart), so
    every state of a class of renamed states gets the same key. With ``tombstones`` (the default, and
    only with ``symmetry``), the requests :func:`is_tombstone` names have no row: the key counts them.
    Why both are sound is said in the module docstring and above :func:`is_tombstone`.

    For example (two prompts sent in either order, the first one's request aborted: the same state up
    to the requests' names)::

        >>> from flightcheck.checks.symbolic.bound import Bound
        >>> from flightcheck.checks.symbolic.harness import Command, build_engine, execute
        >>> b = Bound(2, 6)
        >>> one, other = build_engine(b, "single-flight"), build_engine(b, "single-flight")
        >>> for eng, *commands in ((one, ("arrive", 0), ("arrive", 1), ("abort", 0)),
        ...                        (other, ("arrive", 1), ("arrive", 0), ("abort", 1))):
        ...     for name, arg in commands:
        ...         execute(eng, b, Command(name, arg))
        >>> state_key(one) == state_key(other), state_key(one, symmetry=False) == state_key(other, symmetry=False)
        (True, False)
    """
    sched = engine.scheduler
    cached = list(sched.pool.cached.items())
    listed = list(sched.requests.values())
    if not symmetry:
        return _key_under(engine, listed, {}, cached)
    if tombstones:
        listed = [r for r in listed if not is_tombstone(sched, r)]
    renamings = _renamings(sched, listed, {p: k for k, (_key, p) in enumerate(cached)})
    marks = True if tombstones else None
    if len(renamings) == 1:
        return _key_under(engine, listed, renamings[0], cached, marks)
    return min(_key_under(engine, listed, rename, cached, marks) for rename in renamings)
