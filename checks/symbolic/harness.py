"""The engine under the check: the real scheduler, coordinator and page pool over a runner with fixed logits.

The check never runs the MLX model: :class:`FixedLogitsRunner` answers every forward pass with the same
logits row (token 7 wins), so prefill and decode run the engine's real bookkeeping and sample a real,
deterministic token. :class:`Command` names one of the engine's public guard/command pairs at a state;
:func:`enabled_commands` lists those whose engine guard holds, :func:`execute` runs one (on a copy
:func:`thaw` makes of a state :func:`freeze` saved once), and :func:`state_key` names an engine state up
to the names of its pages and requests, so that the enumeration visits each class of states once.

The engine guards (the adapter table's, :data:`~flightcheck.checks.conform.adapter.ADAPTER`, with the
step loop's order, :data:`DISCIPLINE`), as the engine's own ``step`` composes them (the step publishes
right after every prefill and finishes a request at once when its output reaches ``max_tokens``):

- ``admit``: ``can_admit()`` is not None; ``prefill(r)``: ``can_prefill(r)`` and not ``can_publish(r)``;
  ``publish(r)``: ``can_publish(r)`` (which once held for a terminated request with computed pages, whose
  ``publish`` then failed: found by this check, fixed in ``impl/scheduler.py``); ``release(f)``: ``can_release(f)``; ``decode(r)``: ``can_decode(r)``
  and its output is shorter than ``max_tokens``; ``finish(r)``: ``r`` decodes (the spec's finish stands for
  any stop: EOS, a stop string, length); ``evict``: ``can_evict()`` is not None while an allocation the
  running requests' next steps make exceeds the free list (the one place the engine evicts);
- the client's: ``arrive(t)`` (``Engine.add_request``) while fewer than N have arrived, ``abort(r)``
  (``Engine.abort``) of a live request, ``notify(r)`` (``Engine.notify_termination`` of a terminated or unknown ID:
  it must be refused), ``expire(r)`` (``Engine.expire``) of a blocked one, ``fail(r)`` (``can_fail``/``fail``).

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> eng = build_engine(Bound(2, 6), "single-flight")
    >>> [str(c) for c in enabled_commands(eng, Bound(2, 6))]
    ['arrive(t0)', 'arrive(t1)', 'arrive(t2)', 'notify(unknown)']
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np

from flightcheck.checks.conform.adapter import ADAPTER, Submission
from flightcheck.checks.symbolic.bound import Bound
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.impl.request import Phase
from flightcheck.spec.actions import NOTICES, SUBMISSIONS

UNKNOWN_ID = 10_000  # a request ID no bound reaches: a termination notice for it must be refused
VOCAB = 256
TOKEN = 7


class FixedLogitsRunner:
    """A model runner without a model: every forward pass returns one fixed logits row per chunk."""

    page_size = PAGE_SIZE
    vocab_size = VOCAB
    max_positions = 4096

    def __init__(self, num_pages: int) -> None:
        self.num_pages = num_pages
        self.kv_bytes = num_pages * 1024

    def forward(self, chunks: list[Any]) -> np.ndarray:
        """``len(chunks)`` rows of logits in which token :data:`TOKEN` wins."""
        logits = np.zeros((len(chunks), VOCAB), dtype=np.float32)
        logits[:, TOKEN] = 1.0
        return logits


def build_engine(bound: Bound, config: str) -> Engine:
    """An empty engine of configuration ``config`` over ``bound``'s pool, on a :class:`FixedLogitsRunner`."""
    return Engine(FixedLogitsRunner(bound.num_pages), None, EngineConfig(**bound.config(config)))


@dataclass(frozen=True)
class Frozen:
    """An engine's whole state as bytes (:func:`freeze`), to be thawed into any number of independent
    copies (:func:`thaw`): the enumeration freezes a state once and thaws one copy per command it runs,
    so the serialising half of a copy is paid once per state rather than once per command."""

    data: bytes
    runner: Any
    samplers: dict[int, Any]


def freeze(engine: Engine) -> Frozen:
    """``engine``'s state as bytes (through pickle, several times faster than ``copy.deepcopy`` here).
    Left out, and shared by every thawed copy: the runner (it holds no state of the check's) and the
    requests' samplers (greedy: their generators are never drawn from). The event history is left out
    too: a thawed copy starts an empty one, numbered on from the original's."""
    log, sched, runner = engine.events, engine.scheduler, engine.runner
    listeners, history = log._listeners, log.events
    samplers = {rid: r.sampler for rid, r in sched.requests.items()}
    log._listeners, log.events, engine.runner, sched.runner = [], [], None, None
    for r in sched.requests.values():
        r.sampler = None
    try:
        data = pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        log._listeners, log.events, engine.runner, sched.runner = listeners, history, runner, runner
        for rid, r in sched.requests.items():
            r.sampler = samplers[rid]
    return Frozen(data, runner, samplers)


