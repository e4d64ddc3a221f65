"""A whole unbounded run: every configuration of a design, timed, with the explorer beside a variant's CTI.

:func:`prove_unbounded` proves the correct design under every configuration of
:func:`~flightcheck.checks.unbounded.config.grid` (or those given), and a variant under its demo
scenario's configuration, and records wall and CPU time. :func:`explorer_confirms` runs the explorer on
a variant's demo scenario, so that a variant's CTI is shown beside the bounded counterexample that
proves the violation reachable.

For example::

    >>> from flightcheck.checks.unbounded.config import Config
    >>> r = prove_unbounded("correct", [Config(coordination="none")])
    >>> r.ok, r.status("known_once")
    (True, 'proved')
"""

from __future__ import annotations

import time
from typing import Sequence

from flightcheck.checks.unbounded.checker import TIMEOUT_MS, prove_config
from flightcheck.checks.unbounded.config import Config, from_scenario, grid
from flightcheck.checks.unbounded.invariants import NOT_MODELLED
from flightcheck.checks.unbounded.result import UnboundedReport
from flightcheck.checks.unbounded.variants import build_model, spec_variant


def variant_config(variant: str) -> Config:
    """The configuration of a variant's demo scenario and policy."""
    spec = spec_variant(variant).demo_spec()
    return from_scenario(spec.scenario, spec.policy)


def prove_unbounded(variant: str = "correct", configs: Sequence[Config] | None = None, *,
                    timeout_ms: int = TIMEOUT_MS) -> UnboundedReport:
    """Every configuration's proof for ``variant`` (default: the grid for ``correct``, the demo's for a variant)."""
    build_model(variant, None, Config())  # an unmodelled variant fails here, before any query
    if configs is None:
        configs = grid() if variant == "correct" else [variant_config(variant)]
    wall, cpu = time.perf_counter(), time.process_time()
    reports = [prove_config(c, variant, timeout_ms=timeout_ms) for c in configs]
    return UnboundedReport(variant, reports, dict(NOT_MODELLED), time.perf_counter() - wall, time.process_time() - cpu)


def explorer_confirms(variant: str) -> tuple[str, int | None]:
    """The variant's demo scenario and the length of the explorer's shortest path to its property (None:
    the explorer finds no violation there)."""
    scenario, actions = bounded_counterexample(variant)
    return scenario, (len(actions) if actions is not None else None)


def bounded_counterexample(variant: str) -> tuple[str, list[str] | None]:
    """The variant's demo scenario and the explorer's shortest path to the property it violates, as
    actions (None: a correct variant, or no violation there): the evidence shown for a variant the
    relational model does not carry, in place of a CTI."""
    from flightcheck.checks.explore.explorer import explore

    v = spec_variant(variant)
    spec = v.demo_spec()
    if v.expected_violation is None:
        return spec.scenario.name, None
    cx = explore(spec).result(v.expected_violation).counterexample
    return spec.scenario.name, ([str(a) for a in cx.actions] if cx is not None else None)
