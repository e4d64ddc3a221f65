"""What a state-graph picture shows, apart from how it is written: :class:`Picture` and its builders.

:func:`build_picture` turns one :class:`~flightcheck.checks.explore.result.ExploreResult` into nodes with
readable labels and colours and edges labelled with their actions; :func:`build_diff_picture` overlays
two policies' graphs of one scenario. :mod:`flightcheck.checks.explore.render` writes a picture as DOT,
SVG, PNG or a standalone HTML page.

What the picture shows: every state is a box listing the requests that have arrived (phase, role,
progress), the open flights and index, the released set and the cached pages with their references
(see :func:`flightcheck.spec.describe.label`). The initial state is blue, quiescent states are
green with a double border, states where a property's ghost is set are red. Edges carry their actions,
coloured by action; ``notify`` self-loops (a rejected termination leaves the state unchanged, so nearly
every state has them) are left out and counted in the legend instead. By default the first violation's
shortest counterexample is drawn as a thick red path.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.checks.explore.explorer import explore
    >>> pic = build_picture(explore(FlightSpec(SCENARIOS["burst2"])))
    >>> len(pic.nodes), pic.nodes[0].id, "initial" in pic.nodes[0].tags
    (52, 's0', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.explore.result import ExploreResult
from flightcheck.spec.actions import FOLLOWER_RELEASES
from flightcheck.spec.scenario import RELEASES

SUFFIXES = (".dot", ".svg", ".png", ".html")
MAX_NODES = 1500

# Edge colours by action, one entry per spec action (tests/test_registries.py): the environment's actions
# (arrivals, cancels, notices, waits running out, failures) dashed or dotted, the engine's solid, release bold.
ACTION_STYLE: dict[str, tuple[str, str]] = {
    "arrive": ("#1f6fb4", "dashed"),
    "admit": ("#138d90", "solid"),
    "prefill": ("#555555", "solid"),
    "publish": ("#2a9d2a", "solid"),
    "release": ("#7b3fb5", "bold"),
    "promote": ("#7b3fb5", "dashed"),
    "decode": ("#999999", "solid"),
    "finish": ("#000000", "solid"),
    "evict": ("#c2549d", "solid"),
    "abort": ("#b5651d", "dashed"),
    "notify": ("#e08a00", "dotted"),
    "expire": ("#b5651d", "dotted"),
    "fail": ("#c2002f", "dashed"),
}
HIGHLIGHT = "#e00000"
STORY = "#f2a900"  # the witness path drawn when nothing is violated
FILL_INITIAL = "#cfe2ff"
FILL_QUIESCENT = "#ccefcc"
FILL_BAD = "#ffc9c9"
FILL_PLAIN = "#ffffff"
DIFF_COLORS = {"a": "#2b6cb0", "b": "#dd6b20", "both": "#666666"}
DIFF_FILLS = {"a": "#dbe8f7", "b": "#fde3cf", "both": "#ffffff"}


class RenderError(RuntimeError):
    """A picture could not be written (bad suffix, graph too large, Graphviz missing or failing)."""


@dataclass
class PNode:
    """One drawn state: its DOT/SVG id, label, colours, tags (``initial``, ``quiescent``...) and details."""

    id: str
    state: Hashable
    label: str
    fill: str = FILL_PLAIN
    border: str = "#444444"
    penwidth: float = 1.0
    peripheries: int = 1
    tags: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class PEdge:
    """One drawn edge (all actions between two states): ids, label, colour and style."""

    id: str
    src: str
    dst: str
    actions: list[str]
    color: str
    style: str = "solid"
    penwidth: float = 1.0
    tags: list[str] = field(default_factory=list)
    fontcolor: str = ""  # defaults to ``color``


@dataclass
class Picture:
    """Everything needed to draw a graph, independent of the output format."""

    title: str
    nodes: list[PNode]
    edges: list[PEdge]
    legend: list[tuple[str, str]]  # (colour, text) rows
    notes: list[str] = field(default_factory=list)  # e.g. the counterexample, printed in the HTML page
    rankdir: str = "TB"


# ---------------------------------------------------------------------------------------------- helpers
def _canonicalizer(result: ExploreResult) -> Callable[[Any], Any]:
    """Maps a concrete state onto the graph's node for it (its symmetry representative if reduced)."""
    graph, spec = result.graph, result.spec
    sym = spec.symmetry() if result.stats.symmetry else None

    def canon(state: Any) -> Any:
        if state in graph or sym is None:
            return state
        try:
            return sym.canonical(state)[0]
        except (IndexError, TypeError):  # not a state of this layout; reported as not in the graph
            return state
    return canon


