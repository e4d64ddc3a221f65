"""Stages for the trust tests, with the stage signature ``stage(ctx) -> list[Row]``: one that passes, one
that fails, one whose checker breaks (flightcheck's fault) and one whose design raises (the spec's)."""

from flightcheck.checks.suite.job import Row


def passing_stage(ctx):
    """Passes, and notes one workload figure so that a recording has something to merge."""
    changed = ctx.expect.compare("workload", "synthetic", [70390, 255])
    return [Row("fake", "passes", not changed, changed or "ok")]


def failing_stage(ctx):
    """A check that fails: the thing checked is wrong."""
    return [Row("fake", "fails", False, "broken on purpose")]


def crashing_stage(ctx):
    """flightcheck's own code breaks (as a checker reading an attribute its object lacks)."""
    return [Row("fake", "never", True, str(ctx.no_such_field))]


def spec_raising_stage(ctx):
    """The design under check raises: a view of its state read for a field it does not have."""
    from flightcheck.spec.model import FlightSpec
    from flightcheck.spec.scenario import SCENARIOS

    spec = FlightSpec(SCENARIOS["burst2"])
    return [Row("fake", "never", True, str(spec.view(spec.initial()).no_such_field))]
