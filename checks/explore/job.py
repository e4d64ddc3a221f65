"""One exploration as ``flightcheck explore`` asks for it: the options checked, the explorer run, the
graph drawn, the JSON object.

:class:`ExploreJob` holds how to explore (which explorer, symmetry, the state and memory bounds,
safety only, on a Dask cluster, a picture); :meth:`ExploreJob.check` refuses the combinations that cannot
run together with a :class:`JobError`, :meth:`ExploreJob.run` explores on this machine
(:func:`~flightcheck.checks.explore.choose.explore_with`), :func:`draw` writes the graph with the path of
the property a variant must violate highlighted.

For example::

    >>> ExploreJob(safety_only=True, render=Path("g.svg")).check()
    Traceback (most recent call last):
    ...
    flightcheck.checks.explore.job.JobError: --render needs the edges; leave out --safety-only
    >>> ExploreJob(workers=2).distributed
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

RENDER_SUFFIXES = (".dot", ".svg", ".png", ".html")


class JobError(ValueError):
    """Options of an exploration that cannot run together; the message names them."""


@dataclass(frozen=True)
class ExploreJob:
    """How to explore: the explorer, symmetry, the bounds (states; memory in GiB), safety only, the
    Dask scheduler or the embedded cluster's worker count (the distributed explorer), the picture."""

    engine: str = "auto"
    symmetry: bool = True
    max_states: int = 2_000_000
    memory_limit: Optional[float] = None
    safety_only: bool = False
    scheduler: Optional[str] = None
    workers: Optional[int] = None
    render: Optional[Path] = None

    @property
    def distributed(self) -> bool:
        """True when the visited set is partitioned over a Dask cluster."""
        return self.scheduler is not None or self.workers is not None

    def check(self) -> None:
        """A :class:`JobError` for options that cannot run together."""
        if self.render is not None and self.render.suffix.lower() not in RENDER_SUFFIXES:
            raise JobError(f"--render must end in .dot, .svg, .png or .html; got {self.render.name!r}")
        if self.safety_only and self.render is not None:
            raise JobError("--render needs the edges; leave out --safety-only")
        if self.distributed and (self.render is not None or self.engine != "auto" or self.memory_limit is not None):
            raise JobError("--scheduler/--workers run the distributed explorer: leave out --render, --engine and "
                           "--memory-limit")
        if self.scheduler is not None and self.workers is not None:
            raise JobError("--workers sizes the embedded cluster; with --scheduler the cluster's own workers run")

    def properties(self, spec: Any) -> Optional[list]:
        """The properties to check: the safety ones with ``safety_only``, else None (all of them)."""
        from flightcheck.spec.properties import properties_for

        return [p for p in properties_for(spec) if p.kind != "eventually"] if self.safety_only else None

    def run(self, spec: Any, progress: Optional[Callable[[Any], None]] = None) -> Any:
        """Explore ``spec`` on this machine (raises
        :class:`~flightcheck.checks.explore.explorer.StateLimitExceeded` beyond ``max_states``)."""
        from flightcheck.checks.explore.choose import explore_with

        limit = int(self.memory_limit * 2**30) if self.memory_limit is not None else None
        return explore_with(spec, engine=self.engine, symmetry=self.symmetry, max_states=self.max_states,
                            properties=self.properties(spec), memory_limit=limit,
                            keep_edges=False if self.safety_only else None, progress=progress)


def draw(result: Any, path: Path, must_violate: Optional[str] = None) -> None:
    """Write ``result``'s graph to ``path``; when the property ``must_violate`` (a variant's expected
    violation) fails, its counterexample and the states violating it are highlighted. Raises
    :class:`~flightcheck.checks.explore.picture.RenderError` or
    :class:`~flightcheck.checks.explore.state_graph.GraphTooLarge`."""
    from flightcheck.checks.explore.render import render_result
    from flightcheck.checks.explore.violating import violating_states

    highlight = violating = None
    if must_violate is not None and not result.result(must_violate).holds:  # the path of the property it must violate
        highlight = result.result(must_violate).counterexample
        violating = (must_violate, violating_states(result, must_violate))
    render_result(result, path, highlight=highlight, violating=violating)


def result_json(result: Any, scenario: Any, variant: str) -> dict[str, Any]:
    """``result`` as one JSON object, with the scenario's name and policy, the variant and the explorer."""
    out = result.to_json()
    out.update(scenario=scenario.name, variant=variant, policy=scenario.policy.__dict__)
    out.setdefault("engine", "reference")
    return out
