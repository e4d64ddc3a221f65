"""The workload model's rows as terminal tables (presentation only: the rows come from
:mod:`flightcheck.checks.workload.sweep`).

For example::

    >>> _fmt(None), _fmt(0.123456), _fmt(12345678.0), _fmt(1234)
    ('-', '0.1235', '12,345,678', '1,234')
"""

from __future__ import annotations


def _fmt(value: object, digits: int = 4) -> str:
    """A figure as a table shows it: ``-`` for none, 4 significant digits, thousands separated."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if not value.is_integer() or abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def config_label(row: dict, with_trace: bool) -> str:
    """A configuration in a few words (``W=1000 N=4 C=10,000 ...``), with its trace's name when asked."""
    lookup = "contig" if row["lookup"] == "contiguous" else "indep"
    label = f"W={row['w_eff_ms']:g} N={row['num_instances']} C={row['capacity_blocks']:,} {row['routing']} {lookup}"
    return f"{row['trace']} {label}" if with_trace else label


def _share(row: dict, part: str) -> str:
    """A part of the removable attempts as ``count (fraction of cold attempts)``."""
    return f"{_fmt(row[f'num_{part}_removable'])} ({_fmt(row[f'{part}_ratio'], 3)})"


def config_table(rows: list[dict], title: str, first_column: str):
    """One row per summary (or instance) row; ``first_column`` is ``config``, ``phase`` or ``instance``."""
    from rich.table import Table

    with_trace = len({r["trace"] for r in rows}) > 1
    table = Table(title=title)
    headers = [first_column, "hits", "cold", "cohorts", "dup", "remov.", "redund.", "exact input", "partial prefix",
               "fan-in m/p99/max", "share", "avoid./s"]
    for header in headers:
        table.add_column(header, justify="left" if header == first_column else "right", overflow="fold")
    for row in rows:
        first = {"config": config_label(row, with_trace), "phase": row["phase"]}.get(first_column, str(row.get("instance_id")))
        table.add_row(first, _fmt(row["num_hits"]), _fmt(row["num_cold_attempts"]), _fmt(row["num_cohorts"]),
                      _fmt(row["num_duplicate_cohorts"]), _fmt(row["num_removable_attempts"]),
                      _fmt(row["redundancy_ratio"], 3), _share(row, "exact_input"), _share(row, "partial_prefix"),
                      "/".join(_fmt(row[k]) for k in ("fan_in_median", "fan_in_p99", "fan_in_max")),
                      _fmt(row.get("request_share", row.get("max_share")), 3), _fmt(row["avoidable_cost_per_s"], 3))
    return table


def pivot_table(rows: list[dict]):
    """The highest redundancy per trace and W_eff over the swept configurations (phase all)."""
    from rich.table import Table

    table = Table(title="Highest redundancy per trace and W_eff (phase all) over the swept configurations")
    for header in ("trace", "W_eff ms", "max redundancy", "exact / partial there", "at N / capacity / routing / lookup",
                   "max fan-in", "configs"):
        table.add_column(header, justify="left" if header in ("trace", "at N / capacity / routing / lookup") else "right",
                         overflow="fold")
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["phase"] == "all":
            groups.setdefault((row["trace"], row["w_eff_ms"]), []).append(row)
    for (trace, w), group in groups.items():
        best = max(group, key=lambda r: r["redundancy_ratio"] or 0.0)
        where = f"{best['num_instances']} / {best['capacity_blocks']:,} / {best['routing']} / {best['lookup']}"
        split = f"{_fmt(best['exact_input_ratio'], 3)} / {_fmt(best['partial_prefix_ratio'], 3)}"
        table.add_row(trace, _fmt(w), _fmt(best["redundancy_ratio"]), split, where,
                      _fmt(max(r["fan_in_max"] or 0 for r in group)), str(len(group)))
    return table


def result_tables(summary: list[dict], per_instance: list[dict], num_results: int) -> list:
    """The tables a run prints: one configuration per phase and per instance; up to 24 one row each
    (phase all); more, the highest redundancy per trace and W_eff. Each summary row gains ``max_share``,
    the busiest instance's request share."""
    from flightcheck.checks.workload.sweep import CONFIG_FIELDS

    shares: dict[tuple, float] = {}
    for row in per_instance:
        if row["phase"] == "all":
            key = tuple(row[k] for k in CONFIG_FIELDS)
            shares[key] = max(shares.get(key, 0.0), row["request_share"])
    for row in summary:
        row["max_share"] = shares[tuple(row[k] for k in CONFIG_FIELDS)]
    if num_results == 1:
        label = config_label(summary[0], True)
        rows = [r for r in per_instance if r["phase"] == "all"]
        return [config_table(summary, f"{label}: per phase (share = busiest instance's request share)", "phase"),
                config_table(rows, "per instance, phase all (share = the instance's request share)", "instance")]
    if num_results <= 24:
        rows = [r for r in summary if r["phase"] == "all"]
        return [config_table(rows, "Workload opportunity, phase all (share = busiest instance's request share)",
                             "config")]
    return [pivot_table(summary)]
