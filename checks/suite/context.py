"""What every stage of ``flightcheck check`` is run with, and the helpers the stages share.

:class:`Context` carries the budget level, the recorded figures, the model and the cluster; :func:`parallel`
spreads a stage's items over the cluster (or runs them here); :func:`scenario_key` and :func:`where` name
the scenario and policy a row is about, the first as the row's item (and its figures' key in
``expectations.json``), the second in its evidence (the report rebuilds specs from it).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> scenario_key(SCENARIOS["burst2"])
    'burst2 after-prefill incremental release-all'
    >>> parallel(len, [[1], [1, 2]], Context())
    [1, 2]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from flightcheck.checks.suite.expect import Expectations


@dataclass
class Context:
    """What every stage is run with: the budget level, the recorded figures, the model, extra seconds."""

    quick: bool = False
    expect: Expectations = field(default_factory=Expectations)
    budget: float | None = None   # seconds of random exploration beyond the deterministic campaign
    model: str = "tiny"
    save_dir: Path = Path(".")    # where a failing conformance program is written
    # Where the items of the heavy stages run (:class:`~flightcheck.checks.cluster.Cluster`: a Dask
    # scheduler, an embedded local cluster, or None: in this process).
    cluster: Any = None
    # Stop a stage at its first failing row, cheapest checks first (``flightcheck mutate``: one failing
    # row kills a mutant, and the verdict is the same as the whole stage's, since any failing row fails it).
    first_failure: bool = False
    shrink_seconds: float = 60.0  # how long a failing campaign program is minimised

    @property
    def jobs(self) -> int:
        """Into how many parts a stage splits its work: the cluster's workers (1 without a cluster)."""
        return self.cluster.parts if self.cluster is not None else 1


def parallel(fn: Callable[[Any], Any], items: list[Any], ctx: Context) -> list[Any]:
    """``[fn(x) for x in items]``, on ``ctx.cluster`` when there is one (order kept). ``fn`` must be a
    module-level function (a Dask worker imports it by name)."""
    if ctx.cluster is None:
        return [fn(x) for x in items]
    return ctx.cluster.map(fn, items)


def scenario_key(scn: Any) -> str:
    """A row's item for a scenario under a policy: its name, the coordination (for a prompt tree, which is
    checked under each one), the release point, the publication and the leader-loss policy."""
    p = scn.policy
    coordination = f" {p.coordination}" if scn.prefixes else ""
    return f"{scn.name}{coordination} {p.release} {p.publication} {p.leader_loss}"


def where(scn: Any) -> dict[str, Any]:
    """The scenario and policy a row is about, for the evidence (the report rebuilds specs from it)."""
    return {"scenario": scn.name, "policy": dataclasses.asdict(scn.policy)}
