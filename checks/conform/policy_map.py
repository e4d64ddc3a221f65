"""The one mapping between the engine's configuration and the spec's policy.

For example::

    >>> from flightcheck.impl.config import EngineConfig
    >>> policy_of(EngineConfig(max_running=2, prefill_chunk_pages=1)).label()
    'single-flight/after-prefill/incremental cap=2 chunk=1'
    >>> config_of(policy_of(EngineConfig(max_running=2)), num_pages=9).num_pages
    9
"""

from __future__ import annotations

from typing import Any

from flightcheck.spec.scenario import Policy


def policy_of(config: Any) -> Policy:
    """The spec policy matching an ``EngineConfig`` (capacity = max_running, chunk = prefill budget)."""
    return Policy(coordination=config.coordination, release=config.release, publication=config.publication,
                  capacity=config.max_running, chunk=config.prefill_chunk_pages, leader_loss=config.leader_loss,
                  prefix_caching=config.prefix_caching, min_shared_pages=config.min_shared_pages)


def config_of(policy: Policy, num_pages: int) -> Any:
    """The ``EngineConfig`` that runs ``policy`` over a pool of ``num_pages`` pages."""
    from flightcheck.impl.config import EngineConfig

    return EngineConfig(coordination=policy.coordination, release=policy.release, publication=policy.publication,
                        max_running=policy.capacity, prefill_chunk_pages=policy.chunk, num_pages=num_pages,
                        leader_loss=policy.leader_loss, prefix_caching=policy.prefix_caching,
                        min_shared_pages=policy.min_shared_pages)
