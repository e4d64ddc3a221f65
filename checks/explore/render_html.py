"""The interactive HTML page of a state graph: one standalone file, nothing fetched from the network.

The page embeds the SVG that Graphviz laid out, the picture's data as a JSON block (every state's full
:func:`~flightcheck.checks.explore.counterexample.describe` form, its label, tags, incoming and outgoing actions),
and a little inline CSS and JavaScript: hovering a state shows its details in the side panel, clicking
pins it and lights up its edges (Escape or a click on the background unpins), ``+``/``-``/``fit``
zoom, and ``page.html#s12`` opens with state ``s12`` pinned.
The legend and the highlighted path's numbered steps are in the side panel too. When the script has
wired every state it sets ``data-ready`` on ``<body>`` to the number of states, which the tests read.

For example::

    >>> from flightcheck.checks.explore.picture import Picture, PNode
    >>> page = html_page(Picture("t", [PNode("s0", (0,), "x")], [], []), "<svg></svg>")
    >>> page.startswith("<!DOCTYPE html>") and '"s0"' in page
    True
"""

from __future__ import annotations

import html
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flightcheck.checks.explore.picture import Picture

_CSS = """
body{margin:0;font:13px/1.35 'DejaVu Sans',Arial,sans-serif;display:flex;height:100vh;color:#222}
#graph{flex:1;overflow:auto;background:#fafafa}
#graph svg{display:block}
#side{width:380px;overflow:auto;border-left:1px solid #ccc;padding:8px 12px;box-sizing:border-box}
h1{font-size:15px;margin:4px 0} h2{font-size:13px;margin:12px 0 4px}
.sw{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:middle;border:1px solid #999}
#legend div{margin:2px 0} pre{white-space:pre-wrap;font-size:11px;background:#f3f3f3;padding:6px;margin:0}
table.st{border-collapse:collapse;font-size:12px} table.st td{border:1px solid #ddd;padding:2px 5px;vertical-align:top}
.muted{color:#777} button{margin-right:4px}
g.node{cursor:pointer} g.node.fc-pin path,g.node.fc-pin polygon{stroke:#000;stroke-width:4px}
g.edge.fc-lit path{stroke-width:4px} g.edge.fc-lit polygon{stroke-width:3px}
.fc-dim{opacity:.25}
a.jump{color:#05c;cursor:pointer;text-decoration:underline}
"""

_JS = """
(function(){
  const data = JSON.parse(document.getElementById('fc-data').textContent);
  const info = document.getElementById('info');
  const svg = document.querySelector('#graph svg');
  const edgesOf = {};
  for (const [eid, e] of Object.entries(data.edges)) {
    (edgesOf[e.src] = edgesOf[e.src] || []).push(eid);
    (edgesOf[e.dst] = edgesOf[e.dst] || []).push(eid);
  }
  let pinned = null;
  function esc(s){return String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'})[c]);}
  function table(obj){
    if (typeof obj === 'string') return esc(obj);
    if (obj === null || typeof obj !== 'object') return esc(JSON.stringify(obj));
    if (Array.isArray(obj)) return obj.length ? obj.map(esc).join(', ') : '<span class="muted">none</span>';
    const keys = Object.keys(obj);
    if (!keys.length) return '<span class="muted">none</span>';
    return '<table class="st">' + keys.map(k => '<tr><td>' + esc(k) + '</td><td>' + table(obj[k]) + '</td></tr>').join('') + '</table>';
  }
  function links(list){
    if (!list.length) return '<span class="muted">none</span>';
    return list.map(([acts, sid]) => esc(acts.join(', ')) + ' &rarr; <a class="jump" data-sid="' + sid + '">' + sid + '</a>').join('<br>');
  }
  function show(sid){
    const n = data.nodes[sid];
    if (!n) return;
    let h = '<h2>state ' + sid + (n.tags.length ? ' <span class="muted">(' + esc(n.tags.join(', ')) + ')</span>' : '') + '</h2>';
    h += '<pre>' + esc(n.label) + '</pre>';
    h += '<h2>actions out</h2>' + links(n.out) + '<h2>actions in</h2>' + links(n.in);
    if (n.info.notify_loops) h += '<h2>not drawn</h2>' + esc(n.info.notify_loops.join(', ')) + ' (rejected, state unchanged)';
    if (n.info.in) h += '<h2>present under</h2>' + esc(n.info.in.join(', '));
    h += '<h2>full state</h2>' + table(n.info.state);
    info.innerHTML = h;
    for (const a of info.querySelectorAll('a.jump')) a.onclick = ev => { pin(a.dataset.sid); ev.stopPropagation(); };
  }
  function light(sid, on){
    for (const eid of (edgesOf[sid] || [])) {
      const g = document.getElementById(eid);
      if (g) g.classList.toggle('fc-lit', on);
    }
  }
  function pin(sid){
    if (pinned) { document.getElementById(pinned).classList.remove('fc-pin'); light(pinned, false); }
    pinned = sid;
    if (sid) {
      const g = document.getElementById(sid);
      g.classList.add('fc-pin'); light(sid, true); show(sid);
      g.scrollIntoView({block: 'nearest', inline: 'nearest'});
    } else info.innerHTML = '<p class="muted">Hover over a state to see it; click to pin it.</p>';
  }
  let wired = 0;
  for (const sid of Object.keys(data.nodes)) {
    const g = document.getElementById(sid);
    if (!g) continue;
    g.addEventListener('mouseenter', () => { if (!pinned) show(sid); });
    g.addEventListener('click', ev => { pin(pinned === sid ? null : sid); ev.stopPropagation(); });
    wired += 1;
  }
  document.getElementById('graph').addEventListener('click', () => pin(null));
  document.addEventListener('keydown', ev => { if (ev.key === 'Escape') pin(null); });
  let scale = 1;
  const w0 = svg ? svg.width.baseVal.value : 0, h0 = svg ? svg.height.baseVal.value : 0;
  const pane = document.getElementById('graph');
  function zoom(f){ scale = f ? scale * f : 1; if (svg) { svg.setAttribute('width', w0 * scale); svg.setAttribute('height', h0 * scale); } }
  function fit(){ if (svg) zoom(Math.min(pane.clientWidth / w0, pane.clientHeight / h0) / scale); }
  document.getElementById('zin').onclick = () => zoom(1.25);
  document.getElementById('zout').onclick = () => zoom(0.8);
  document.getElementById('zfit').onclick = fit;
  document.getElementById('z11').onclick = () => zoom(0);
  pin(null);
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (data.nodes[wanted]) pin(wanted);  // page.html#s12 opens with state s12 pinned
  else {
    const start = document.getElementById(data.start || 's0');
    if (start) start.scrollIntoView({block: 'start', inline: 'center'});
  }
  document.body.dataset.ready = String(wired);
})();
"""


