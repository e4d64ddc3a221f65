"""The ``workload`` stage of ``flightcheck check``: would single-flight pay on the real Mooncake traces?

One configuration per trace (1 instance, 10,000 blocks, W_eff = 1 s, contiguous lookup); the row passes
when the per-instance counts reconcile with the summary and the counts are the recorded ones, and its
detail is the measured redundancy. It reads the traces (``data/``) and the workload model only.
"""

from __future__ import annotations

import time

from flightcheck.checks.suite.context import Context
from flightcheck.checks.suite.expect import is_count, pair_of
from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage

TRACES = ("conversation", "synthetic")


def workload_stage(ctx: Context) -> list[Row]:
    """Would single-flight pay on the real Mooncake traces? One configuration each (1 instance,
    10,000 blocks, W_eff = 1 s, contiguous lookup); the row passes when per-instance counts reconcile
    with the summary and the counts are the recorded ones, and its detail is the measured redundancy."""
    from flightcheck.checks.workload.opportunity import ModelConfig, prepare_trace, simulate
    from flightcheck.checks.workload.trace import load_trace, shared_trace_path

    rows = []
    for name in TRACES:
        t = time.perf_counter()
        prepared = prepare_trace(load_trace(shared_trace_path(name)))
        res = simulate(prepared, ModelConfig(w_eff_ms=1000.0, capacity_blocks=10_000))
        whole = res.summary["all"]
        parts = sum((inst.phases["all"] for inst in res.instances[1:]), res.instances[0].phases["all"])
        ratio = whole.redundancy_ratio or 0.0
        changed = ctx.expect.compare("workload", name, [whole.num_cold_attempts, whole.num_removable_attempts])
        detail = (f"redundancy {ratio:.4%}: single-flight removes {whole.num_removable_attempts:,} of "
                  f"{whole.num_cold_attempts:,} cold block loads ({whole.num_exact_input_removable:,} of identical "
                  f"inputs, {whole.num_partial_prefix_removable:,} only prefix coordination could serve)")
        evidence = {"trace": name, "w_eff_ms": 1000.0, "capacity_blocks": 10_000, "instances": len(res.instances),
                    "requests": whole.num_requests, "cold_attempts": whole.num_cold_attempts,
                    "cohorts": whole.num_cohorts, "removable_attempts": whole.num_removable_attempts,
                    "hits": whole.num_hits, "redundancy_ratio": ratio, "reconciles": parts == whole,
                    "exact_input_removable": whole.num_exact_input_removable,
                    "partial_prefix_removable": whole.num_partial_prefix_removable}
        rows.append(Row("workload", f"{name} W_eff=1s", parts == whole and not changed,
                        (f"counts changed ({changed}); " if changed else "") + detail, time.perf_counter() - t,
                        evidence))
    return rows


STAGE = Stage(
    "workload", workload_stage,
    depends=("checks/workload/**", "data/**"),
    report="workload",
    expects={"workload": ("[cold attempts, removable attempts]", pair_of(is_count, is_count))},
)
