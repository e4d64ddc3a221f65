"""A stage added the way docs/architecture.md's recipe "Add a stage" says: this module, whose ``STAGE``
declares everything about it, listed in the registry (the test lists it by patching ``STAGE_MODULES``).

It reads one file of the spec (``spec/scenario.py``, its declared dependency), compares one figure with
its own section of the recorded figures, feeds the report's conformance table, and kills mutants of
``impl/tokenizer.py`` (after the stages that kill them already).
"""

from __future__ import annotations

from flightcheck.checks.suite.context import Context
from flightcheck.checks.suite.expect import is_count
from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage


def dummy_stage(ctx: Context) -> list[Row]:
    """One row: the number of default scenarios, compared with the recorded one."""
    from flightcheck.spec.scenario import SCENARIOS

    changed = ctx.expect.compare("dummy", "scenarios", len(SCENARIOS))
    detail = f"{len(SCENARIOS)} default scenarios" + (f"; changed ({changed})" if changed else "")
    return [Row("dummy", "default scenarios", not changed, detail, 0.0, {"scenarios": len(SCENARIOS)})]


STAGE = Stage(
    "dummy", dummy_stage,
    depends=("spec/scenario.py",),
    report="conform",
    expects={"dummy": ("a count of scenarios (an integer >= 0)", is_count)},
    kills=("impl/tokenizer.py",), kill_rank=9,
)
