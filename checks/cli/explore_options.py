"""What ``explore`` and ``export`` share: the scenario the command line names (or a burst it describes),
the progress display of a long exploration, and the distributed explorer on a Dask cluster.

For example::

    >>> build_scenario(None, 3, 2, aborts=True, notifications=False, eviction=False, pages=2, decode=1).num_requests
    3
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from rich.console import Console
from rich.live import Live

from flightcheck.checks.errors import usage_error
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS, Scenario, burst


def build_scenario(scenario: Optional[str], requests: Optional[int], prompts: int, *, aborts: bool,
                   notifications: bool, eviction: bool, pages: int, decode: int) -> Scenario:
    """The scenario named on the command line, or a burst of ``requests`` over ``prompts`` classes."""
    if scenario is not None and requests is not None:
        raise usage_error("give either --scenario or --requests/--prompts, not both")
    if requests is not None:
        if not 1 <= requests <= 10:
            raise usage_error(f"--requests must be between 1 and 10 (the graph grows fast); got {requests}")
        if not 1 <= prompts <= requests:
            raise usage_error(f"--prompts must be between 1 and --requests ({requests}); got {prompts}")
        if not 1 <= pages <= 4 or not 0 <= decode <= 3:
            raise usage_error("--pages must be 1..4 and --decode 0..3")
        return burst(requests, classes=prompts, pages=pages, decode=decode, aborts=aborts,
                     notifications=notifications, eviction=eviction)
    name = scenario or "burst2"
    known = {**SCENARIOS, **SCALE_SCENARIOS}
    if name not in known:
        raise usage_error(f"unknown scenario {name!r}; known: {', '.join(known)}")
    scn = known[name]
    opts = {k: True for k, v in (("aborts", aborts), ("notifications", notifications), ("eviction", eviction)) if v}
    return scn.with_options(**opts) if opts else scn


@contextmanager
def progress_display() -> Iterator[Callable[[Any], None]]:
    """A progress callback for long explorations: states, depth, rate and memory on stderr.

    Nothing is shown when stderr is not a terminal, or before the run has taken a second.
    """
    console = Console(stderr=True)
    live: list[Live] = []

    def show(p: Any) -> None:
        if not console.is_terminal or p.seconds < 1.0:
            return
        text = (f"exploring: {p.states:,} states, depth {p.depth} (frontier {p.frontier:,}), "
                f"{p.states_per_second:,.0f} states/s, {p.memory_bytes / 2**30:.2f} GiB")
        if not live:
            live.append(Live(text, console=console, transient=True, refresh_per_second=4))
            live[0].start()
        live[0].update(text)

    try:
        yield show
    finally:
        if live:
            live[0].stop()


def explore_distributed_or_exit(spec: Any, scheduler: Optional[str], workers: Optional[int], symmetry: bool,
                         max_states: int, props: Optional[list]) -> Any:
    """The distributed explorer on ``scheduler`` or an embedded cluster of ``workers``: the safety and
    deadlock properties (and the ``sometimes`` ones are left out: they need the whole graph kept)."""
    from flightcheck.checks.cluster import Cluster, ClusterError
    from flightcheck.checks.explore.distributed import KINDS, explore_distributed
    from flightcheck.spec.properties import properties_for

    chosen = [p for p in (props if props is not None else properties_for(spec)) if p.kind in KINDS]
    try:
        with Cluster(scheduler, workers=workers or 1) as cluster:
            return explore_distributed(spec, cluster, symmetry=symmetry, max_states=max_states, properties=chosen)
    except ClusterError as error:
        raise usage_error(str(error)) from None
