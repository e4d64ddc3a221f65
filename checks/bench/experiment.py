"""What an experiment is: configurations, sizes, one run, the columns it reports; and the registry.

An :class:`Experiment` names its configurations (each an ``EngineConfig`` policy), a baseline among
them, its cells (group sizes, or a single cell), its full and quick :class:`Sizes`, and ``run``: one
run of one configuration in one cell on a fresh target, returning that run's metrics. The runner
(:mod:`flightcheck.checks.bench.runner`) repeats and takes medians; the report
(:mod:`flightcheck.checks.bench.report`) makes the table, the JSON and the plots. Each experiment
lives in its own ``exp_*.py`` file and registers itself with :func:`register`.

For example::

    >>> from flightcheck.checks.bench import EXPERIMENTS
    >>> list(EXPERIMENTS)
    ['hot-prefix', 'cold-burst', 'incremental', 'release-points', 'burst-8', 'late-arrival', 'control', 'leader-abort', 'overlap']
    >>> EXPERIMENTS["burst-8"].baseline
    'independent'
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.bench.target import Measure, Target


@dataclass(frozen=True, slots=True)
class Sizes:
    """How big a run is: prompt tokens, output tokens, and the group sizes (cells) where there are some."""

    prompt_tokens: int
    max_tokens: int
    counts: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """One configuration: a label and the ``EngineConfig`` fields it sets."""

    label: str
    policy: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: header, metric key, and format (``ms``, ``int``, ``text``, ``pct``)."""

    header: str
    key: str
    fmt: str = "ms"


# Every benchmark engine: 16-token pages (the runner's), room for every request of a group at once.
BASE_POLICY = {"max_running": 16, "prefill_chunk_pages": 32}


@dataclass
class Experiment:
    """One of the seed's experiments. ``run(target, config, cell, sizes, prompt)`` does one run."""

    name: str
    title: str
    summary: str
    configs: list[Config]
    baseline: str
    full: Sizes
    quick: Sizes
    columns: list[Column]
    compare: list[str]                    # metric keys also shown as a change against the baseline
    plot: list[tuple[str, str]]           # (metric key, axis label) of the PNG's panels
    run: Callable[..., dict[str, Any]]
    seed: str                             # what the seed published, for the side-by-side
    cell_name: str = "N"
    plot_together: bool = False           # the plotted metrics as bars of one panel (same unit)
    plot_lines: bool = False              # cells on the x axis, a line per configuration (a sweep)

    def cells(self, sizes: Sizes) -> list[int | None]:
        return list(sizes.counts) or [None]

    def config(self, label: str) -> Config:
        return next(c for c in self.configs if c.label == label)


EXPERIMENTS: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Adds ``experiment`` to :data:`EXPERIMENTS` (in file order: the seed's order)."""
    if experiment.name in EXPERIMENTS:
        raise ValueError(f"experiment {experiment.name!r} registered twice")
    EXPERIMENTS[experiment.name] = experiment
    return experiment


# --- shared workload pieces ---------------------------------------------------------------------
def burst(target: Target, prompts: list[list[int]], max_tokens: int) -> list[Measure]:
    """Every prompt sent at once."""
    for prompt in prompts:
        target.start(prompt, max_tokens)
    return target.finish()


def summarize(measures: list[Measure], *, followers: list[Measure] | None = None) -> dict[str, Any]:
    """The usual metrics: average TTFT, slowest completion (ms), tokens recovered per follower.
    Followers: every request but the one that recovered least (the one that computed the prompt;
    over HTTP the first sent need not be the first to arrive)."""
    if followers is None:
        followers = sorted(measures, key=lambda m: m.recovered)[1:]
    return {"avg_ttft_ms": 1e3 * statistics.mean(m.ttft_s for m in measures),
            "slowest_completion_ms": 1e3 * max(m.completion_s for m in measures),
            "recovered_per_follower": statistics.mean(m.recovered for m in followers) if followers else 0,
            "roles": "/".join(sorted({m.role for m in measures if m.role})) or "-"}


FOLLOWER_COLUMNS = [Column("recovered / follower", "recovered_per_follower", "int"),
                    Column("avg TTFT ms", "avg_ttft_ms"), Column("slowest completion ms", "slowest_completion_ms")]


@dataclass
class RunRecord:
    """One run's metrics (the runner keeps every one in the JSON)."""

    config: str
    cell: int | None
    repeat: int
    metrics: dict[str, Any] = field(default_factory=dict)
