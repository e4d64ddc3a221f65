"""Pictures of explored state graphs written out: DOT made here, SVG/PNG by Graphviz's ``dot``, HTML.

:func:`render_result` draws one :class:`~flightcheck.checks.explore.result.ExploreResult`; :func:`render_diff`
overlays the graphs of two policies of one scenario (their states are comparable tuples). Both build a
:class:`~flightcheck.checks.explore.picture.Picture` first and write it by the file's suffix: ``.dot``
(text made here, no Python graphviz binding), ``.svg`` and ``.png`` (Debian's ``dot`` run in a
subprocess), ``.html`` (one standalone page, see :mod:`flightcheck.checks.explore.render_html`).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.checks.explore.explorer import explore
    >>> dot = to_dot(build_picture(explore(FlightSpec(SCENARIOS["burst2"]))))
    >>> dot.startswith("digraph"), dot.count("->") > 50
    (True, True)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.explore.picture import (
    MAX_NODES, SUFFIXES, Picture, RenderError, build_diff_picture, build_picture,
)
from flightcheck.checks.explore.result import ExploreResult
from flightcheck.spec.scenario import RELEASES


def _check_size(num_nodes: int, force: bool) -> None:
    if num_nodes > MAX_NODES and not force:
        raise RenderError(
            f"the graph has {num_nodes} states, more than the {MAX_NODES} a picture stays readable with; "
            "render a smaller scenario (e.g. --scenario burst2 or burst2-abort) or pass force=True")


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise RenderError(f"cannot render to {path.name!r}: the file name must end in {', '.join(SUFFIXES)}")
    return suffix


def _q(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _left(text: str) -> str:
    """Escape a multi-line label for DOT, each line left-justified."""
    return _q(text).replace("\n", "\\l")[:-1] + '\\l"'


def to_dot(pic: Picture, *, with_legend: bool = True) -> str:
    """The picture as DOT text: states as boxes, edges labelled with actions, the legend in the title.

    ``with_legend=False`` leaves the title and legend out (the HTML page shows them beside the graph).
    """
    rows = "".join(
        f'<tr><td bgcolor="{c}" width="14"> </td><td align="left">{_html_escape(t)}</td></tr>' for c, t in pic.legend)
    title_lines = "".join(f'<tr><td colspan="2" align="left"><b>{_html_escape(t)}</b></td></tr>'
                          for t in pic.title.splitlines()[:1])
    title_lines += "".join(f'<tr><td colspan="2" align="left">{_html_escape(t)}</td></tr>'
                           for t in pic.title.splitlines()[1:])
    table = f'<table border="0" cellborder="0" cellspacing="1" cellpadding="1">{title_lines}{rows}</table>'
    out = [
        "digraph flightcheck {",
        f"  graph [rankdir={pic.rankdir}, fontname=\"DejaVu Sans\", fontsize=12, nodesep=0.25, ranksep=0.35,"
        f" labelloc=t, labeljust=l, newrank=true{f', label=<{table}>' if with_legend else ''}];",
        '  node [shape=box, style="rounded,filled", fontname="DejaVu Sans Mono", fontsize=9, margin="0.08,0.04"];',
        '  edge [fontname="DejaVu Sans", fontsize=8, arrowsize=0.6];',
    ]
    for n in pic.nodes:
        attrs = [f"id={_q(n.id)}", f"label={_left(n.label)}", f"fillcolor={_q(n.fill)}", f"color={_q(n.border)}",
                 f"penwidth={n.penwidth}"]
        if n.peripheries != 1:
            attrs.append(f"peripheries={n.peripheries}")
        if n.tags:
            attrs.append(f"class={_q(' '.join(n.tags))}")
        out.append(f"  {n.id} [{', '.join(attrs)}];")
    for e in pic.edges:
        lbl = ", ".join(e.actions)
        attrs = [f"id={_q(e.id)}", f"label={_q(lbl)}", f"color={_q(e.color)}", f"fontcolor={_q(e.fontcolor or e.color)}",
                 f"style={_q(e.style)}", f"penwidth={e.penwidth}", f"tooltip={_q(lbl)}"]
        if "path" in e.tags:
            attrs.append("weight=4")
        if e.tags:
            attrs.append(f"class={_q(' '.join(t for t in e.tags if t))}")
        out.append(f"  {e.src} -> {e.dst} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def run_dot(dot_text: str, fmt: str, timeout: float = 600.0) -> bytes:
    """Lay out DOT text with Graphviz's ``dot`` and return the ``svg`` or ``png`` bytes.

    Layout time grows quickly with the edges: about a second for burst2, most of a minute for the 714
    states and 3,500 edges of burst3-abort (see BENCHMARKS.md).
    """
    exe = shutil.which("dot")
    if exe is None:
        raise RenderError("Graphviz's `dot` is not installed (Debian: apt-get install graphviz; "
                          "or scripts/setup.sh); .dot output needs nothing")
    args = [exe, f"-T{fmt}"] + (["-Gdpi=110"] if fmt == "png" else [])
    try:
        proc = subprocess.run(args, input=dot_text.encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RenderError(f"dot -T{fmt} took more than {timeout:.0f} s to lay out the graph; "
                          "render a smaller scenario, or write .dot and lay it out yourself") from None
    if proc.returncode != 0:
        raise RenderError(f"dot -T{fmt} failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[:500]}")
    return proc.stdout


def write_picture(pic: Picture, path: Path) -> Path:
    """Write ``pic`` to ``path`` in the format its suffix names; returns the path."""
    path = Path(path)
    suffix = _check_suffix(path)
    dot_text = to_dot(pic)
    if suffix == ".dot":
        data = dot_text.encode()
    elif suffix in (".svg", ".png"):
        data = run_dot(dot_text, suffix[1:])
    else:
        from flightcheck.checks.explore.render_html import html_page
        data = html_page(pic, run_dot(to_dot(pic, with_legend=False), "svg").decode()).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # nothing half-written is left under the requested name
    return path


# ---------------------------------------------------------------------------------------------- API
def render_result(result: ExploreResult, path: Path, *, highlight: Counterexample | None = None,
                  edge_colors: dict[tuple[Any, Any], str] | None = None,
                  node_colors: dict[Any, str] | None = None, title: str = "", force: bool = False,
                  violating: tuple[str, Any] | None = None) -> Path:
    """Draw an explored graph to ``path`` (``.dot``, ``.svg``, ``.png`` or ``.html``) and return the path.

    Raises :class:`RenderError` for another suffix, for more than :data:`MAX_NODES` states unless
    ``force``, or when Graphviz is missing for SVG/PNG/HTML.

    For example::

        >>> import tempfile
        >>> from flightcheck.spec.scenario import SCENARIOS
        >>> from flightcheck.spec.model import FlightSpec
        >>> from flightcheck.checks.explore.explorer import explore
        >>> out = Path(tempfile.mkdtemp()) / "burst2.dot"
        >>> text = render_result(explore(FlightSpec(SCENARIOS["burst2"])), out).read_text()
        >>> sum(line.startswith("  s") and " -> " not in line for line in text.splitlines())  # one per state
        52
    """
    path = Path(path)
    _check_suffix(path)
    _check_size(result.graph.number_of_nodes(), force)
    pic = build_picture(result, highlight=highlight, edge_colors=edge_colors, node_colors=node_colors, title=title,
                        violating=violating)
    return write_picture(pic, path)


def render_diff(result_a: ExploreResult, result_b: ExploreResult, path: Path,
                names: tuple[str, ...] = RELEASES, *, force: bool = False) -> dict[str, int]:
    """Draw the union of two policies' graphs of one scenario to ``path``; returns :func:`diff_counts`."""
    path = Path(path)
    _check_suffix(path)
    _check_size(len(set(result_a.graph) | set(result_b.graph)), force)
    pic, counts = build_diff_picture(result_a, result_b, names)
    write_picture(pic, path)
    return counts
