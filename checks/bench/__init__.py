"""The seed's seven experiments as ``flightcheck bench``: one experiment a file, a small registry.

``EXPERIMENTS`` maps each name to its :class:`~flightcheck.checks.bench.experiment.Experiment`, in the
seed's order: ``hot-prefix``, ``cold-burst``, ``incremental``, ``release-points``, ``burst-8``,
``late-arrival``, ``control``; then ``leader-abort`` (issue 11's leader-loss policies) and ``overlap``
(issue 12: how much shared prefix is worth waiting for). :func:`~flightcheck.checks.bench.runner.run_experiment` runs one (every
configuration in this process, each three times, medians); :mod:`~flightcheck.checks.bench.report`
writes its markdown table, JSON and plots.
"""

from flightcheck.checks.bench import (  # noqa: F401  (each registers itself, in this order)
    exp_hot_prefix, exp_cold_burst, exp_incremental, exp_release_points, exp_burst8, exp_late_arrival, exp_control,
    exp_leader_abort, exp_overlap,
)
from flightcheck.checks.bench.experiment import EXPERIMENTS, Experiment, Sizes

__all__ = ["EXPERIMENTS", "Experiment", "Sizes"]
