"""What one ``flightcheck workload`` asks for: the configurations to model and how, checked.

:class:`WorkloadOptions` holds the command's options; :meth:`WorkloadOptions.configs` checks them
(in the order the command reports them) and returns the model configurations they name: the values
given on each axis, else one default, else with ``sweep`` the full grid of that axis. Anything wrong
is a :class:`WorkloadError` whose message is the line the command prints.

For example::

    >>> [c.w_eff_ms for c in WorkloadOptions(w_eff=(10, 100)).configs()]
    [10, 100]
    >>> len(WorkloadOptions(sweep=True).configs())
    420
    >>> WorkloadOptions(routing=("random",)).configs()
    Traceback (most recent call last):
    ...
    flightcheck.checks.workload.options.WorkloadError: --routing: 'random' is not one of rr, affinity
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from flightcheck.checks.inputs import MAX_WORKERS, shown
from flightcheck.checks.workload.opportunity import LOOKUPS, ROUTINGS, ModelConfig


class WorkloadError(ValueError):
    """A bad option, or a trace that cannot be read; the message is the one line the command prints."""


@dataclass(frozen=True)
class WorkloadOptions:
    """The options of one workload run (empty axes: the default value, or the full grid with ``sweep``)."""

    w_eff: tuple[float, ...] = ()
    instances: tuple[int, ...] = ()
    capacity: tuple[int, ...] = ()
    routing: tuple[str, ...] = ()
    lookup: tuple[str, ...] = ()
    sweep: bool = False
    insert_on_miss: bool = False
    cost_per_load: float = 1.0
    warmup_fraction: float = 0.1
    workers: int = 2
    cohort_rows: bool = False
    out: Optional[Path] = None
    from_events: Optional[Path] = None
    block_tokens: int = 16
    convert_out: Optional[Path] = None

    def check(self) -> None:
        """A :class:`WorkloadError` for the first option out of its range or given without what it needs."""
        for name, values, allowed in (("--routing", self.routing, ROUTINGS), ("--lookup", self.lookup, LOOKUPS)):
            for value in values:
                if value not in allowed:
                    raise WorkloadError(f"{name}: {shown(value)} is not one of {', '.join(allowed)}")
        if not 0 <= self.cost_per_load < float("inf"):  # nan fails the comparison too
            raise WorkloadError(f"--cost-per-load: must be a finite number >= 0, got {self.cost_per_load}")
        if not 0 <= self.warmup_fraction < 1:
            raise WorkloadError(f"--warmup-fraction: must be in [0, 1), got {self.warmup_fraction}")
        if self.workers > MAX_WORKERS:
            raise WorkloadError(f"--workers: at most {MAX_WORKERS} (MAX_WORKERS), got {self.workers}")
        if self.block_tokens < 1:
            raise WorkloadError(f"--block-tokens: must be >= 1, got {self.block_tokens}")
        if self.cohort_rows and self.out is None:
            raise WorkloadError("--cohort-rows: needs --out DIR to write cohorts.csv.gz")
        if self.convert_out is not None and self.from_events is None:
            raise WorkloadError("--convert-out: only applies with --from-events")

    def configs(self) -> list[ModelConfig]:
        """The model configurations asked for, after :meth:`check`; a :class:`WorkloadError` for a bad one."""
        from flightcheck.checks.workload import sweep as ws

        self.check()
        try:
            return ws.sweep_configs(
                self.w_eff or (ws.W_EFF_MS if self.sweep else (1_000,)),
                self.instances or (ws.INSTANCE_COUNTS if self.sweep else (1,)),
                self.capacity or (ws.CAPACITIES_BLOCKS if self.sweep else (10_000,)),
                self.routing or (ROUTINGS if self.sweep else ("rr",)),
                self.lookup or (LOOKUPS if self.sweep else ("contiguous",)),
                self.insert_on_miss)
        except ValueError as error:
            raise WorkloadError(f"bad configuration: {error}") from None
