"""The report written as one static HTML page, with the interactive state-graph pages beside it.

``index.html`` holds everything inline (CSS, the sequence diagrams as SVG from
:mod:`~flightcheck.checks.report.svg_sequence`, the state graphs as the SVG Graphviz laid out, a few
lines of script), so it opens from disk with no server and nothing fetched. Each coverage graph is
also written as the explorer's standalone interactive page (:mod:`flightcheck.checks.explore.render_html`:
hover or click a state for its details) under ``graphs/``, linked from the report.

The page checks itself when it loads: it counts the sequence diagrams and graphs that rendered with a
non-empty box and records any script or resource error, in ``data-*`` attributes of ``<body>``
(``data-diagrams``, ``data-graphs``, ``data-empty``, ``data-errors``) that the headless-browser test reads.

For example::

    >>> from flightcheck.checks.report.sections import Report, SummaryRow
    >>> page = report_html(Report("flightcheck check", True, [SummaryRow("explore", "burst2", True, "ok", 0.1)]))
    >>> page.startswith("<!DOCTYPE html>") and "http://" not in page.replace("http://www.w3.org", "")
    True
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from flightcheck.checks.report.sections import CoverageGraph, Report
from flightcheck.checks.report.svg_sequence import to_svg

_CSS = """
body{font:14px/1.45 'DejaVu Sans',Verdana,Arial,sans-serif;color:#222;margin:0;background:#f6f6f6}
main{max-width:1500px;margin:0 auto;padding:12px 24px 60px;background:#fff}
h1{font-size:22px;margin:8px 0} h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #ddd}
h3{font-size:15px;margin:18px 0 6px} .muted{color:#777} .small{font-size:12px}
.ok{color:#1b7f2a;font-weight:bold} .fail{color:#c62828;font-weight:bold} .warn{color:#9a6b00;font-weight:bold}
.badge{display:inline-block;padding:3px 10px;border-radius:4px;color:#fff;font-weight:bold}
.badge.ok{background:#1b7f2a} .badge.fail{background:#c62828}
table{border-collapse:collapse;margin:6px 0} td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f0f0f0} td.num{text-align:right;font-variant-numeric:tabular-nums}
table.matrix td{text-align:center;padding:2px 3px;font-size:12px} table.matrix td.l{text-align:left;white-space:nowrap}
table.matrix th.p{writing-mode:vertical-rl;transform:rotate(180deg);font-size:11px;font-weight:normal;padding:4px 2px}
.v-holds,.v-found{color:#1b7f2a} .v-violated,.v-never{color:#c62828;font-weight:bold;background:#fde2e2}
pre{background:#f4f4f4;padding:8px;overflow:auto;font-size:12px;white-space:pre-wrap}
.diagram{overflow-x:auto;border:1px solid #e3e3e3;margin:6px 0 10px;background:#fff}
.graph{overflow:auto;border:1px solid #e3e3e3;max-height:900px;background:#fafafa}
svg.fc-graph{max-width:100%;height:auto}
nav a{margin-right:12px} details{margin:4px 0} summary{cursor:pointer}
.problem{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px;margin:6px 0}
"""

# Registered first, so that an error anywhere on the page (a script's, or a resource that fails to load)
# is recorded for the self-check below.
_HEAD_JS = """
window.fcErrors = [];
window.addEventListener('error', e => { window.fcErrors.push(e.message || ('failed to load ' + ((e.target && (e.target.src || e.target.href)) || '?'))); }, true);
const fcConsoleError = console.error.bind(console);
console.error = (...a) => { window.fcErrors.push(a.join(' ')); fcConsoleError(...a); };
"""

_CHECK_JS = """
(function(){
  const body = document.body, empty = [];
  function count(sel){
    let n = 0;
    for (const svg of document.querySelectorAll(sel)) {
      const box = svg.getBBox ? svg.getBBox() : {width: 0, height: 0};
      if (svg.childElementCount > 0 && box.width > 0 && box.height > 0) n += 1; else empty.push(svg.id || sel);
    }
    return n;
  }
  body.dataset.diagrams = String(count('svg.fc-seq'));
  body.dataset.graphs = String(count('svg.fc-graph'));
  body.dataset.empty = empty.join(' ');
  body.dataset.errors = String(window.fcErrors.length);
  body.dataset.errorText = window.fcErrors.join(' | ');
  body.dataset.checked = 'yes';
})();
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _verdict(ok: bool, yes: str = "ok", no: str = "FAIL") -> str:
    return f'<span class="{"ok" if ok else "fail"}">{yes if ok else no}</span>'


def _table(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def _prefixed_svg(svg: str, prefix: str) -> str:
    """Graphviz's SVG inline, with its ids prefixed (two graphs on one page must not share ``s0``)."""
    start = svg.find("<svg")
    body = re.sub(r"<!--.*?-->", "", svg[start:], flags=re.S)
    body = re.sub(r'\bid="', f'id="{prefix}', body)
    return body.replace("<svg", f'<svg class="fc-graph" id="{prefix}svg"', 1)


def _header(r: Report) -> str:
    failed = r.num_failed
    opts = ", ".join(f"{k}={v}" for k, v in r.options.items() if v not in (None, False)) or "defaults"
    badge = "ERROR" if r.errors else "passed" if r.ok else "FAILED"
    errors = (f", {r.errors} error (flightcheck itself failed: the run is not a verdict)" if r.errors else "")
    out = [f"<h1>{_e(r.title)} <span class=\"badge {'ok' if r.ok else 'fail'}\">{badge}</span></h1>",
           f"<p>{r.num_rows - failed} rows passed, {failed - r.errors} failed{errors}; generated {_e(r.generated)}; "
           f"options: {_e(opts)}.</p>"]
    if r.strength:
        out.append(f"<p>{_e(r.strength)}.</p>")
    out += [f'<div class="problem">not drawn: {_e(p)}</div>' for p in r.problems]
    if r.missing:
        out.append(f'<p class="muted">stages not run this time: {_e(", ".join(r.missing))}</p>')
    links = [("variants", "design history"), ("coverage", "state graphs and engine coverage"),
             ("verdicts", "property verdicts"), ("proofs", "z3 proofs"), ("equiv", "equivalence"),
             ("conform", "engine conformance"), ("workload", "workload"), ("tradeoff", "release-point trade-off"),
             ("rows", "every row")]
    out.append("<nav>" + "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in links) + "</nav>")
    stages: dict[str, list] = {}
    for s in r.summary:
        stages.setdefault(s.stage, []).append(s)
    rows = [[_e(name), str(len(rs)), str(sum(x.ok for x in rs)),
             _verdict(all(x.ok for x in rs), "0", str(sum(not x.ok for x in rs))), f"{sum(x.seconds for x in rs):.1f}"]
            for name, rs in stages.items()]
    out.append(_table(["stage", "rows", "passed", "failed", "seconds"], rows))
    return "\n".join(out)


def _variants(r: Report) -> str:
    out = ['<h2 id="variants">The design history: each variant on its demo scenario</h2>',
           "<p>Each mutant of the design is drawn as its shortest counterexample: one lifeline per request, the "
           "scheduler, the coordinator and the prefix cache (and the page pool where memory is modelled). The step "
           "where the property breaks is on a red band; the coordinator's verdict on every termination is a dashed "
           "reply, red when it is the misjudgement. The correct designs show the run in which every request finishes.</p>"]
    if not r.variants:
        out.append('<p class="muted">the variants stage was not run.</p>')
    else:
        out.append(_table(["variant", "story", "must violate", "verdict"], [
            [f'<a href="#variant-{_e(v.name)}">{_e(v.name)}</a>', _e(v.story),
             f"<code>{_e(v.property)}</code>" if v.property else "(correct)", f"{_verdict(v.ok)} {_e(v.detail)}"]
            for v in r.variants]))
    for k, v in enumerate(r.variants):
        head = f"must violate <b>{_e(v.property)}</b>" if v.property else "correct: every property holds"
        out.append(f'<h3 id="variant-{_e(v.name)}">{_e(v.name)} {_verdict(v.ok)}</h3>')
        out.append(f"<p>{_e(v.story)}<br>{head}; {_e(v.detail)} on <code>{_e(v.scenario)}</code> "
                   f"({_e(v.policy)}).</p>")
        if v.property_story and v.property:
            out.append(f'<p class="small">{_e(v.property)}: {_e(v.property_story)}</p>')
        if v.diagram is not None:
            svg = to_svg(v.diagram).replace('class="fc-seq"', f'class="fc-seq" id="seq{k}"', 1)
            out.append(f'<div class="diagram">{svg}</div>')
        if v.listing:
            out.append(f"<details><summary>the same path as text</summary><pre>{_e(v.listing)}</pre></details>")
        if v.property:
            out.append(f'<p class="small">Step through it, step back and branch off: <code>flightcheck explorer '
                       f'--variant {_e(v.name)}</code></p>')
    return "\n".join(out)


def _coverage(r: Report, pages: dict[int, str], svgs: dict[int, str]) -> str:
    out = ['<h2 id="coverage">The two-request burst per release point, coloured by the engine\'s runs</h2>',
           "<p>Every state and edge of the explored graph; green where the real engine's runs went (states with a "
           "green fill, edges in green), grey where none did. Open the interactive page to hover or click a state.</p>"]
    if not r.coverage:
        out.append('<p class="muted">not drawn (see the notes at the top).</p>')
    for k, g in enumerate(r.coverage):
        out.append(f"<h3>{_e(g.scenario)} under release {_e(g.release)} <span class=\"muted small\">({_e(g.policy)})</span></h3>")
        out.append(f"<p>{g.edges_taken} of {g.edges} state-to-state edges and {g.states_taken} of {g.states} states taken; runs: "
                   f"{_e(g.source)}. <a href=\"{_e(pages[k])}\">open the interactive page</a></p>")
        if g.missed_by_rule:
            out.append("<p class=\"small\">edges not taken, by the step-loop rule that keeps the engine off them: "
                       + ", ".join(f"{_e(rule)} {n}" for rule, n in g.missed_by_rule.items()) + "</p>")
        out.append(f'<div class="graph">{svgs[k]}</div>')
    return "\n".join(out)


def _verdicts(r: Report) -> str:
    out = ['<h2 id="verdicts">Property verdicts per scenario and policy (correct design, explorer)</h2>']
    if not r.verdicts:
        return "\n".join(out + ['<p class="muted">the explore stage was not run.</p>'])
    sym = {"holds": "&#10003;", "found": "&#9679;", "violated": "&#10007;", "never": "&#10007;"}
    head = '<tr><th>scenario</th><th>policy</th><th>states</th>' + "".join(
        f'<th class="p" title="{_e(p.story)}">{_e(p.name)}</th>' for p in r.properties) + "</tr>"
    body = []
    for line in r.verdicts:
        cells = "".join(
            f'<td class="v-{_e(line.verdicts[p.name])}" title="{_e(p.name)}: {_e(line.verdicts[p.name])}">'
            f'{sym.get(line.verdicts[p.name], "?")}</td>' if p.name in line.verdicts else '<td class="muted">&middot;</td>'
            for p in r.properties)
        body.append(f'<tr><td class="l">{_e(line.scenario)}</td><td class="l small">{_e(line.policy)}</td>'
                    f'<td class="num">{line.states if line.states is not None else ""}</td>{cells}</tr>')
    out.append(f'<table class="matrix">{head}{"".join(body)}</table>')
    out.append('<p class="small">&#10003; holds, &#9679; a witness found (sometimes), &#10007; violated or never, '
               '&middot; does not apply under that scenario or policy. Hover a column for its story:</p>')
    out.append("<table>" + "".join(f"<tr><td><code>{_e(p.name)}</code></td><td>{_e(p.kind)}</td><td>{_e(p.story)}</td></tr>"
                                   for p in r.properties) + "</table>")
    return "\n".join(out)


def _proofs(r: Report) -> str:
    out = ['<h2 id="proofs">z3: k-induction and BMC of every safety property</h2>']
    if not r.proofs:
        return "\n".join(out + ['<p class="muted">the prove stage was not run.</p>'])
    for t in r.proofs:
        bounded = [line for line in t.lines if line.status != "proved"]
        opened = " open" if (bounded or not t.ok) else ""
        rows = []
        for line in t.lines:
            word = (line.says or line.status).replace("(k-induction)", f"(k-induction, k={line.k})")
            cls = {"proved": "ok", "bounded": "warn"}.get(line.status, "fail")
            rows.append([f"<code>{_e(line.property)}</code>" + (" <span class=\"muted\">(lemma)</span>" if line.lemma else ""),
                         f'<span class="{cls}">{_e(word)}</span>', _e(", ".join(line.support) or "-")])
        out.append(f"<details{opened}><summary>{_verdict(t.ok)} <b>{_e(t.scenario)}</b> "
                   f"<span class=\"small\">{_e(t.policy)}</span>: {_e(t.says + ': ' if t.says else '')}{_e(t.detail)}</summary>"
                   + _table(["property", "verdict", "invariants the proof used (unsat core)"], rows))
        for line in bounded:
            if line.cti:
                out.append(f"<p>{_e(line.property)}: counterexample to induction</p><pre>{_e(line.cti)}</pre>")
            if line.counterexample:
                out.append(f"<p>{_e(line.property)}: violated by</p><pre>{_e(' '.join(line.counterexample))}</pre>")
        out.append("</details>")
    return "\n".join(out)


def _equiv(r: Report) -> str:
    out = ['<h2 id="equiv">Equivalence: which designs nobody outside can tell apart</h2>']
    if not r.equivalences:
        return "\n".join(out + ['<p class="muted">the equiv stage was not run.</p>'])
    for e in r.equivalences:
        out.append(f"<h3>{_e(e.variant_a)} vs {_e(e.variant_b)} {_verdict(e.ok)}</h3>"
                   f"<p>{_e(e.summary)} <span class=\"muted small\">({_e(e.scenario)}, {_e(e.policy)})</span></p>")
        if e.steps:
            out.append(_table(["#", "action", f"in {e.variant_a}", f"in {e.variant_b}"],
                              [[str(s.number), f"<code>{_e(s.action)}</code>", _e(s.changes_a), _e(s.changes_b)]
                               for s in e.steps]))
    return "\n".join(out)


def _conform(r: Report) -> str:
    out = ['<h2 id="conform">The real engine against the spec</h2>']
    out.append(_table(["stage", "item", "verdict", "detail"], [[_e(c.stage), _e(c.item), _verdict(c.ok), _e(c.detail)]
                                                              for c in r.conform]) if r.conform else
               '<p class="muted">the conform stage was not run.</p>')
    for model, counts in r.probe.items():
        keys = ("num_requests", "prefix_lookups", "page_allocations", "computations_per_page", "destinations_per_page",
                "recovered_tokens", "prefill_tokens", "events", "conformed")
        rows = [[_e(k.replace("_", " "))] + [_e(counts[c].get(k, "")) for c in ("none", "single-flight")] for k in keys]
        out.append(f"<h3>The probe ({_e(model)} model): eight identical requests at a cold cache, the leader held</h3>"
                   + _table(["count", "coordination none", "single-flight"], rows))
    return "\n".join(out)


def _workload(r: Report) -> str:
    out = ['<h2 id="workload">Would single-flight pay on real traffic? The Mooncake traces</h2>']
    if not r.workload:
        return "\n".join(out + ['<p class="muted">the workload stage was not run.</p>'])
    rows = [[_e(w["item"]), _verdict(w["ok"]), _e(f"{w.get('requests', '')}"), _e(f"{w.get('cold_attempts', '')}"),
             _e(f"{w.get('removable_attempts', '')}"),
             _e(f"{w['redundancy_ratio']:.4%}" if isinstance(w.get("redundancy_ratio"), float) else ""), _e(w["detail"])]
            for w in r.workload]
    out.append(_table(["trace", "verdict", "requests", "cold block loads", "removable", "redundancy", "detail"], rows))
    out.append('<p class="small">One instance, 10,000 blocks, W_eff = 1 s, contiguous lookup: the loads a '
               "single-flight coordinator would remove are those of the same cold block requested again before its "
               "first load completes.</p>")
    return "\n".join(out)


def _tradeoff(r: Report) -> str:
    out = ['<h2 id="tradeoff">The trade-off between the release points, measured</h2>']
    t = r.tradeoff
    if t is None or not t.lines:
        return "\n".join(out + [f'<p class="muted">{_e(t.note if t else "not read")}</p>'])
    rows = []
    for line in t.lines:
        cells = [_e(line.experiment), _e(line.cell), _e(line.metric)]
        for f in line.figures.values():
            cells.append(_e(f"{f.median:,.0f} ({f.low:,.0f} to {f.high:,.0f}; {f.runs} runs)"))
        cells.append(f'<span class="{"ok" if line.stable else "warn"}">{_e(line.direction)}'
                     f'{"" if line.stable else " (not stable)"}</span>')
        rows.append(cells)
    names = list(t.lines[0].figures)
    out.append(_table(["experiment", "cell", "metric"] + [f"{n}: median (min to max)" for n in names]
                      + ["direction across paired runs"], rows))
    out.append(f'<p class="small">{_e(t.note)}. Every configuration runs in one process with the repeats '
               "interleaved; a direction is stable when it held in every paired run.</p>")
    return "\n".join(out)


def _all_rows(r: Report) -> str:
    rows = [[_e(s.stage), _e(s.item), _verdict(s.ok), _e(s.strength), _e(s.detail),
             f'<span class="num">{s.seconds:.1f}</span>'] for s in r.summary]
    return '<h2 id="rows">Every row of the check</h2>' + _table(["stage", "item", "verdict", "strength", "detail", "s"],
                                                                   rows)


def report_html(r: Report, pages: dict[int, str] | None = None, svgs: dict[int, str] | None = None) -> str:
    """The page's text (``pages``/``svgs``: each coverage graph's page name and inline SVG, by index)."""
    body = "\n".join([_header(r), _variants(r), _coverage(r, pages or {}, svgs or {}), _verdicts(r), _proofs(r),
                      _equiv(r), _conform(r), _workload(r), _tradeoff(r), _all_rows(r)])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(r.title)}: {'passed' if r.ok else 'FAILED'}</title>
<style>{_CSS}</style><script>{_HEAD_JS}</script></head>
<body data-checked="no"><main>
{body}
</main>
<script>{_CHECK_JS}</script>
</body></html>
"""


def _graph_files(g: CoverageGraph, out_dir: Path, k: int) -> tuple[str, str]:
    from flightcheck.checks.explore.render import run_dot, to_dot
    from flightcheck.checks.explore.render_html import html_page

    svg = run_dot(to_dot(g.picture, with_legend=False), "svg").decode()
    name = f"graphs/{g.scenario}-{g.release}.html"
    path = out_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_page(g.picture, svg), encoding="utf-8")
    return name, _prefixed_svg(svg, f"g{k}-")


def write_report(r: Report, out_dir: Path) -> Path:
    """Write ``index.html`` (and ``graphs/*.html``) under ``out_dir``; returns the index's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pages, svgs = {}, {}
    for k, g in enumerate(r.coverage):
        pages[k], svgs[k] = _graph_files(g, out_dir, k)
        g.page = pages[k]
    index = out_dir / "index.html"
    tmp = index.with_name("index.html.tmp")
    tmp.write_text(report_html(r, pages, svgs), encoding="utf-8")
    tmp.replace(index)
    return index
