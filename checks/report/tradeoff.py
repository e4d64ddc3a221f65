"""The trade-off between the release points, in measured numbers: the benchmark's recorded figures.

``flightcheck bench`` writes one ``NAME.json`` per experiment with every run (each configuration
repeated, repeats interleaved). Every experiment whose configurations are exactly the release points is
read here: for each cell and each time metric, the median and the spread (min to max) under each
release point, and whether the direction held in *every* paired run (run k of one configuration
against run k of the other, measured side by side). A direction that flips between runs is reported as
not stable, never averaged away. Nothing is run: with no recorded figures the section says how to
record them.

For example::

    >>> runs = [{"config": c, "cell": 2, "repeat": k, "metrics": {"avg_ttft_ms": t}}
    ...         for k, (a, b) in enumerate([(900, 300), (950, 320), (1000, 310)])
    ...         for c, t in (("on-completion", a), ("after-prefill", b))]
    >>> line = tradeoff_lines({"experiment": "x", "runs": runs})[0]
    >>> line.direction, line.stable, line.figures["after-prefill"].median
    ('after-prefill lower in 3 of 3 paired runs (0.31x to 0.34x)', True, 310)
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from flightcheck.checks.report.sections import Figure, Tradeoff, TradeoffLine
from flightcheck.spec.scenario import RELEASES

BENCH_DIR = Path(__file__).resolve().parents[2] / "docs" / "bench"  # where the recorded full run lives
RECORD = "flightcheck bench release-points --out docs/bench   # and late-arrival"


def _cell(value: Any) -> str:
    return f"N={value}" if isinstance(value, int) else (str(value) if value not in (None, "") else "-")


def tradeoff_lines(doc: dict[str, Any]) -> list[TradeoffLine]:
    """The lines of one experiment's JSON (see the module's docstring)."""
    first, second = RELEASES[1], RELEASES[0]   # the baseline (release on completion) against the early release
    runs = doc.get("runs", [])
    cells = list(dict.fromkeys(r["cell"] for r in runs))
    metrics = list(dict.fromkeys(k for r in runs for k, v in r["metrics"].items()
                                 if k.endswith("_ms") and isinstance(v, (int, float))))
    out = []
    for cell in cells:
        for metric in metrics:
            by = {c: {r["repeat"]: r["metrics"][metric] for r in runs
                      if r["cell"] == cell and r["config"] == c and metric in r["metrics"]} for c in (first, second)}
            if not by[first] or not by[second]:
                continue
            figures = {c: Figure(statistics.median(v.values()), min(v.values()), max(v.values()), len(v))
                       for c, v in by.items()}
            paired = sorted(set(by[first]) & set(by[second]))
            ratios = [by[second][k] / by[first][k] for k in paired if by[first][k]]
            lower = sum(r < 1 for r in ratios)
            word, count = ("lower", lower) if lower * 2 >= len(ratios) else ("higher", len(ratios) - lower)
            span = f" ({min(ratios):.2f}x to {max(ratios):.2f}x)" if ratios else ""
            out.append(TradeoffLine(doc.get("experiment", "?"), _cell(cell), metric, figures,
                                    f"{second} {word} in {count} of {len(ratios)} paired runs{span}",
                                    bool(ratios) and count == len(ratios)))
    return out


def recorded_tradeoff(bench_dir: Path = BENCH_DIR) -> Tradeoff:
    """Every recorded experiment in ``bench_dir`` that compares exactly the release points."""
    lines: list[TradeoffLine] = []
    sources, files = [], []
    for path in sorted(bench_dir.glob("*.json")) if bench_dir.is_dir() else []:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
            continue
        configs = {r.get("config") for r in doc["runs"] if isinstance(r, dict)}
        if configs != set(RELEASES):
            continue
        lines += tradeoff_lines(doc)
        files.append(path.name)
        sizes = doc.get("sizes", {})
        sources.append(f"{path.name} ({doc.get('repeats', '?')} runs of each configuration, "
                       f"{sizes.get('prompt_tokens', '?')}-token prompts, {sizes.get('max_tokens', '?')} output tokens; "
                       f"{doc.get('backend', 'backend not recorded').split(' (')[0]})")
    if not lines:
        return Tradeoff(str(bench_dir), [], f"no recorded figures in {bench_dir}; record them with: {RECORD}")
    return Tradeoff(str(bench_dir), lines, "recorded in " + "; ".join(sources), files)
