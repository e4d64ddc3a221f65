"""The workload opportunity model: how much prefill would single-flight remove on a real trace?

Single-flight pays only when the same cold block is needed again *on the same instance* before its first
load completes. This module replays a trace (:mod:`flightcheck.checks.workload.trace`) against a fleet of
instances, each with its own LRU prefix cache, and counts that window exactly.

Semantics (pinned by ``tests/workload/test_workload_*.py``):

- **Blocks.** A block is a ``(position, hash_id)`` pair of a request; equal ids at equal positions are
  the same block. :func:`prepare_trace` maps them to dense integers once.
- **Order and ties.** Requests are processed by arrival time; equal timestamps are simultaneous and keep
  file order (a stable sort). Nothing else breaks ties.
- **Anchored cohorts.** A cold miss on a block at time ``t`` opens a cohort anchored at ``t``; its load
  completes at ``t + W`` (``W`` = :attr:`ModelConfig.w_eff_ms`). A request on the same instance that needs
  the block while arriving in ``[t, t + W)`` joins that cohort and still sees the block as cold. Cohorts
  never chain (no sliding window): with ``W = 10``, arrivals at 0, 9 and 18 ms put 0 and 9 in one cohort;
  18 is outside it, so it is a hit (the load completed at 10), or opens a second cohort if the block was
  evicted in between; it never extends the first. At ``t + W`` the block
  enters the cache (or, if still there, becomes most recently used). If the cache is over capacity the
  least recently used block is evicted. Blocks in flight are not in the cache and take no capacity.
- **Completion boundary.** A request arriving exactly at ``t + W`` is processed after the completion and
  is a hit. Completions at equal times are applied in the order their cohorts opened.
- **Lookup.** ``contiguous``: walk from the first block; every cached block before the first unavailable
  one (absent or in flight) is a hit and becomes most recently used; that block and everything after it is
  *needed*, even blocks that happen to be cached. ``independent``: every block on its own; cached blocks
  are hits, the others are needed. A needed block joins the open cohort of that block on this instance,
  or else opens a new cohort.
- **Routing.** ``rr``: the k-th request in time order goes to instance ``k mod N``. ``affinity``: a request
  goes to instance ``hash_ids[0] mod N`` (all requests with the same first hash land together; a request
  with no blocks goes to instance 0).
- **Counters.** A *cold attempt* is a needed block of a request (what the instance would load without
  single-flight). A *cohort* is one load with single-flight; its *fan-in* is the number of cold attempts in
  it (1 + followers). *Duplicate cohorts* have fan-in >= 2. *Removable attempts* = cold attempts - cohorts
  (the followers single-flight would serve from one load); the *redundancy ratio* is removable / cold
  attempts. *Hits* are blocks served from the cache. Lookups = hits + cold attempts.
- **Exact input or partial prefix.** A cohort's *opener* is the request whose cold miss opened it; its other
  members are its *followers*, the removable attempts. A follower is an *exact-input* attempt when its
  request has the same input as the opener's: the same full ``hash_ids`` sequence (same length, same id at
  every position), which is what exact single-flight on identical inputs could coordinate. Every other
  follower is a *partial-prefix* attempt: its request shares the block's prefix with the opener (equal
  cumulative ids at a position mean an equal prefix up to there) but not the whole input, so only prefix
  coordination (waiting on another prompt's flight for the shared part) could serve it. Hence exact-input
  + partial-prefix = removable, per phase and per instance; each is also given as a fraction of cold
  attempts (the two fractions sum to the redundancy ratio). The comparison is with the opener only, as the
  cohort's one load is the opener's: two followers with equal inputs that differ from the opener's are
  both partial-prefix. Input length is not compared: a Mooncake id covers a 512-token block, the last one
  partial (``len(hash_ids) = ceil(input_length / 512)``), so two requests with the same ids whose lengths
  differ beyond the last full block cannot be told apart in Mooncake and count as the same input. (In both
  shipped traces every repeated ``hash_ids`` sequence also repeats its ``input_length``.)
- **Phases.** The warm-up phase is the first ``warmup_fraction`` (default 10%) of the trace's time span:
  arrivals before ``first + fraction * (last - first)``; the steady phase is the rest (an arrival exactly
  at the cut is steady). Requests and hits belong to the phase of their request's arrival; a cohort, with
  all its cold attempts, belongs to the phase of its anchor (so a follower arriving just after the cut is
  counted with its warm-up cohort). Hence every identity holds per phase, and warm-up + steady = all.
- **Insert-on-miss** (:attr:`ModelConfig.insert_on_miss`) is the deliberately wrong model the issue warns
  about: the block enters the cache when its load *starts*. Every cohort then has fan-in 1 and the
  redundancy is exactly zero; the reverse test uses it to show the fan-in comes from the window.

Time scaling: only arrival times and ``W`` enter, through comparisons ``arrival < anchor + W``, so
compressing time by ``s`` at load ``W`` gives the same counts as the original times at ``W_eff = W * s``.

For example::

    >>> from flightcheck.checks.workload.trace import parse_trace_lines
    >>> lines = ['{"timestamp": %d, "input_length": 512, "output_length": 1, "hash_ids": [1]}' % t for t in (0, 9, 18)]
    >>> result = simulate(prepare_trace(parse_trace_lines(lines)), ModelConfig(w_eff_ms=10, capacity_blocks=8))
    >>> s = result.summary["all"]
    >>> (s.num_cohorts, s.num_removable_attempts, s.num_hits, s.fan_in_max)
    (1, 1, 1, 2)
    >>> (s.num_exact_input_removable, s.num_partial_prefix_removable)
    (1, 0)

Two prompts that share only their first block, 5 ms apart: block 0 is removable, as a partial prefix::

    >>> lines = ['{"timestamp": %d, "input_length": 1024, "output_length": 1, "hash_ids": [1, %d]}' % (t, t) for t in (0, 5)]
    >>> s = simulate(prepare_trace(parse_trace_lines(lines)), ModelConfig(w_eff_ms=10, capacity_blocks=8)).summary["all"]
    >>> (s.num_cold_attempts, s.num_removable_attempts, s.num_exact_input_removable, s.num_partial_prefix_removable)
    (4, 1, 0, 1)
    >>> s.partial_prefix_ratio
    0.25
"""

