"""The deterministic probe: eight identical requests on a cold cache, with the leader held at a barrier.

The first request is admitted and then held (``engine.hold``) before its first prefill; seven more
requests with the same prompt arrive while it waits; then it is resumed and everything runs to the
end. The probe counts, on the real engine and model:

- prefix lookups (admissions that consulted the prefix cache);
- page allocations (pages handed out by the pool);
- for every shareable page of the prompt, how many times the runner computed its K/V and into how many
  distinct physical pages (observed on the runner, not taken from the engine's counters).

Without coordination every request computes every page itself: eight computations of each shared page
into eight destination pages. With single-flight the leader computes each page once and the followers
recover it: exactly one. The engine's event log is checked against the spec as it runs.

For example::

    >>> probe("none").computations_per_page
    [8, 8, 8, 8]
    >>> probe("single-flight").computations_per_page
    [1, 1, 1, 1]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.conform.engines import build_engine
from flightcheck.checks.conform.prompts import class_tokens
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.checks.conform.watchdog import CALL_LIMIT_SECONDS, EngineHang, deadline

NUM_REQUESTS = 8
PROMPT_PAGES = 4
TAIL_TOKENS = 5


@dataclass
class ProbeResult:
    """What the probe counted for one coordination setting."""

    coordination: str
    num_requests: int
    prefix_lookups: int
    page_allocations: int
    computations_per_page: list[int]
    destinations_per_page: list[int]
    recovered_tokens: int
    prefill_tokens: int
    conformed: bool
    events: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return dict(self.__dict__)


class _Counter:
    """Runner proxy counting, per shareable prompt page, computations and destination pages."""

    def __init__(self, runner: Any, prompt: list[int], num_shareable: int) -> None:
        self._runner = runner
        self.prompt = prompt
        self.num_shareable = num_shareable
        self.computations = [0] * num_shareable
        self.destinations: list[set[int]] = [set() for _ in range(num_shareable)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)

    def forward(self, chunks: list) -> Any:
        """Count the shared pages each chunk computes in full, then run the real forward pass."""
        size = self._runner.page_size
        for chunk in chunks:
            for p in range(self.num_shareable):
                lo, hi = p * size, (p + 1) * size
                if chunk.start_pos <= lo and chunk.end_pos >= hi:
                    self.computations[p] += 1
                    self.destinations[p].add(chunk.block_table[p])
        return self._runner.forward(chunks)


class _CountingPool:
    """Page-pool proxy counting the pages handed out (observed at the pool, not read from the engine's counters)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.num_allocated = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def allocate(self, num: int) -> list[int]:
        """Count, then allocate from the real pool."""
        self.num_allocated += num
        return self._pool.allocate(num)


def probe(coordination: str, *, model: str = "tiny", release: str = "after-prefill",
          publication: str = "incremental", num_requests: int = NUM_REQUESTS) -> ProbeResult:
    """Run the probe once under ``coordination`` ("none" or "single-flight")."""
    from flightcheck.impl.config import EngineConfig
    from flightcheck.impl.sampling import SamplingParams

    if num_requests < 2:
        raise ValueError(f"the probe needs at least 2 requests, got {num_requests}")
    config = EngineConfig(coordination=coordination, release=release, publication=publication,
                          max_running=num_requests, prefill_chunk_pages=64, num_pages=16 * num_requests)
    engine = build_engine(model, config)
    monitor = Monitor(engine)  # the witness goes in first, the counter wraps it
    prompt = class_tokens(0, PAGE_SIZE * PROMPT_PAGES + TAIL_TOKENS, 256)
    counter = _Counter(engine.scheduler.runner, prompt, PROMPT_PAGES)
    engine.runner = engine.scheduler.runner = counter
    pool = engine.scheduler.pool = _CountingPool(engine.scheduler.pool)
    params = SamplingParams(max_tokens=4)
    limit = CALL_LIMIT_SECONDS.get(model, max(CALL_LIMIT_SECONDS.values()))
    try:
        with deadline(limit):  # an engine that never returns fails the probe instead of hanging the check
            leader = engine.add_request(prompt, params)
            engine.hold(leader)
            engine.step()  # admitted (a lookup, a miss), held before its first prefill
            for _ in range(num_requests - 1):
                engine.add_request(prompt, params)
            engine.resume(leader)
            engine.run(max_steps=200)
    except EngineHang:
        raise RuntimeError(f"the engine did not finish the probe within {limit:.0f} s") from None
    monitor.check("at the end of the probe")
    c = engine.counters
    return ProbeResult(coordination, num_requests, c["num_prefix_lookups"], pool.num_allocated, counter.computations,
                       [len(d) for d in counter.destinations], c["num_recovered_tokens"], c["num_prefill_tokens"],
                       monitor.failure is None, len(engine.events.events))