def _inline_svg(svg: str) -> str:
    """The ``<svg>`` element alone (no XML prolog, doctype or comments before it)."""
    start = svg.find("<svg")
    if start < 0:
        raise ValueError("the SVG from dot has no <svg> element")
    return svg[start:]


def page_data(pic: "Picture") -> dict[str, Any]:
    """The JSON embedded in the page: states by id with details and neighbours, edges by id."""
    nodes: dict[str, Any] = {}
    for n in pic.nodes:
        nodes[n.id] = {"label": n.label, "tags": n.tags, "info": n.info, "out": [], "in": []}
    edges: dict[str, Any] = {}
    for e in pic.edges:
        edges[e.id] = {"src": e.src, "dst": e.dst, "actions": e.actions, "tags": e.tags}
        nodes[e.src]["out"].append([e.actions, e.dst])
        nodes[e.dst]["in"].append([e.actions, e.src])
    start = next((n.id for n in pic.nodes if "initial" in n.tags), pic.nodes[0].id if pic.nodes else "")
    return {"title": pic.title, "start": start, "nodes": nodes, "edges": edges, "legend": pic.legend, "notes": pic.notes}


def html_page(pic: "Picture", svg: str) -> str:
    """One standalone HTML page: the SVG inline, the data as JSON, the legend, and the script."""
    data = json.dumps(page_data(pic), default=str, separators=(",", ":"))
    data = data.replace("</", "<\\/")  # nothing in the data may close the script element
    title_lines = pic.title.splitlines() or [""]
    legend = "".join(f'<div><span class="sw" style="background:{html.escape(c)}"></span>{html.escape(t)}</div>'
                     for c, t in pic.legend)
    notes = f"<h2>path</h2><pre>{html.escape(chr(10).join(pic.notes))}</pre>" if pic.notes else ""
    body_svg = re.sub(r"<!--.*?-->", "", _inline_svg(svg), flags=re.S)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title_lines[0])}</title>
<style>{_CSS}</style></head>
<body data-ready="0">
<div id="graph">{body_svg}</div>
<div id="side">
<h1>{html.escape(title_lines[0])}</h1>
<div class="muted">{'<br>'.join(html.escape(t) for t in title_lines[1:])}</div>
<p><button id="zin">+</button><button id="zout">&minus;</button><button id="zfit">fit</button><button id="z11">1:1</button>
<span class="muted">{len(pic.nodes)} states drawn</span></p>
<div id="info"></div>
<h2>legend</h2><div id="legend">{legend}</div>
{notes}
</div>
<script type="application/json" id="fc-data">{data}</script>
<script>{_JS}</script>
</body></html>
"""