def _path_edges(result: ExploreResult, cx: Counterexample) -> tuple[list[Any], list[tuple[Any, Any]]]:
    """The graph nodes and edges a (concrete) counterexample walks through, loop included."""
    canon = _canonicalizer(result)
    states = [result.initial] + [canon(st.state) for st in cx.steps + cx.loop]
    missing = [s for s in states if s not in result.graph]
    if missing:
        raise RenderError(f"the highlighted path leaves the explored graph at state {missing[0]}")
    return states, list(zip(states, states[1:]))


def _state_text(spec: Any, state: Any) -> tuple[str, dict[str, Any]]:
    return spec.label(state), spec.describe(state)


def _is_notify_loop(u: Any, v: Any, actions: list[str]) -> bool:
    return u == v and all(a.startswith("notify(") for a in actions)


def _story(result: ExploreResult) -> tuple[str, Counterexample] | None:
    """With nothing violated, the witness that tells the most: every request finishing, if found."""
    found = [p for p in result.properties if p.kind == "sometimes" and p.witness is not None]
    found.sort(key=lambda p: (p.name != "sometimes_all_finished", -len(p.witness)))
    return (found[0].name, found[0].witness) if found else None


def _quiescent(result: ExploreResult) -> set[Any]:
    return set(result.quiescent_states())


def _has_ghost(info: dict[str, Any]) -> bool:
    return bool(info.get("ghosts"))


def _describe_policy(result: ExploreResult) -> str:
    return result.spec.title()