def thaw(frozen: Frozen) -> Engine:
    """A new, independent engine in the state :func:`freeze` saved."""
    clone = pickle.loads(frozen.data)
    clone.runner = clone.scheduler.runner = frozen.runner
    for rid, r in clone.scheduler.requests.items():
        r.sampler = frozen.samplers[rid]
    return clone


def copy_engine(engine: Engine) -> Engine:
    """An independent copy of ``engine``'s whole state (:func:`thaw` of :func:`freeze`): the runner and
    the samplers shared, an empty event history numbered on from the original's."""
    return thaw(freeze(engine))


@dataclass(frozen=True, order=True)
class Command:
    """One engine command: ``name`` (the spec action it performs) and its argument (a template for
    ``arrive``, a request ID, a flight ID for ``release``, -1 when the engine chooses: ``admit``, ``evict``)."""

    name: str
    arg: int = -1

    def __str__(self) -> str:
        if self.name in SUBMISSIONS:
            return f"arrive(t{self.arg})"
        if self.name in NOTICES and self.arg == UNKNOWN_ID:
            return "notify(unknown)"
        return f"{self.name}({'' if self.arg < 0 else self.arg})"


def allocation_need(sched: Any, req: Any) -> int:
    """Fresh pages the request's next step allocates (what ``plan_prefill``/``plan_decode`` take)."""
    ps = sched.page_size
    if req.phase is Phase.PREFILL and not req.is_prefill_done:
        first = req.num_computed // ps
        left = -(-(req.num_tokens - req.num_computed) // ps)
        end = min(req.num_tokens, (first + min(left, sched.config.prefill_chunk_pages)) * ps)
        return -(-end // ps) - len(req.block_table)
    if req.phase is Phase.DECODE and len(req.output_token_ids) < req.sampling.max_tokens:
        return 1 if req.num_computed // ps == len(req.block_table) else 0
    return 0


def under_pressure(sched: Any) -> bool:
    """The running requests' next steps need more pages than the free list holds (so an allocation evicts)."""
    return sum(allocation_need(sched, r) for r in sched.running) > sched.pool.num_free


def engine_guard(engine: Engine, command: Command) -> bool:
    """Whether the engine's guard for ``command`` holds (see the module docstring): its entry of the adapter
    table (:data:`~flightcheck.checks.conform.adapter.ADAPTER`) and of :data:`DISCIPLINE`."""
    sched = engine.scheduler
    extra = DISCIPLINE.get(command.name)
    return ADAPTER[command.name].guard(sched, command.arg) and (extra is None or extra(sched, command.arg))


# The step loop's order among the commands the adapter table enables, as the engine's own ``step`` composes
# them: it publishes right after every prefill (so no prefill runs while a publication is due), evicts only
# when an allocation needs memory, and aborts only a live request (an abort of any other ID is a notice).
DISCIPLINE: dict[str, Any] = {
    "prefill": lambda sched, rid: not sched.can_publish(sched.requests[rid]),
    "evict": lambda sched, _: under_pressure(sched),
    "abort": lambda sched, rid: rid in sched.requests and sched.requests[rid].phase.is_live,
}


def candidate_commands(engine: Engine, bound: Bound) -> list[Command]:
    """Every command that could apply now (guards not yet asked), in a fixed order."""
    sched = engine.scheduler
    out = []
    if len(sched.requests) < bound.num_requests:
        out += [Command("arrive", t) for t in range(len(bound.template_list))]
    out += [Command("admit"), Command("evict")]
    out += [Command("release", f) for f in sorted(sched.coordinator.flights)]
    for rid in sorted(sched.requests):
        out += [Command(n, rid) for n in ("prefill", "publish", "decode", "finish", "abort", "notify", "expire",
                                          "fail")]
    out.append(Command("notify", UNKNOWN_ID))
    return out


def enabled_commands(engine: Engine, bound: Bound) -> list[Command]:
    """The commands whose engine guard holds, in :func:`candidate_commands`' order."""
    return [c for c in candidate_commands(engine, bound)
            if c.name in SUBMISSIONS or engine_guard(engine, c)]


def execute(engine: Engine, bound: Bound, command: Command) -> None:
    """Run ``command`` through the engine's own command (its guard must hold), by its entry of the adapter
    table. A refused notice (``notify``) raises ``UnknownRequestError`` as the engine does; anything else the
    engine raises propagates."""
    arg = command.arg
    if command.name in SUBMISSIONS:
        tokens, max_tokens = bound.template_list[arg]
        arg = Submission(tuple(tokens), max_tokens)
    ADAPTER[command.name].command(engine, arg)


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
# A terminated request's row shows only its phase, whether it expired and the pages it still holds, as
# the key did before the reduction (nothing the engine does later reads its prompt; a refused notice
# names it by its ID, which the renaming carries along). On the spec side each engine state is checked
# under its own tracker (the spec's requests in that state's arrival order), so the spec action a command
# performs is renamed with the command. Hence a renaming that keeps the order in (1) maps every command,
# event, abstraction and obligation of one state onto those of the other: one state per class is checked
# and explored, and what it finds (or not) holds for the whole class. tests/symbolic/
# test_symbolic_symmetry.py checks this by brute force at small bounds (every state of a class has the
# same successor classes and findings); it found the follower case of (1), which a first version missed.


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


def _renamings(sched: Any, cache_label: dict[int, int]) -> list[dict[int, int]]:
    """The renamings of request IDs :func:`state_key` tries: the IDs in use, handed out in the order of a
    rename-free signature of each request (its template, phase, role, counters, queue, follower and
    flight positions, the cached pages it holds; of a terminated one only what the key shows); requests
    that tie on it are tried in every order."""
    import itertools

    reqs = list(sched.requests.values())
    if len(reqs) < 2:
        return [{}]  # nothing to rename
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

    ids = sorted(r.request_id for r in reqs)
    signed = sorted(((signature(r), r.request_id) for r in reqs), key=lambda item: item[0])
    runs: list[list[int]] = []
    for k, (sig, rid) in enumerate(signed):
        if k and signed[k - 1][0] == sig:
            runs[-1].append(rid)
        else:
            runs.append([rid])
    if all(len(run) == 1 for run in runs):
        return [dict(zip([rid for _sig, rid in signed], ids))]
    out = []
    for order in itertools.product(*[itertools.permutations(run) for run in runs]):
        out.append(dict(zip([rid for run in order for rid in run], ids)))
    return out


def _key_under(engine: Engine, rename: dict[int, int], cached: list[tuple[str, int]]) -> tuple:
    """The state key of ``engine`` with its request IDs renamed by ``rename`` (see :func:`state_key`)."""
    sched = engine.scheduler
    pool, coord = sched.pool, sched.coordinator
    label: dict[int, int] = {}

    def name(page_id: int) -> int:
        return label.setdefault(page_id, len(label))

    def rid(x: int | None) -> int:
        return -1 if x is None else rename.get(x, x)

    cache = tuple((key, name(p)) for key, p in cached)
    rows = []
    for r in sorted(sched.requests.values(), key=lambda r: rename.get(r.request_id, r.request_id)):
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
        # of IDs a later via choice reads (see above _template).
        members = tuple(map(rid, sorted({f.leader_request_id for f in coord.flights.values()}
                                        | {x for f in coord.flights.values() for x in f.follower_request_ids})))
    else:
        flights = tuple(sorted(flights))  # no order of IDs is read: the flights as a set
    coordinator = (flights, members, tuple(sorted((tokens, rid(f)) for tokens, f in coord.index.items())),
                   tuple(sorted(map(rid, coord.released_request_ids))),
                   tuple(sorted((k, tuple(sorted(map(rid, v)))) for k, v in coord.by_page_key.items())))
    return (len(pool.free_page_ids), cache, pages, coordinator, tuple(rid(r.request_id) for r in sched.waiting),
            tuple(rid(r.request_id) for r in sched.running), tuple(rows))


def state_key(engine: Engine, *, symmetry: bool = True) -> tuple:
    """A name of the engine's state up to the names of its pages and (with ``symmetry``) of its
    interchangeable requests: everything its behaviour depends on (the cached pages in publication order,
    reference counts, the LRU order of the pages in use, the number of free pages, the coordinator, the
    queues, the live requests), with page IDs relabelled in order of first appearance (the cache, then
    the requests' block tables by request ID), since the engine treats page IDs as names only; not its
    counters, its clock's absolute values or a terminated request's leftover fields (only its phase and
    what it still holds).

    With ``symmetry`` (the default), the request IDs are renamed too (the template a live request was
    sent with is in its row, so a renaming moves it along): the key is the least over the renamings
    :func:`_renamings` offers (every order of the requests a rename-free signature cannot tell apart), so
    every state of a class of renamed states gets the same key. Why that is sound (the renamings keep the
    engine's and the spec's behaviour) is said above :func:`_template`.

    For example (two prompts sent in either order, the first one's request aborted: the same state up
    to the requests' names)::

        >>> from flightcheck.checks.symbolic.bound import Bound
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
    if not symmetry:
        return _key_under(engine, {}, cached)
    renamings = _renamings(sched, {p: k for k, (_key, p) in enumerate(cached)})
    if len(renamings) == 1:
        return _key_under(engine, renamings[0], cached)
    return min(_key_under(engine, rename, cached) for rename in renamings)


__all__ = ["DISCIPLINE", "Command", "FixedLogitsRunner", "Frozen", "UnknownRequestError", "build_engine", "copy_engine",
           "enabled_commands", "engine_guard", "execute", "freeze", "state_key", "thaw", "under_pressure"]
