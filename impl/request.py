"""One request's state: phase, role, block table, progress counters and timings."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from flightcheck.impl.sampling import Sampler, SamplingParams


# The finish reason of a request its client cancelled (its terminal event is an ``abort``); the others are
# "eos", "stop", "length" and "error".
FINISH_ABORTED = "abort"


class Phase(str, Enum):
    """A request's phase, named as in the spec (a blocked follower holds no pages)."""

    BLOCKED = "blocked"
    WAITING = "waiting"
    PREFILL = "prefill"
    DECODE = "decode"
    FINISHED = "finished"
    ABORTED = "aborted"
    FAILED = "failed"

    @property
    def is_live(self) -> bool:
        return self not in (Phase.FINISHED, Phase.ABORTED, Phase.FAILED)


@dataclass(slots=True, eq=False)
class Request:
    """One request inside the engine: its prompt and sampling, its role in single-flight (``role``,
    ``flight_id``), its phase (the spec's per-request phase), the pages it holds (``block_table``) and
    how far they are computed and published, its output, and its timings. Mutated only by the
    scheduler's and the flights' commands; compared by identity (``eq=False``)."""

    request_id: int
    token_ids: tuple[int, ...]
    sampling: SamplingParams
    sampler: Sampler
    input_key: str
    page_keys: list[str]                 # chained keys of the shareable pages
    page_size: int
    max_positions: int                   # KV positions this request may ever need
    role: str = "solo"
    flight_id: int | None = None
    phase: Phase = Phase.WAITING
    block_table: list[int] = field(default_factory=list)  # while waiting: its pins
    num_computed: int = 0                # tokens whose K/V are in the block table's pages
    num_hit_pages: int = 0
    num_published: int = 0               # cached pages it references from the front (hits, own, pins)
    num_pages_reserved: int = 0          # pages it may still allocate (admission reserved them)
    output_token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    is_held: bool = False                # a test barrier: its prefill waits while held
    is_expired: bool = False             # its wait as a follower ran out; it computes for itself
    fault_pending: bool = False          # a test hook: its next forward pass gives non-finite logits
    error: str | None = None             # why it failed
    num_wait_steps: int = 0
    arrival_time: float = 0.0
    first_token_time: float | None = None
    finish_time: float | None = None

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def num_shareable(self) -> int:
        """H = (L - 1) // page_size: a hit may cover at most L - 1 tokens."""
        return len(self.page_keys)

    @property
    def is_prefill_done(self) -> bool:
        return self.num_computed >= self.num_tokens

    @property
    def num_lifetime_pages(self) -> int:
        return -(-self.max_positions // self.page_size)

    @property
    def recovered_tokens(self) -> int:
        return self.num_hit_pages * self.page_size

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_time is None else self.first_token_time - self.arrival_time

    @property
    def completion_s(self) -> float | None:
        return None if self.finish_time is None else self.finish_time - self.arrival_time

    def snapshot(self) -> tuple:
        return (self.request_id, self.phase.value, self.role, self.flight_id, tuple(self.block_table),
                self.num_computed, self.num_hit_pages, self.num_published, self.num_pages_reserved,
                tuple(self.output_token_ids), self.finish_reason, self.is_held, self.is_expired,
                self.fault_pending, self.error, self.num_wait_steps)