from __future__ import annotations

import bisect
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass

from flightcheck.checks.inputs import shown
from flightcheck.checks.workload.counts import EMPTY, PhaseCounts, counts_of
from flightcheck.checks.workload.trace import Trace

__all__ = ["EMPTY", "LOOKUPS", "PHASES", "ROUTINGS", "CohortRecord", "InstanceResult", "ModelConfig", "PhaseCounts",
           "PreparedTrace", "RunResult", "prepare_trace", "route", "simulate"]

ROUTINGS = ("rr", "affinity")
LOOKUPS = ("contiguous", "independent")
PHASES = ("all", "warmup", "steady")


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """One configuration: effective load latency (ms), instance count, per-instance cache size in blocks,
    routing (``rr`` | ``affinity``), lookup (``contiguous`` | ``independent``), and the insert-on-miss switch.

    Invalid values raise :class:`ValueError` naming the parameter::

        >>> ModelConfig(w_eff_ms=10, capacity_blocks=0)
        Traceback (most recent call last):
        ...
        ValueError: capacity_blocks must be an integer >= 1, got 0
    """

    w_eff_ms: float
    capacity_blocks: int
    num_instances: int = 1
    routing: str = "rr"
    lookup: str = "contiguous"
    insert_on_miss: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.w_eff_ms, (int, float)) or not self.w_eff_ms >= 0 or self.w_eff_ms == float("inf"):
            raise ValueError(f"w_eff_ms must be a finite number >= 0, got {shown(self.w_eff_ms)}")
        if not isinstance(self.capacity_blocks, int) or self.capacity_blocks < 1:
            raise ValueError(f"capacity_blocks must be an integer >= 1, got {shown(self.capacity_blocks)}")
        if not isinstance(self.num_instances, int) or not 1 <= self.num_instances <= 16:
            raise ValueError(f"num_instances must be an integer from 1 to 16, got {shown(self.num_instances)}")
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {ROUTINGS}, got {shown(self.routing)}")
        if self.lookup not in LOOKUPS:
            raise ValueError(f"lookup must be one of {LOOKUPS}, got {shown(self.lookup)}")


