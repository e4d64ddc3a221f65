"""The engine's configuration: coordination, release point, publication policy and capacities."""

from __future__ import annotations

from dataclasses import dataclass

from flightcheck.impl.errors import InvalidConfigError

COORDINATIONS = ("none", "single-flight", "prefix")
RELEASE_POINTS = ("after-prefill", "on-completion")
PUBLICATIONS = ("incremental", "on-completion")
LEADER_LOSSES = ("release-all", "promote")


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How the engine schedules, shares and coordinates.

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
    - ``max_running``: the capacity bound on requests in prefill or decode;
    - ``prefill_chunk_pages``: the prefill token budget of one step, in whole pages;
    - ``num_pages``: KV pages in the pool (16 tokens each);
    - ``max_context``: the longest sequence (prompt + output), None for the model's own limit;
    - ``follower_wait_bound``: a follower blocked for more than this many steps expires: it leaves the
      flight and computes for itself (None: wait for the flight, the default);
    - ``min_shared_pages``: under "prefix", the fewest shared pages worth waiting for (ignored otherwise);
    - ``seed``: the base of per-request seeds when a request gives none.
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
            if getattr(self, name) not in allowed:
                raise InvalidConfigError(f"config.{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        for name in ("max_running", "prefill_chunk_pages", "num_pages", "min_shared_pages"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidConfigError(f"config.{name} must be an integer >= 1, got {value!r}")
        for name in ("max_context", "follower_wait_bound"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidConfigError(f"config.{name} must be None or an integer >= 1, got {value!r}")
        if self.coordination in ("single-flight", "prefix") and not self.prefix_caching:
            raise InvalidConfigError(f"config.coordination {self.coordination!r} needs prefix_caching=True: "
                                     "followers wait in order to reuse the leader's pages")
