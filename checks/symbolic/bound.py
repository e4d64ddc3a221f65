"""What a check covers: N requests drawn from a small prompt tree, M pages, and the engine settings.

A :class:`Bound` fixes the templates the client may send (by default three prompts that share their
first page, two of which share their first two: a prompt tree), the number of arrivals ``num_requests``
and the pool's ``num_pages``, and the engine configurations to run under (:data:`CONFIGS`: exact
single-flight with either leader-loss policy, and prefix coordination). Every engine state reachable
within the bound is checked, not a sample.

For example::

    >>> b = Bound(2, 6)
    >>> str(b), len(b.template_list), b.lifetime_pages(0)
    ('N=2,M=6', 3, 3)
    >>> parse_bound("3,6")
    Bound(num_requests=3, num_pages=6, templates=None, configs=None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flightcheck.impl.pages import PAGE_SIZE

_A, _C = [1] * PAGE_SIZE, [3] * PAGE_SIZE
# (tokens, max_tokens), a prompt tree: P0 = A +15 tokens (1 shareable page), P1 = A C +tail and
# P2 = A C +another tail (2 shareable pages). P1 and P2 share two pages, each shares one with P0. Each
# lives in 3 pages: P1 and P2 decode one token after their first; P0 two, the second starting a page of
# its own, so that a request hitting a cached prefix can still need more than the free list holds and
# evict (the cache's leaves a finished P1 or P2 left).
TEMPLATES: tuple[tuple[tuple[int, ...], int], ...] = (
    (tuple(_A + [4] * 15), 3),
    (tuple(_A + _C + [5] * 8), 2),
    (tuple(_A + _C + [6] * 8), 2),
)
# The engine settings a bound runs under, by name (EngineConfig fields; num_pages comes from the bound).
CONFIGS: dict[str, dict[str, Any]] = {
    "single-flight": {"coordination": "single-flight", "leader_loss": "release-all", "max_running": 2,
                      "prefill_chunk_pages": 1},
    "promote": {"coordination": "single-flight", "leader_loss": "promote", "max_running": 2,
                "prefill_chunk_pages": 1},
    "prefix": {"coordination": "prefix", "leader_loss": "promote", "max_running": 2, "prefill_chunk_pages": 1},
}


@dataclass(frozen=True)
class Bound:
    """N arrivals (``num_requests``) from ``templates`` (default :data:`TEMPLATES`), a pool of
    ``num_pages`` pages, under each configuration named in ``configs`` (default: all of :data:`CONFIGS`)."""

    num_requests: int
    num_pages: int
    templates: tuple[tuple[tuple[int, ...], int], ...] | None = None
    configs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.num_requests <= 6:
            raise ValueError(f"num_requests must be from 1 to 6, got {self.num_requests}")
        need = max(self.lifetime_pages(t) for t in range(len(self.template_list)))
        if self.num_pages > 64:  # past a few pages per request nothing new is reachable, only more to enumerate
            raise ValueError(f"num_pages must be at most 64, got {self.num_pages}")
        if self.num_pages < need:
            raise ValueError(f"num_pages must be at least {need} (a template's lifetime), got {self.num_pages}")
        unknown = [c for c in self.config_names if c not in CONFIGS]
        if unknown:
            raise ValueError(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGS)}")

    def __str__(self) -> str:
        return f"N={self.num_requests},M={self.num_pages}"

    @property
    def template_list(self) -> tuple[tuple[tuple[int, ...], int], ...]:
        """The templates in force (``templates`` or :data:`TEMPLATES`)."""
        return self.templates if self.templates is not None else TEMPLATES

    @property
    def config_names(self) -> tuple[str, ...]:
        """The configurations in force (``configs`` or every one of :data:`CONFIGS`)."""
        return self.configs if self.configs is not None else tuple(CONFIGS)

    def config(self, name: str) -> dict[str, Any]:
        """The EngineConfig fields of configuration ``name`` over this bound's pool."""
        return {**CONFIGS[name], "num_pages": self.num_pages}

    def lifetime_pages(self, t: int) -> int:
        """Pages template ``t``'s request may need (prompt and max_tokens - 1 positions)."""
        tokens, max_tokens = self.template_list[t]
        return -(-(len(tokens) + max_tokens - 1) // PAGE_SIZE)

    def with_configs(self, *names: str) -> "Bound":
        """The same bound under only the configurations ``names``."""
        return Bound(self.num_requests, self.num_pages, self.templates, tuple(names))


def parse_bound(text: str) -> Bound:
    """``"N,M"`` -> ``Bound(N, M)``; a ValueError saying what is wrong otherwise."""
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdecimal() for p in parts):
        raise ValueError(f"a bound is N,M (requests, pages), e.g. 3,6; got {text!r}")
    return Bound(int(parts[0]), int(parts[1]))
