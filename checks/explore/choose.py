"""Which explorer runs: the reference one on small graphs, the batched one above the size where it wins.

Both explorers check the same properties and return the same result types; they differ in cost. The
reference explorer (:mod:`~flightcheck.checks.explore.explorer`) spends about half a millisecond per
state but nothing to start; the batched one (:mod:`~flightcheck.checks.explore.batched`) spends a few
milliseconds per breadth-first level on numpy calls and then microseconds per state.
:func:`explore_with` with ``engine="auto"`` (the default of ``flightcheck explore`` and ``check``) runs
the reference explorer up to :data:`AUTO_THRESHOLD` states, where the two cost about the same
(measured by ``scripts/bench_explore.py``, see BENCHMARKS.md), and hands over to the batched explorer
beyond it. ``engine="compiled"`` is the batched explorer with the spec read through generated code
that numba compiles (:mod:`~flightcheck.checks.explore.compiled`): a compile of seconds per scope,
cached, for a few times fewer microseconds per state. A model without a layout (the toy models of the tests) always runs on the reference.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> explore_with(FlightSpec(SCENARIOS["burst2"])).extra.get("engine", "reference")
    'reference'
    >>> explore_with(FlightSpec(SCENARIOS["burst4-abort"])).extra["engine"]
    'batched'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from flightcheck.checks.explore.explorer import StateLimitExceeded, explore
from flightcheck.checks.explore.result import ExploreResult
from flightcheck.spec.properties import Property

if TYPE_CHECKING:  # the batched explorer (numpy, numba, scipy) is imported only when it runs
    from flightcheck.checks.explore.batched import Progress

ENGINES: tuple[str, ...] = ("auto", "reference", "batched", "compiled")
# States up to which "auto" uses the reference explorer: about where the two cost the same (BENCHMARKS.md).
AUTO_THRESHOLD = 250


def supports_batched(spec: Any) -> bool:
    """True when ``spec`` is a flight spec (the design or a variant): the batched explorer reads its layout
    and expression-layer guards; any other checkable model (the tests' toy models) runs on the reference."""
    from flightcheck.spec.model import FlightSpec

    return isinstance(spec, FlightSpec)


def explore_with(spec: Any, *, engine: str = "auto", symmetry: bool = True, max_states: int = 2_000_000,
                 properties: list[Property] | None = None, memory_limit: int | None = None,
                 keep_edges: bool | None = None,
                 progress: Callable[[Progress], None] | None = None) -> ExploreResult:
    """Explore ``spec`` with the named engine (``auto``, ``reference``, ``batched``, or ``compiled``: the
    batched explorer reading the spec through code numba compiles, for scopes of millions of states)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if engine in ("batched", "compiled") and not supports_batched(spec):
        raise ValueError(f"{type(spec).__name__} has no layout, so the batched explorer cannot read it")
    if engine == "reference" or (engine == "auto" and not supports_batched(spec)):
        return explore(spec, symmetry=symmetry, max_states=max_states, properties=properties)
    if engine == "auto" and keep_edges is not False:
        try:
            return explore(spec, symmetry=symmetry, max_states=min(max_states, AUTO_THRESHOLD),
                           properties=properties)
        except StateLimitExceeded:
            if max_states <= AUTO_THRESHOLD:
                raise
    from flightcheck.checks.explore.batched import explore_batched

    return explore_batched(spec, symmetry=symmetry, max_states=max_states, properties=properties,
                           memory_limit=memory_limit, keep_edges=keep_edges, progress=progress,
                           compiled=engine == "compiled")