@dataclass(frozen=True, slots=True)
class PreparedTrace:
    """A trace in the form the simulation walks: requests stably sorted by time, blocks as dense ints."""

    name: str
    times: tuple[float, ...]
    blocks: tuple[tuple[int, ...], ...]
    first_hash: tuple[int | None, ...]
    start_ms: float
    end_ms: float
    warmup_end_ms: float
    num_block_lookups: int
    inputs: tuple[int, ...]  # per request, a dense id of its full hash_ids sequence (equal ids = same input)

    @property
    def num_requests(self) -> int:
        """The number of requests."""
        return len(self.times)


def prepare_trace(trace: Trace, warmup_fraction: float = 0.1) -> PreparedTrace:
    """Sort a trace stably by time, map ``(position, hash_id)`` blocks and whole inputs to dense ints and fix
    the phase cut."""
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValueError(f"warmup_fraction must be in [0, 1), got {shown(warmup_fraction)}")
    order = sorted(range(trace.num_requests), key=lambda k: trace.requests[k].timestamp_ms)
    dense: dict[tuple[int, int], int] = {}
    dense_inputs: dict[tuple[int, ...], int] = {}
    times, blocks, first, inputs = [], [], [], []
    for k in order:
        r = trace.requests[k]
        times.append(r.timestamp_ms)
        blocks.append(tuple(dense.setdefault((p, h), len(dense)) for p, h in enumerate(r.hash_ids)))
        first.append(r.hash_ids[0] if r.hash_ids else None)
        inputs.append(dense_inputs.setdefault(r.hash_ids, len(dense_inputs)))
    start, end = times[0], times[-1]
    return PreparedTrace(trace.name, tuple(times), tuple(blocks), tuple(first), start, end,
                         start + warmup_fraction * (end - start), sum(map(len, blocks)), tuple(inputs))


def route(prepared: PreparedTrace, num_instances: int, routing: str) -> tuple[tuple[int, ...], ...]:
    """The request indices (in time order) each instance receives."""
    shares: list[list[int]] = [[] for _ in range(num_instances)]
    for k, first in enumerate(prepared.first_hash):
        if routing == "rr":
            shares[k % num_instances].append(k)
        else:
            shares[0 if first is None else first % num_instances].append(k)
    return tuple(tuple(s) for s in shares)



@dataclass(frozen=True, slots=True)
class CohortRecord:
    """One cohort: where, which block (dense id), anchor time (ms), fan-in, phase, and how many of its
    followers have the opener's exact input (the other ``fan_in - 1 - exact_followers`` are partial-prefix)."""

    instance_id: int
    block: int
    anchor_ms: float
    fan_in: int
    phase: str
    exact_followers: int


