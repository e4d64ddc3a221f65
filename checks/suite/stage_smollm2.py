"""The ``smollm2`` stage of ``flightcheck check``: the real SmolLM2 engine (``--quick`` skips it).

A short seeded lockstep campaign on the real model, then the 8-request probe: eight cold identical
requests compute each shared page eight times without coordination and once under single-flight.
"""

from __future__ import annotations

import time
from typing import Any

from flightcheck.checks.suite.context import Context
from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage


def real_model_stage(ctx: Context) -> list[Row]:
    """The real SmolLM2 engine: a short seeded lockstep campaign and the probe."""
    from flightcheck.checks.conform.campaign import run_programs, seeded_programs
    from flightcheck.checks.conform.engines import load_model
    from flightcheck.checks.conform.probe import probe

    load_model("smollm2")  # a bad model file stops the stage as a ModelFileError, not as a conformance failure
    rows = []
    r = run_programs(seeded_programs(0, 3), "smollm2", save_dir=ctx.save_dir, seed=0)
    detail = (f"{r.runs} programs, {r.steps} engine steps, {r.events} events checked" if r.ok
              else f"{r.failure.diagnosis.summary} [{', '.join(r.failure.diagnosis.properties)}]")
    counts = {"runs": r.runs, "steps": r.steps, "events": r.events}
    rows.append(Row("smollm2", "conform (seeded, short)", r.ok, detail, r.seconds,
                    {**counts, "failure": r.failure.to_json()} if r.failure else counts))
    t = time.perf_counter()
    evidence: dict[str, Any] = {}
    try:
        none, single = probe("none", model="smollm2"), probe("single-flight", model="smollm2")
        ok = set(none.computations_per_page) == {8} and set(single.computations_per_page) == {1}
        detail = (f"computations per shared page: none {none.computations_per_page}, "
                  f"single-flight {single.computations_per_page}")
        evidence = {"model": "smollm2", "none": none.to_json(), "single-flight": single.to_json()}
    except Exception as error:
        ok, detail = False, f"the probe failed: {type(error).__name__}: {error}"
    rows.append(Row("smollm2", "probe 8 cold identical requests", ok, detail, time.perf_counter() - t, evidence))
    return rows


STAGE = Stage(
    "smollm2", real_model_stage,
    depends=("spec/**", "impl/*.py", "checks/conform/**", "checks/explore/**"),
    report="conform",
    needs_model=True,
)
