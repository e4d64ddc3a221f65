"""The engine's configuration: coordination, release point, publication policy and capacities."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from flightcheck.impl.errors import InvalidConfigError, shown
from flightcheck.impl.coordinator import COORDINATIONS  # the coordinator's own list, re-exported here
from flightcheck.impl.pages import PAGE_SIZE
RELEASE_POINTS = ("after-prefill", "on-completion")
PUBLICATIONS = ("incremental", "on-completion")
LEADER_LOSSES = ("release-all", "promote")

# --- the limits of the knobs, and why each is where it is ---------------------------------------------
# The KV pool is the one allocation a knob can grow without bound, and it is made at once: it may take at
# most this share of the machine's memory, leaving the rest to the weights, the activations of a forward
# pass, Python and the OS. Past it the pool thrashes or is killed (3,000,000 tiny-model pages took 17 GB
# before the kernel killed the process) or MLX crashes outright (10**8 pages: a segfault, no message).
KV_MEMORY_FRACTION = 0.5
# Bytes of K and V per page of the smallest model the engine ships (the tiny model: 2 layers x K and V x
# 2 KV heads x 16 dims x 16 tokens x 4 bytes). At config time the model is not known, so this floor
# rejects every pool no model could fit; Engine(...) checks the real model's pages before allocating
# (tests/engine/test_engine_errors.py holds this equal to the tiny model's).
MIN_KV_PAGE_BYTES = 8192
# The runner addresses pool slots with int32 indices: every slot (num_pages x 16) must have one.
MAX_POOL_SLOTS = 2**31 - 1
# The longest sequence a knob may describe, in tokens: 128x SmolLM2's context of 8192. Positions are int32
# and a prefill chunk's causal mask is [chunk tokens, sequence tokens]; a larger value is a typo, not a
# model. It bounds max_context, the chunk (a chunk is part of one prompt) and min_shared_pages (a shared
# prefix is part of one prompt too).
MAX_SEQUENCE_TOKENS = 2**20
# Every step scans the running requests, and one forward pass gathers each decoding request's keys padded
# to the longest one's ([max_running, context] slots per layer): 1024 is 64x the benchmarks' 16.
MAX_RUNNING_LIMIT = 1024
# run() tells a stall (only held requests left) from a follower whose wait is still counting only after
# follower_wait_bound + 1 idle steps (about 7 us each): 100,000 keeps that check under a second, and a
# client that wants a longer wait expires its follower itself (Engine.expire).
MAX_FOLLOWER_WAIT_BOUND = 100_000
# Seeds are signed 64-bit integers: what numpy's generators, the server's schema (seed <= 2**63 - 1) and
# any reader of the event log's header take exactly.
MAX_SEED = 2**63 - 1
# When the machine's memory cannot be read: a small laptop's.
FALLBACK_MEMORY_BYTES = 8 << 30


@functools.cache
def machine_memory_bytes() -> int:
    """The memory this process may use: physical memory, or a container's cgroup limit when lower."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = FALLBACK_MEMORY_BYTES
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as f:
                text = f.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and 0 < int(text) < total:  # "max" (v2) or a huge number (v1) means no limit
            total = int(text)
    return total


def address_space_left() -> int | None:
    """Bytes of address space this process may still map under its ``RLIMIT_AS`` (``ulimit -v``): the
    limit less what is mapped now; None when there is no limit."""
    # Why this and not only machine_memory_bytes: under ulimit -v a pool that fits the machine's memory
    # still cannot be mapped, and MLX does not report a failed allocation: the process segfaults.
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    return max(0, soft - _mapped_bytes())


