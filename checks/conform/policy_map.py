"""The one mapping between the engine's configuration and the spec's policy, read from the knob table.

Each knob of :data:`flightcheck.spec.knobs.KNOBS` names, as :attr:`~flightcheck.spec.knobs.Knob.engine`,
the ``EngineConfig`` field that holds its value (``capacity`` is ``max_running``, ``chunk`` is
``prefill_chunk_pages``, the others share their names): both directions below follow it.

For example::

    >>> from flightcheck.impl.config import EngineConfig
    >>> policy_of(EngineConfig(max_running=2, prefill_chunk_pages=1)).label()
    'single-flight/after-prefill/incremental cap=2 chunk=1'
    >>> config_of(policy_of(EngineConfig(max_running=2)), num_pages=9).num_pages
    9
"""

from __future__ import annotations

from typing import Any

from flightcheck.spec.knobs import KNOBS
from flightcheck.spec.scenario import Policy


def policy_of(config: Any) -> Policy:
    """The spec policy matching an ``EngineConfig``: each knob read from its engine option."""
    return Policy(**{k.name: getattr(config, k.engine) for k in KNOBS})


def engine_options(policy: Policy) -> dict[str, Any]:
    """``policy``'s knobs as ``EngineConfig`` keyword arguments, e.g. ``{"max_running": 2, ...}``."""
    return {k.engine: getattr(policy, k.name) for k in KNOBS}


def config_of(policy: Policy, num_pages: int) -> Any:
    """The ``EngineConfig`` that runs ``policy`` over a pool of ``num_pages`` pages."""
    from flightcheck.impl.config import EngineConfig

    return EngineConfig(**engine_options(policy), num_pages=num_pages)
