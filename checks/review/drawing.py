"""One scenario's graph at two commits drawn as one: added states and edges in one colour, removed in another.

The two graphs come from two summaries (:mod:`~flightcheck.checks.review.summary`), each made by its own
tree's code, so their states are not comparable tuples; they are matched, as the comparison
(:mod:`~flightcheck.checks.review.graphdiff`) matches them, by their keys (a hash of the spec's own
``describe()``). A state or edge only the candidate has is *added* (green), one only the baseline has
is *removed* (red), one in both is grey. :func:`build_union` returns a
:class:`~flightcheck.checks.explore.picture.Picture`, which :func:`~flightcheck.checks.explore.render.write_picture`
writes as DOT, SVG, PNG or HTML. As in every picture of the graph, ``notify`` self-loops (a rejected
termination notice leaves the state as it was) are not drawn; the counts in the legend include them.

For example::

    >>> base = {"key": "burst2 x", "nodes": ["a", "b"], "labels": ["start", "one"], "arcs": [[0, 1, "go"]]}
    >>> cand = {"key": "burst2 x", "nodes": ["a", "c"], "labels": ["start", "two"], "arcs": [[0, 1, "on"]]}
    >>> pic = build_union(base, cand, ("HEAD~1", "working tree"))
    >>> [(n.label.splitlines()[-1], n.tags[0]) for n in pic.nodes]
    [('start', 'both'), ('two', 'added'), ('one', 'removed')]
    >>> [(e.actions, e.tags) for e in pic.edges]
    [(['on'], ['added']), (['go'], ['removed'])]
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.explore.picture import PEdge, Picture, PNode

COLORS = {"added": "#2f855a", "removed": "#c53030", "both": "#777777"}
FILLS = {"added": "#d8f3e3", "removed": "#fbd9d9", "both": "#ffffff"}


def _label(text: str) -> str:
    """A summary's one-line label, a part a line (``r1 waiting; flights f1=open`` -> two lines)."""
    return "\n".join(text.split("; "))


def _edges(item: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """Each edge by its states' keys -> its actions (in the summary's order)."""
    nodes, out = item["nodes"], {}
    for u, v, action in item["arcs"]:
        out.setdefault((nodes[u], nodes[v]), []).append(action)
    return out


def _side(in_base: bool, in_cand: bool) -> str:
    return "both" if in_base and in_cand else "added" if in_cand else "removed"


def build_union(base: dict[str, Any], cand: dict[str, Any], names: tuple[str, str]) -> Picture:
    """The union of the baseline's graph ``base`` and the candidate's ``cand`` (two summary items of one
    scenario and policy), coloured by where each state and edge occurs; ``names`` name the two sides."""
    labels = {k: lab for k, lab in zip(base["nodes"], base["labels"])}
    labels.update(zip(cand["nodes"], cand["labels"]))  # the candidate's words, where both have the state
    in_base, in_cand = set(base["nodes"]), set(cand["nodes"])
    order = list(dict.fromkeys(cand["nodes"] + base["nodes"]))  # the initial state is each list's first
    ids = {key: f"s{k}" for k, key in enumerate(order)}
    nodes = []
    for key in order:
        side = _side(key in in_base, key in in_cand)
        node = PNode(ids[key], key, _label(labels[key]), fill=FILLS[side], border=COLORS[side],
                     penwidth=2.0 if side != "both" else 1.0, tags=[side], info={"key": key})
        if key in (base["nodes"][:1] + cand["nodes"][:1]):
            node.tags.append("initial")
            node.label, node.penwidth = "START\n" + node.label, 2.5
        nodes.append(node)
    eb, ec = _edges(base), _edges(cand)
    edges = []
    for k, pair in enumerate(dict.fromkeys(list(ec) + list(eb))):
        actions = list(dict.fromkeys(ec.get(pair, []) + eb.get(pair, [])))
        if pair[0] == pair[1] and all(a.startswith("notify") for a in actions):
            continue
        side = _side(pair in eb, pair in ec)
        style = "dashed" if actions[0].startswith(("arrive", "abort")) else "solid"
        edges.append(PEdge(f"e{k}", ids[pair[0]], ids[pair[1]], actions, COLORS[side], style,
                           2.2 if side != "both" else 1.0, [side]))
    added_s, removed_s = len(in_cand - in_base), len(in_base - in_cand)
    added_e, removed_e = len(set(ec) - set(eb)), len(set(eb) - set(ec))
    legend = [
        (COLORS["added"], f"added by {names[1]}: {added_s} states, {added_e} edges"),
        (COLORS["removed"], f"removed since {names[0]}: {removed_s} states, {removed_e} edges"),
        (COLORS["both"], f"in both: {len(in_base & in_cand)} states, {len(set(eb) & set(ec))} edges"),
        ("#ffffff", "START: initial state; dashed edges: arrive/abort; notify self-loops not drawn"),
    ]
    title = f"{cand['key']}: {names[0]} -> {names[1]} (green added, red removed)"
    return Picture(title=title, nodes=nodes, edges=edges, legend=legend)


def union_size(base: dict[str, Any], cand: dict[str, Any]) -> int:
    """How many states the picture of both graphs would have (compare with the pictures' ``MAX_NODES``)."""
    return len(set(base["nodes"]) | set(cand["nodes"]))
