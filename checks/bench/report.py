"""An experiment's result for people and machines: a markdown table, a JSON file, PNG plots.

The table has one row per (cell, configuration), the experiment's columns, and for each compared
metric its change against the baseline configuration of the same cell, measured in the same run.
The JSON holds the sizes, the medians and every run. The plot has one panel per plotted metric,
grouped bars (one per configuration) for each cell.

For example::

    >>> from flightcheck.checks.bench import EXPERIMENTS
    >>> from flightcheck.checks.bench.runner import Backend, run_experiment
    >>> result = run_experiment(EXPERIMENTS["late-arrival"], Backend.tiny(), quick=True, repeats=1)
    >>> print(markdown(result).splitlines()[2])
    | config | second's role | recovered | avg TTFT ms | slowest completion ms | avg TTFT vs on-completion | slowest completion vs on-completion |
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flightcheck.checks.bench.runner import ExperimentResult

_HEADERS = {"avg_ttft_ms": "avg TTFT", "slowest_ttft_ms": "slowest TTFT", "slowest_completion_ms": "slowest completion",
            "prefill_tokens": "prompt tokens computed"}


def _format(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    if fmt == "ms":
        return f"{value:,.1f}"
    if fmt == "int":
        return f"{value:,.0f}"
    if fmt == "pct":
        return f"{value * 100:+.1f}%"
    return str(value)


def change(value: float, base: float) -> str:
    """``value`` against ``base`` as a signed percentage."""
    return "-" if not base else f"{(value / base - 1) * 100:+.1f}%"


def markdown(result: ExperimentResult) -> str:
    """The experiment's table in markdown, headed by its title and how it was run."""
    exp = result.experiment
    has_cells = any(row["cell"] is not None for row in result.rows)
    baseline = exp.baseline if any(r["config"] == exp.baseline for r in result.rows) else None
    compare = exp.compare if baseline else []
    headers = ([exp.cell_name] if has_cells else []) + ["config"] + [c.header for c in exp.columns] + \
        [f"{_HEADERS.get(k, k)} vs {baseline}" for k in compare]
    lines = [f"**{exp.name}**: {exp.title}. Sizes: {result.sizes.prompt_tokens}-token prompt, "
             f"{result.sizes.max_tokens} output tokens; median of {result.repeats} run(s); {result.mode}.",
             "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in result.rows:
        m = row["metrics"]
        base = next((r["metrics"] for r in result.rows if r["cell"] == row["cell"] and r["config"] == baseline), None)
        cells = ([str(row["cell"])] if has_cells else []) + [row["config"]]
        cells += [_format(m.get(c.key), c.fmt) for c in exp.columns]
        cells += [change(m[k], base[k]) for k in compare]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Seed: {exp.seed}."]
    return "\n".join(lines)


def to_json(result: ExperimentResult) -> dict[str, Any]:
    exp = result.experiment
    return {"experiment": exp.name, "title": exp.title, "backend": result.backend, "mode": result.mode,
            "sizes": {"prompt_tokens": result.sizes.prompt_tokens, "max_tokens": result.sizes.max_tokens,
                      "counts": list(result.sizes.counts)},
            "repeats": result.repeats, "baseline": exp.baseline, "seed": exp.seed,
            "rows": result.rows,
            "runs": [{"config": r.config, "cell": r.cell, "repeat": r.repeat, "metrics": r.metrics} for r in result.runs]}


def plot(result: ExperimentResult, path: Path) -> Path:
    """Grouped bars per cell, one panel per plotted metric, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exp = result.experiment
    if exp.plot_together:
        return _plot_together(result, path, plt)
    if exp.plot_lines:
        return _plot_lines(result, path, plt)
    cells = list(dict.fromkeys(row["cell"] for row in result.rows))
    configs = list(dict.fromkeys(row["config"] for row in result.rows))
    fig, axes = plt.subplots(1, len(exp.plot), figsize=(5.2 * len(exp.plot), 3.8), squeeze=False)
    width = 0.8 / len(configs)
    for ax, (key, label) in zip(axes[0], exp.plot):
        for j, config in enumerate(configs):
            values = [next(r["metrics"].get(key) or 0 for r in result.rows if r["cell"] == c and r["config"] == config)
                      for c in cells]
            xs = [i + (j - (len(configs) - 1) / 2) * width for i in range(len(cells))]
            bars = ax.bar(xs, values, width, label=config)
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.set_xticks(range(len(cells)), [f"{exp.cell_name}={c}" if c is not None else "" for c in cells])
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{exp.name}: {exp.title}\n{result.sizes.prompt_tokens}-token prompt, {result.sizes.max_tokens} "
                 f"output tokens, median of {result.repeats}; {result.mode}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_together(result: ExperimentResult, path: Path, plt: Any) -> Path:
    """One panel: a bar per plotted metric (same unit), for each configuration."""
    exp = result.experiment
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    for row in result.rows:
        labels = [label for _, label in exp.plot]
        bars = ax.bar(labels, [row["metrics"].get(key) or 0 for key, _ in exp.plot], 0.5,
                      label=row["config"], color=["tab:gray", "tab:blue", "tab:orange"][:len(labels)])
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_ylabel("TTFT (ms)")
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{exp.name}: {exp.title}\n{result.sizes.prompt_tokens}-token prompt, median of {result.repeats}; "
                 f"{result.mode}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_lines(result: ExperimentResult, path: Path, plt: Any) -> Path:
    """A sweep: one panel per plotted metric, the cells on the x axis, one line per configuration."""
    exp = result.experiment
    cells = list(dict.fromkeys(row["cell"] for row in result.rows))
    configs = list(dict.fromkeys(row["config"] for row in result.rows))
    fig, axes = plt.subplots(1, len(exp.plot), figsize=(5.2 * len(exp.plot), 4.0), squeeze=False)
    for ax, (key, label) in zip(axes[0], exp.plot):
        for j, config in enumerate(configs):
            values = [next(r["metrics"].get(key) for r in result.rows if r["cell"] == c and r["config"] == config)
                      for c in cells]
            ax.plot(cells, [v if v is not None else float("nan") for v in values], marker="o", markersize=4,
                    label=config, linestyle="--" if config == exp.baseline else "-",
                    color="black" if config == exp.baseline else f"C{j}")
        ax.set_xticks(cells)
        ax.set_xlabel(exp.cell_name)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{exp.name}: {exp.title}\n{result.sizes.prompt_tokens}-token prompts, {result.sizes.max_tokens} "
                 f"output tokens, median of {result.repeats}; {result.mode}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save(result: ExperimentResult, out_dir: Path) -> list[Path]:
    """Writes NAME.md, NAME.json and NAME.png under ``out_dir``; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    name = result.experiment.name
    md = out_dir / f"{name}.md"
    md.write_text(markdown(result) + "\n", encoding="utf-8")
    js = out_dir / f"{name}.json"
    js.write_text(json.dumps(to_json(result), indent=2) + "\n", encoding="utf-8")
    return [md, js, plot(result, out_dir / f"{name}.png")]
