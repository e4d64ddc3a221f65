"""PNG plots of the workload sweep: redundancy ratio (all removable attempts, then its exact-input and
partial-prefix parts) and fan-in (p99 and max) against W_eff.

Presentation only: the plots read summary rows (:func:`flightcheck.checks.workload.sweep.summary_rows`),
phase ``all``. One row of panels per trace, one column per (routing, lookup) pair present, one line per
(instance count, capacity) configuration series (colour = instance count, line style = capacity). The x axis is logarithmic in W_eff; the redundancy axis is symlog so that zero (no
removable attempts) stays visible next to small ratios.

For example::

    from flightcheck.checks.workload.plot import plot_summary
    plot_summary(rows, "out/")   # writes out/redundancy_vs_w_eff.png and out/fan_in_vs_w_eff.png
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

REDUNDANCY_PNG = "redundancy_vs_w_eff.png"
FAN_IN_PNG = "fan_in_vs_w_eff.png"


_STYLES = ("-", "--", ":", "-.")
_RATIOS = {"redundancy_ratio": "redundancy (removable / cold)", "exact_input_ratio": "exact-input removable / cold",
           "partial_prefix_ratio": "partial-prefix removable / cold"}
_MARKERS = ("o", "s", "^", "D")


def _group(rows: list[dict]) -> dict[str, dict[tuple[str, str], dict[tuple[int, int], list[dict]]]]:
    """trace -> (routing, lookup) -> (instances, capacity) -> rows of phase ``all``."""
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        if row["phase"] == "all":
            out[row["trace"]][(row["routing"], row["lookup"])][(row["num_instances"], row["capacity_blocks"])].append(row)
    return out


def plot_summary(rows: list[dict], out_dir: str | os.PathLike[str]) -> list[str]:
    """Write the two PNGs into out_dir and return their file names.

    Panels: three rows per trace in the redundancy figure (all removable, exact-input and partial-prefix
    attempts over cold attempts, on one scale), two in the fan-in figure (p99 then max); one column per
    (routing, lookup); within a panel the colour is the instance count and the line style the capacity.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    grouped = _group(rows)
    if not grouped:
        raise ValueError("no summary rows of phase 'all' to plot")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces = sorted(grouped)
    columns = sorted({key for t in traces for key in grouped[t]})
    counts = sorted({n for t in traces for c in grouped[t].values() for n, _ in c})
    capacities = sorted({cap for t in traces for c in grouped[t].values() for _, cap in c})
    # One y range per trace for its three ratio rows, so the exact and partial parts compare by eye.
    top = {t: 1.05 * max([row["redundancy_ratio"] or 0 for c in grouped[t].values() for line in c.values()
                          for row in line] + [1e-4]) for t in traces}
    colors = {n: plt.get_cmap("viridis")(i / max(1, len(counts) - 1) * 0.9) for i, n in enumerate(counts)}
    styles = {cap: (_STYLES[i % 4], _MARKERS[i % 4]) for i, cap in enumerate(capacities)}
    handles = [Line2D([], [], color=colors[n], label=f"N={n}") for n in counts]
    handles += [Line2D([], [], color="gray", linestyle=styles[c][0], marker=styles[c][1], label=f"C={c:,} blocks") for c in capacities]
    figures = ((REDUNDANCY_PNG, [(t, stat) for t in traces for stat in _RATIOS]),
               (FAN_IN_PNG, [(t, stat) for t in traces for stat in ("fan_in_p99", "fan_in_max")]))
    for name, panel_rows in figures:
        fig, axes = plt.subplots(len(panel_rows), len(columns), figsize=(5 * len(columns), 3.6 * len(panel_rows)),
                                 squeeze=False)
        for r, (trace, stat) in enumerate(panel_rows):
            for c, key in enumerate(columns):
                ax = axes[r][c]
                for (n, cap), line in sorted(grouped[trace].get(key, {}).items()):
                    points = sorted((row["w_eff_ms"], row[stat] or 0) for row in line)
                    ax.plot([p[0] for p in points], [p[1] for p in points], color=colors[n],
                            linestyle=styles[cap][0], marker=styles[cap][1], markersize=3, linewidth=1)
                ax.set_xscale("log")
                if stat in _RATIOS:
                    ax.set_yscale("symlog", linthresh=1e-4)
                    ax.set_ylim(bottom=0, top=top[trace])
                    ax.set_ylabel(_RATIOS[stat])
                else:
                    ax.set_ylim(bottom=0)
                    ax.set_ylabel("fan-in " + stat.removeprefix("fan_in_"))
                ax.set_title(f"{trace}: {key[0]}, {key[1]}", fontsize=9)
                ax.set_xlabel("W_eff (ms)")
                ax.grid(True, which="both", alpha=0.3)
        fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))   # 0.45 in for the legend
        fig.savefig(out / name, dpi=100, metadata={"Software": None})
        plt.close(fig)
    return [REDUNDANCY_PNG, FAN_IN_PNG]