def _mapped_bytes() -> int:
    """The address space this process maps now (VmSize; 0 where /proc cannot tell)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, UnicodeDecodeError, IndexError):
        pass
    return 0


def kv_page_bytes(model_args, page_size: int = PAGE_SIZE, dtype_bytes: int = 4) -> int:
    """Bytes of K and V one page takes over every layer of a model (``llama.ModelArgs``; float32 pools)."""
    return (2 * model_args.num_hidden_layers * model_args.num_key_value_heads * model_args.head_dim
            * page_size * dtype_bytes)


def _gib(num_bytes: int) -> str:
    return f"{num_bytes / (1 << 30):.1f} GiB"


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How the engine schedules, shares and coordinates. Every value is checked here, type and range (the
    limits at the top of this module); a bad one raises ``InvalidConfigError`` naming the knob, the value
    and the limit.

    - ``coordination``: "none" (every request computes what the cache lacks), "single-flight"
      (identical inputs wait for one leader) or "prefix" (single-flight, and a new leader whose prompt
      shares at least ``min_shared_pages`` pages with an open flight's waits for that flight's release
      for the shared pages, then computes its own tail);
    - ``release``: when a flight's followers may proceed: "after-prefill" (the leader's prefill is done
      and its shareable pages are published) or "on-completion" (the leader finished);
    - ``publication``: "incremental" (completed prompt pages are published after every forward pass)
      or "on-completion" (at finish);
    - ``leader_loss``: when a flight's leader is aborted or fails before the release point,
      "release-all" (every follower computes what is not cached) or "promote" (the first follower
      leads the flight, the others keep waiting);
    - ``prefix_caching``: off means no lookups and no publication (the baseline for output equality);
    - ``max_running``: the capacity bound on requests in prefill or decode (at most 1024);
    - ``prefill_chunk_pages``: the prefill token budget of one step, in whole pages (at most 65536);
    - ``num_pages``: KV pages in the pool (16 tokens each; the pool may take at most half the machine's
      memory, and half the address space left under ulimit -v, checked against the model's bytes per page);
    - ``max_context``: the longest sequence (prompt + output), None for the model's own limit (at most 2**20);
    - ``follower_wait_bound``: a follower blocked for more than this many steps expires: it leaves the
      flight and computes for itself (None: wait for the flight, the default; at most 100000);
    - ``min_shared_pages``: under "prefix", the fewest shared pages worth waiting for (ignored otherwise);
    - ``seed``: the base of per-request seeds when a request gives none (0 to 2**63 - 1).
    """

    coordination: str = "single-flight"
    release: str = "after-prefill"
    publication: str = "incremental"
    leader_loss: str = "release-all"
    prefix_caching: bool = True
    max_running: int = 8
    prefill_chunk_pages: int = 32
    num_pages: int = 512
    max_context: int | None = None
    follower_wait_bound: int | None = None
    min_shared_pages: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        for name, allowed in (("coordination", COORDINATIONS), ("release", RELEASE_POINTS),
                              ("publication", PUBLICATIONS), ("leader_loss", LEADER_LOSSES)):
            value = getattr(self, name)
            # Why the str test first: ``in`` on an array-like value compares element-wise and may raise.
            if not isinstance(value, str) or value not in allowed:
                raise InvalidConfigError(f"config.{name} must be one of {', '.join(allowed)}; got {shown(value)}")
        if not isinstance(self.prefix_caching, bool):
            raise InvalidConfigError(f"config.prefix_caching must be true or false, got {shown(self.prefix_caching)}")
        longest = f"pages of {PAGE_SIZE} tokens: the longest sequence, {MAX_SEQUENCE_TOKENS} tokens"
        for name, limit, unit in (("max_running", MAX_RUNNING_LIMIT, "requests in one forward pass"),
                                  ("prefill_chunk_pages", MAX_SEQUENCE_TOKENS // PAGE_SIZE, longest),
                                  ("num_pages", MAX_POOL_SLOTS // PAGE_SIZE, "pages: the runner's int32 slot indices"),
                                  ("min_shared_pages", MAX_SEQUENCE_TOKENS // PAGE_SIZE, longest)):
            _check_int(name, getattr(self, name), 1, limit, unit)
        for name, limit, unit in (("max_context", MAX_SEQUENCE_TOKENS, "tokens: the longest sequence"),
                                  ("follower_wait_bound", MAX_FOLLOWER_WAIT_BOUND, "steps")):
            if getattr(self, name) is not None:
                _check_int(name, getattr(self, name), 1, limit, unit, "None or ")
        _check_int("seed", self.seed, 0, MAX_SEED, "a signed 64-bit integer")
        self.check_pool(MIN_KV_PAGE_BYTES, "the smallest model's")
        if self.coordination in ("single-flight", "prefix") and not self.prefix_caching:
            raise InvalidConfigError(f"config.coordination {self.coordination!r} needs prefix_caching=True: "
                                     "followers wait in order to reuse the leader's pages")

    def check_pool(self, page_bytes: int, whose: str, *, allocating: bool = False) -> None:
        """Raises ``InvalidConfigError`` unless ``num_pages`` pages of ``page_bytes`` each fit in
        ``KV_MEMORY_FRACTION`` of the machine's memory; ``whose`` says whose pages they are. With
        ``allocating`` (said just before the pools are made) they must also fit that share of the address
        space this process may still map (``ulimit -v``)."""
        budget = int(machine_memory_bytes() * KV_MEMORY_FRACTION)
        limit = budget // page_bytes
        needs = f"config.num_pages is {self.num_pages}: at {page_bytes} bytes of KV cache per page ({whose}) that is " \
                f"{_gib(self.num_pages * page_bytes)}"
        if self.num_pages > limit:
            raise InvalidConfigError(f"{needs}, more than {KV_MEMORY_FRACTION:.0%} of this machine's "
                                     f"{_gib(machine_memory_bytes())} of memory: the limit is {limit} pages")
        # Why only when allocating: the space left is this moment's; a config made once the pools exist
        # (Engine(runner), a copy of the config) would count them against themselves.
        space = address_space_left() if allocating else None
        if space is not None and self.num_pages > (limit := int(space * KV_MEMORY_FRACTION) // page_bytes):
            raise InvalidConfigError(f"{needs}, more than {KV_MEMORY_FRACTION:.0%} of the {_gib(space)} of address "
                                     f"space this process may still map (ulimit -v): the limit is {limit} pages")


def _check_int(name: str, value: object, low: int, high: int, unit: str, prefix: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidConfigError(f"config.{name} must be {prefix}an integer >= {low}, got {shown(value)}")
    if value > high:
        raise InvalidConfigError(f"config.{name} is {shown(value)}, above its limit of {high} ({unit})")