# ---------------------------------------------------------------------------------------------- building
def build_picture(result: ExploreResult, *, highlight: Counterexample | None = None,
                  edge_colors: dict[tuple[Any, Any], str] | None = None,
                  node_colors: dict[Any, str] | None = None, title: str = "",
                  use_default_highlight: bool = True, violating: tuple[str, Any] | None = None,
                  color_legend: list[tuple[str, str]] | None = None) -> Picture:
    """The picture of one explored graph (see the module's docstring for what it shows).

    ``edge_colors`` and ``node_colors`` are keyed by states (concrete states are mapped to their
    symmetry representative) and override the default colours, e.g. to show which spec edges an engine
    run visited. ``highlight`` defaults to the first violation's counterexample. ``violating`` is a
    property's name and the states where it is violated (see
    :func:`~flightcheck.checks.explore.violating.violating_states`): they are drawn red and counted.
    ``color_legend`` says what the caller's colours mean (legend rows instead of the counts).
    """
    spec, graph = result.spec, result.graph
    canon = _canonicalizer(result)
    story = None
    if highlight is None and use_default_highlight:
        if result.violations:
            highlight = result.violations[0].counterexample
        elif not edge_colors and not node_colors:
            story = _story(result)
            highlight = story[1] if story else None
    hl_color = STORY if story else HIGHLIGHT
    quiescent = _quiescent(result)
    order = [result.initial] + [s for s in graph if s != result.initial]
    ids = {s: f"s{k}" for k, s in enumerate(order)}
    hl_nodes: set[Any] = set()
    hl_edges: set[tuple[Any, Any]] = set()
    if highlight is not None:
        states, pairs = _path_edges(result, highlight)
        hl_nodes, hl_edges = set(states), set(pairs)
    # The state a safety counterexample or a deadlock ends in (a lasso has no single bad state).
    final = canon(highlight.steps[-1].state) if highlight is not None and highlight.steps and not highlight.loop else None
    ncol = {canon(s): c for s, c in (node_colors or {}).items()}
    ecol = {(canon(u), canon(v)): c for (u, v), c in (edge_colors or {}).items()}
    unknown = [k for k in list(ncol) if k not in graph] + [k for k in list(ecol) if k[0] not in graph or k[1] not in graph]
    if unknown:
        raise RenderError(f"{len(unknown)} coloured states/edges are not in the explored graph, e.g. {unknown[0]}")

    bad_states = {canon(s) for s in violating[1]} if violating else set()
    nodes: list[PNode] = []
    notify_loops = 0
    for s in order:
        text, info = _state_text(spec, s)
        node = PNode(ids[s], s, text, info={"state": info})
        if s == result.initial:
            node.tags.append("initial")
            node.fill, node.penwidth = FILL_INITIAL, 2.0
            node.label = "START\n" + text
        if s in quiescent:
            node.tags.append("quiescent")
            node.peripheries = 2
            node.fill = FILL_QUIESCENT if s != result.initial else node.fill
            node.label += "\n(quiescent)"
        if isinstance(info, dict) and _has_ghost(info):
            node.tags.append("bad")
            node.fill = FILL_BAD
        if s in hl_nodes:
            node.tags.append("path")
            node.border, node.penwidth = hl_color, 3.0
        if s == final and story is None:
            node.tags.append("violation")
            node.fill = FILL_BAD
        if s in bad_states:
            node.tags.append("violation")
            node.fill = FILL_BAD
        if s in ncol:
            node.fill = ncol[s]
            node.tags.append("colored")
        loops = graph[s][s]["actions"] if graph.has_edge(s, s) else []
        if loops and _is_notify_loop(s, s, loops):
            node.info["notify_loops"] = loops
            notify_loops += 1
        nodes.append(node)

    edges: list[PEdge] = []
    for k, (u, v, data) in enumerate(graph.edges(data=True)):
        acts = list(data.get("actions", []))
        if _is_notify_loop(u, v, acts):
            continue
        kind = acts[0].split("(")[0] if acts else ""
        color, style = ACTION_STYLE.get(kind, ("#444444", "solid"))
        e = PEdge(f"e{k}", ids[u], ids[v], acts, color, style, 1.2 if kind in FOLLOWER_RELEASES else 1.0, [kind], color)
        if (u, v) in hl_edges:
            e.color, e.penwidth, e.tags = hl_color, 4.0, e.tags + ["path"]
            if e.style == "dotted":
                e.style = "solid"
        if (u, v) in ecol:
            e.color, e.penwidth, e.tags = ecol[(u, v)], max(e.penwidth, 2.5), e.tags + ["colored"]
        edges.append(e)

    legend = [(FILL_INITIAL, "START: the initial state"),
              (FILL_QUIESCENT, "quiescent: nothing live, nothing pending (double border)")]
    if violating:
        legend.append((FILL_BAD, f"{violating[0]} is violated here ({len(bad_states)} states)"))
    elif any("bad" in n.tags or "violation" in n.tags for n in nodes):
        legend.append((FILL_BAD, "a property is violated here"))
    used = {e.tags[0] for e in edges if e.tags and e.tags[0]}
    legend += [(ACTION_STYLE[a][0], f"{a} ({ACTION_STYLE[a][1]})") for a in ACTION_STYLE if a in used]
    if notify_loops:
        legend.append((ACTION_STYLE["notify"][0],
                       f"not drawn: notify(...) self-loops on {notify_loops} states (rejected termination, state unchanged)"))
    head = title or _describe_policy(result)
    st = result.stats
    notes: list[str] = []
    if highlight is not None:
        if story:
            what = f"witness of {story[0]}"
        elif any(p.counterexample is highlight for p in result.violations):
            what = "counterexample to " + next(p.name for p in result.violations if p.counterexample is highlight)
        else:
            what = "highlighted path"
        legend.append((hl_color, f"thick {'yellow' if story else 'red'}: {what} ({len(highlight)} steps"
                                 f"{', then a loop' if highlight.loop else ''})"))
        renamed = " (request names as replayed; each drawn state is its symmetry representative)" if st.symmetry else ""
        notes = [f"{what}{renamed}:"] + highlight.format(spec).splitlines()
    if color_legend:
        legend += color_legend
    else:
        if ecol:
            legend.append(("#888888", f"{len(ecol)} edges coloured by the caller"))
        if ncol:
            legend.append(("#888888", f"{len(ncol)} states coloured by the caller"))
    legend.append(("#ffffff", "rN L/F: leader/follower; prefill done/units; decode steps/max; pubN: pages published; hitN: pages recovered; pages X ref: cached page, references"))
    sub = f"{st.states} states, {st.edges} edges, depth {st.depth}, symmetry {'on (requests renamed)' if st.symmetry else 'off'}"
    verdict = "every property holds" if result.ok else "violated: " + ", ".join(p.name for p in result.violations)
    return Picture(title=f"{head}\n{sub}; {verdict}", nodes=nodes, edges=edges, legend=legend, notes=notes)


