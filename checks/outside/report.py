"""The outside probe's report: text for the terminal, and a static HTML page with its plots.

The page (``index.html`` under ``--report DIR``) holds the verdicts, the sources, a table per shape
and two plots embedded as PNG (computations per shared page for each shape, and every request's TTFT
per shape and repeat); ``probe.json`` beside it has everything.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

from flightcheck.checks.outside.probe import Report


def format_text(report: Report) -> str:
    """The report as plain lines: the server, the sources, then a verdict per shape with its evidence."""
    lines = [f"outside probe of {report.url} (model {report.model!r}, {report.prompts} prompts, "
             f"page size {report.page_size}: {report.page_size_source}), {report.seconds:.1f} s"]
    lines += [f"  note: {n}" for n in report.notes]
    lines.append("sources:")
    lines += [f"  - {s}" for s in report.sources]
    for shape in report.shapes:
        spread = "" if shape.ttft_spread_ms is None else f"; TTFT spread {shape.ttft_spread_ms:.1f} ms"
        lines.append(f"{shape.shape}: {shape.verdict}")
        lines.append(f"  computations per shared page {shape.computations_per_page} "
                     f"(repeats {shape.per_repeat}; {shape.source or 'no source'}){spread}")
        lines += [f"  {e}" for e in shape.evidence]
    return "\n".join(lines)


def _plots(report: Report) -> tuple[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = report.shapes
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for k, s in enumerate(shapes):
        xs = [k + (i - (len(s.computations_per_page) - 1) / 2) * 0.15 for i in range(len(s.computations_per_page))]
        ax.bar(xs, s.computations_per_page, width=0.14, label=None)
        ax.hlines(s.num_requests, k - 0.35, k + 0.35, colors="grey", linestyles="dotted")
    ax.set_xticks(range(len(shapes)), [s.shape for s in shapes], fontsize=8)
    ax.set_ylabel("computations per shared page")
    ax.set_title("bars: each shared page (median of repeats); dotted: requests in the shape", fontsize=9)
    first = _png(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for k, s in enumerate(shapes):
        for r, ttfts in enumerate(s.ttft_ms):
            ys = [t for t in ttfts if t is not None]
            ax.scatter([k + (r - 1) * 0.2] * len(ys), ys, s=12)
    ax.set_xticks(range(len(shapes)), [s.shape for s in shapes], fontsize=8)
    ax.set_ylabel("TTFT (ms, probe's clock)")
    ax.set_title("every request's time to first token, one column per repeat", fontsize=9)
    second = _png(fig)
    plt.close(fig)
    return first, second


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode()


def write_html(report: Report, directory: Path) -> Path:
    """Writes ``index.html`` (verdicts, sources, tables, two plots) and ``probe.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "probe.json").write_text(json.dumps(report.to_json(), indent=1))
    pages, ttft = _plots(report)
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(s.shape)}</td><td>{esc(s.verdict)}</td><td>{s.computations_per_page}</td>"
        f"<td>{'' if s.ttft_spread_ms is None else f'{s.ttft_spread_ms:.1f}'}</td><td>{esc(s.source)}</td></tr>"
        for s in report.shapes)
    details = "".join(
        f"<h3>{esc(s.shape)}</h3><ul>" + "".join(f"<li>{esc(e)}</li>" for e in s.evidence) + "</ul>"
        for s in report.shapes)
    notes = "".join(f"<li>{esc(n)}</li>" for n in report.notes)
    sources = "".join(f"<li>{esc(s)}</li>" for s in report.sources)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>outside probe of {esc(report.url)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{border:1px solid #ccc;padding:.3em}}
table{{border-collapse:collapse}}</style></head><body>
<h1>Duplicated prefill at {esc(report.url)}</h1>
<p>model {esc(report.model)}, {esc(report.prompts)} prompts, page size {report.page_size}
({esc(report.page_size_source)}), {report.date}, {report.seconds:.1f} s.</p>
<ul>{notes}</ul><h2>Sources</h2><ul>{sources}</ul>
<h2>Verdicts</h2><table><tr><th>shape</th><th>verdict</th><th>computations per shared page</th>
<th>TTFT spread (ms)</th><th>source</th></tr>{rows}</table>
<img alt="computations per shared page" src="data:image/png;base64,{pages}">
<img alt="TTFT per request" src="data:image/png;base64,{ttft}">
<h2>Evidence</h2>{details}</body></html>
"""
    path = directory / "index.html"
    path.write_text(page)
    return path


__all__ = ["format_text", "write_html"]
