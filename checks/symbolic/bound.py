"""What a check covers: N requests drawn from a small prompt tree, M pages, and the engine settings.

A :class:`Bound` fixes the templates the client may send (by default three prompts that share their
first page, two of which share their first two: a prompt tree; or another set of :data:`TEMPLATE_SETS`,
e.g. :data:`BRANCHES`, two prompts branching off a common first page), the number of arrivals
``num_requests`` and the pool's ``num_pages``, and the engine configurations to run under
(:data:`CONFIGS`: exact single-flight with either leader-loss policy, and prefix coordination). Every
engine state reachable within the bound is checked, not a sample.

For example::

    >>> b = Bound(2, 6)
    >>> str(b), len(b.template_list), b.lifetime_pages(0)
    ('N=2,M=6', 3, 3)
    >>> parse_bound("3,6")
    Bound(num_requests=3, num_pages=6, templates=None, configs=None)
    >>> b = parse_bound("3,4,branches")
    >>> str(b), b.template_set, [b.lifetime_pages(t) for t in range(2)]
    ('N=3,M=4,branches', 'branches', [4, 3])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flightcheck.impl.pages import PAGE_SIZE

_A, _B, _C = [1] * PAGE_SIZE, [2] * PAGE_SIZE, [3] * PAGE_SIZE
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
# Two prompts branching off a common first page, as the spec's tree scenarios (doc2, doc3) share a
# document's first page between two questions: P0 = A B +16 tokens (shareable A, AB) and P1 = A C +1 token
# (shareable A, AC), so the cache can hold two leaves (AB, AC) under one parent, and an eviction has two
# branches to choose between. TEMPLATES' shareable pages form one chain (A, then AC), where the only
# cached leaf is also the least recently used one, so a victim choice that ignores references
# (``evict-referenced``) is never wrong there. Why these sizes: a follower released with pins on A and
# AB must still need two fresh pages (P0 lives in 4 pages: its third prompt page, then a decode into a
# fourth) while the pool (M=4) holds A, AB and the newer AC: then one page is free, the admission counts
# the unreferenced AC as evictable, and the follower's second allocation evicts, where the right victim
# is AC and the least recently used leaf is the pinned AB. P1 is the smallest prompt that publishes AC
# (one tail token, max_tokens 1), to keep the space small. Caught at N=3, M=4 (leader, follower, P1).
BRANCHES: tuple[tuple[tuple[int, ...], int], ...] = (
    (tuple(_A + _B + [4] * 16), 2),
    (tuple(_A + _C + [5]), 1),
)
# The template sets a bound may name (``N,M,NAME``): the default prompt tree and the two branches.
TEMPLATE_SETS: dict[str, tuple[tuple[tuple[int, ...], int], ...]] = {"tree": TEMPLATES, "branches": BRANCHES}
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
        # A named set other than the default is part of the bound's name (a stage row, a benchmark line);
        # templates of no set (a test's slice of the tree) are named as before.
        name = self.template_set
        return f"N={self.num_requests},M={self.num_pages}" + ("" if name in ("tree", None) else f",{name}")

    @property
    def template_set(self) -> str | None:
        """The name in :data:`TEMPLATE_SETS` of the templates in force (None for templates of no set)."""
        return next((n for n, t in TEMPLATE_SETS.items() if t == self.template_list), None)

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
    """``"N,M"`` -> ``Bound(N, M)`` over the default :data:`TEMPLATES`; ``"N,M,NAME"`` over the template
    set ``NAME`` of :data:`TEMPLATE_SETS` (e.g. ``3,4,branches``); a ValueError saying what is wrong
    otherwise."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (2, 3) or not all(p.isdecimal() for p in parts[:2]):
        raise ValueError(f"a bound is N,M (requests, pages), e.g. 3,6; got {text!r} (or N,M,TEMPLATES, the "
                         f"templates one of {', '.join(TEMPLATE_SETS)}, e.g. 3,4,branches)")
    if len(parts) == 3 and parts[2] not in TEMPLATE_SETS:
        raise ValueError(f"unknown template set {parts[2]!r} in bound {text!r}; known: {', '.join(TEMPLATE_SETS)}")
    templates = TEMPLATE_SETS[parts[2]] if len(parts) == 3 and parts[2] != "tree" else None
    return Bound(int(parts[0]), int(parts[1]), templates)