def build_diff_picture(result_a: ExploreResult, result_b: ExploreResult,
                       names: tuple[str, ...] = RELEASES) -> tuple[Picture, dict[str, int]]:
    """The union of two graphs of one scenario, coloured by where each state and edge occurs.

    Returns the picture and the counts (``states_only_a``, ``states_only_b``, ``states_common`` and
    the same for ``edges_*``; an edge is an ordered pair of states, notify self-loops included).
    """
    ga, gb = result_a.graph, result_b.graph
    sa, sb = result_a.spec, result_b.spec
    if sa.state_names() != sb.state_names():
        raise RenderError("the two results have different state layouts; diff two policies of one scenario")
    if result_a.initial != result_b.initial:
        raise RenderError("the two results start from different initial states; diff two policies of one scenario")
    counts = diff_counts(result_a, result_b)
    qa, qb = _quiescent(result_a), _quiescent(result_b)
    order = [result_a.initial] + [s for s in ga if s != result_a.initial] + [s for s in gb if s not in ga]
    ids = {s: f"s{k}" for k, s in enumerate(order)}
    nodes = []
    for s in order:
        side = "both" if (s in ga and s in gb) else ("a" if s in ga else "b")
        text, info = _state_text(sa, s)
        node = PNode(ids[s], s, text, fill=DIFF_FILLS[side], border=DIFF_COLORS[side],
                     penwidth=2.0 if side != "both" else 1.0, tags=[side], info={"state": info})
        if s == result_a.initial:
            node.tags.append("initial")
            node.label, node.penwidth = "START\n" + text, 2.5
        if s in qa or s in qb:
            node.tags.append("quiescent")
            node.peripheries = 2
            node.label += "\n(quiescent)"
        node.info["in"] = [n for n, g in zip(names, (ga, gb)) if s in g]
        nodes.append(node)
    edges = []
    pairs = list(dict.fromkeys(list(ga.edges()) + list(gb.edges())))
    for k, (u, v) in enumerate(pairs):
        acts_a = ga[u][v]["actions"] if ga.has_edge(u, v) else []
        acts_b = gb[u][v]["actions"] if gb.has_edge(u, v) else []
        acts = list(dict.fromkeys(acts_a + acts_b))
        if _is_notify_loop(u, v, acts):
            continue
        side = "both" if (acts_a and acts_b) else ("a" if acts_a else "b")
        style = "dashed" if acts and acts[0].startswith(("arrive", "abort")) else "solid"
        edges.append(PEdge(f"e{k}", ids[u], ids[v], acts, DIFF_COLORS[side], style,
                           2.2 if side != "both" else 1.0, [side]))
    legend = [
        (DIFF_COLORS["a"], f"only under {names[0]}: {counts['states_only_a']} states, {counts['edges_only_a']} edges"),
        (DIFF_COLORS["b"], f"only under {names[1]}: {counts['states_only_b']} states, {counts['edges_only_b']} edges"),
        (DIFF_COLORS["both"], f"in both: {counts['states_common']} states, {counts['edges_common']} edges"),
        ("#ffffff", "START: initial state; double border: quiescent; dashed edges: arrive/abort"),
    ]
    title = f"{sa.title().split(' · ')[0]}: {names[0]} (blue) vs {names[1]} (orange)"
    return Picture(title=title, nodes=nodes, edges=edges, legend=legend), counts


def diff_counts(result_a: ExploreResult, result_b: ExploreResult) -> dict[str, int]:
    """States and edges (ordered state pairs) only in A, only in B, and in both.

    For example::

        >>> from flightcheck.spec.scenario import SCENARIOS
        >>> from flightcheck.spec.model import FlightSpec
        >>> from flightcheck.checks.explore.explorer import explore
        >>> scn = SCENARIOS["burst2"]
        >>> a = explore(FlightSpec(scn.with_policy(release="after-prefill")))
        >>> diff_counts(a, a)["states_only_a"]
        0
    """
    na, nb = set(result_a.graph.nodes), set(result_b.graph.nodes)
    ea, eb = set(result_a.graph.edges), set(result_b.graph.edges)
    return {"states_only_a": len(na - nb), "states_only_b": len(nb - na), "states_common": len(na & nb),
            "edges_only_a": len(ea - eb), "edges_only_b": len(eb - ea), "edges_common": len(ea & eb)}


# ---------------------------------------------------------------------------------------------- DOT