@dataclass(frozen=True, slots=True)
class InstanceResult:
    """One instance's counters per phase (``all``, ``warmup``, ``steady``) and, if recorded, its cohorts."""

    instance_id: int
    phases: dict[str, PhaseCounts]
    cohorts: tuple[CohortRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class RunResult:
    """The result of one configuration on one trace; :attr:`summary` is the exact sum of the instances."""

    trace_name: str
    config: ModelConfig
    instances: tuple[InstanceResult, ...]
    summary: dict[str, PhaseCounts]
    phase_bounds_ms: dict[str, tuple[float, float]]

    def request_share(self, instance_id: int) -> float:
        """The fraction of all requests routed to an instance."""
        total = self.summary["all"].num_requests
        return self.instances[instance_id].phases["all"].num_requests / total if total else 0.0

    def phase_duration_s(self, phase: str) -> float:
        """The phase's span of arrival time in seconds."""
        lo, hi = self.phase_bounds_ms[phase]
        return (hi - lo) / 1000.0


def _simulate_instance(prepared: PreparedTrace, indices: tuple[int, ...], config: ModelConfig,
                       record_cohorts: bool, instance_id: int) -> InstanceResult:
    """Replay one instance's requests; the hot loop of the model (plain dict, OrderedDict and deque)."""
    times, all_blocks, w, capacity = prepared.times, prepared.blocks, config.w_eff_ms, config.capacity_blocks
    inputs = prepared.inputs  # per request, its input's dense id
    contiguous, insert_on_miss, cut = config.lookup == "contiguous", config.insert_on_miss, prepared.warmup_end_ms
    cache: OrderedDict[int, None] = OrderedDict()
    touch, evict = cache.move_to_end, cache.popitem
    in_flight: dict[int, int] = {}   # block -> its open cohort's index
    pending: deque[tuple[float, int]] = deque()  # (completion time, block), in completion order
    fans: list[int] = []
    # Per cohort its opener (a request index: its time is the anchor, its input decides exact followers), so
    # opening a cohort costs no more than before the split; joins, which are rare, do the extra lookups.
    openers: list[int] = []
    exacts: Counter[int] = Counter()  # cohort -> followers with the opener's input (only cohorts that have some)
    cohort_blocks: list[int] = []
    hits = [0, 0]      # warm-up, steady
    requests = [0, 0]
    for k in indices:
        t = times[k]
        while pending and pending[0][0] <= t:
            b = pending.popleft()[1]
            del in_flight[b]
            if b in cache:
                touch(b)
            else:
                cache[b] = None
                if len(cache) > capacity:
                    evict(last=False)
        blocks = all_blocks[k]
        phase = 0 if t < cut else 1
        requests[phase] += 1
        if contiguous:
            j = 0
            for b in blocks:
                if b not in cache:
                    break
                touch(b)
                j += 1
            needed = blocks[j:] if j else blocks
        else:
            needed = []
            j = 0
            for b in blocks:
                if b in cache:
                    touch(b)
                    j += 1
                else:
                    needed.append(b)
        hits[phase] += j
        for b in needed:
            c = in_flight.get(b)
            if c is not None:
                fans[c] += 1
                if inputs[openers[c]] == inputs[k]:
                    exacts[c] += 1
                continue
            in_flight_index = len(fans)
            fans.append(1)
            openers.append(k)
            cohort_blocks.append(b)
            if insert_on_miss:
                # The same cache insertion as a load completion above, inlined on purpose: a shared
                # closure costs ~10% of this loop (median of 6 interleaved runs, 2026-11-29).
                if b in cache:
                    touch(b)
                else:
                    cache[b] = None
                    if len(cache) > capacity:
                        evict(last=False)
            else:
                in_flight[b] = in_flight_index
                pending.append((t + w, b))
    # Cohorts open in time order, so those anchored before the cut are the ones opened by a request before it.
    split = bisect.bisect_left(openers, bisect.bisect_left(times, cut))
    warm_exact = sum(n for c, n in exacts.items() if c < split)
    warm = counts_of(requests[0], hits[0], fans[:split], warm_exact)
    steady = counts_of(requests[1], hits[1], fans[split:], exacts.total() - warm_exact)
    cohorts: tuple[CohortRecord, ...] = ()
    if record_cohorts:
        cohorts = tuple(CohortRecord(instance_id, b, times[o], f, "warmup" if i < split else "steady", exacts[i])
                        for i, (b, o, f) in enumerate(zip(cohort_blocks, openers, fans)))
    return InstanceResult(instance_id, {"all": warm + steady, "warmup": warm, "steady": steady}, cohorts)


def simulate(prepared: PreparedTrace, config: ModelConfig, record_cohorts: bool = False,
             memo: dict | None = None) -> RunResult:
    """Run one configuration over a prepared trace.

    ``memo`` (a dict the caller keeps) shares per-instance replays between configurations that differ only
    in routing or instance count: an instance's result depends only on its ordered requests and on
    ``(w_eff_ms, capacity_blocks, lookup, insert_on_miss)``, so equal request sequences are replayed once.
    """
    instances = []
    for instance_id, indices in enumerate(route(prepared, config.num_instances, config.routing)):
        key = (indices, config.w_eff_ms, config.capacity_blocks, config.lookup, config.insert_on_miss)
        cached = memo.get(key) if memo is not None and not record_cohorts else None
        if cached is None:
            cached = _simulate_instance(prepared, indices, config, record_cohorts, instance_id)
            if memo is not None and not record_cohorts:
                memo[key] = cached
        instances.append(InstanceResult(instance_id, cached.phases, cached.cohorts))
    summary = {p: sum((i.phases[p] for i in instances), EMPTY) for p in PHASES}
    bounds = {"all": (prepared.start_ms, prepared.end_ms), "warmup": (prepared.start_ms, prepared.warmup_end_ms),
              "steady": (prepared.warmup_end_ms, prepared.end_ms)}
    return RunResult(prepared.name, config, tuple(instances), summary, bounds)
