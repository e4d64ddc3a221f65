"""Rendering of explored graphs: DOT made here, SVG/PNG by Graphviz, the HTML page in headless Chromium, the diff."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.explore.counterexample import Counterexample
from flightcheck.checks.explore.checkable import GenericModel
from flightcheck.spec.describe import describe, label
from flightcheck.checks.explore.explorer import explore
from flightcheck.checks.explore.picture import (
    ACTION_STYLE, FILL_BAD, FILL_INITIAL, HIGHLIGHT, MAX_NODES, STORY, RenderError, build_picture, diff_counts,
)
from flightcheck.checks.explore.render import render_diff, render_result, to_dot
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS

NODE_RE = re.compile(r"^  (s\d+) \[(.*)\];$", re.M)
EDGE_RE = re.compile(r"^  (s\d+) -> (s\d+) \[(.*)\];$", re.M)
SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def burst2():
    return explore(FlightSpec(SCENARIOS["burst2"]))


@pytest.fixture(scope="module")
def burst2_on_completion():
    return explore(FlightSpec(SCENARIOS["burst2"].with_policy(release="on-completion")))


@pytest.fixture(scope="module")
def forget():
    v = VARIANTS["forget-at-release"]
    return explore(v.build(SCENARIOS[v.demo].with_policy(**dict(v.demo_policy))))


def nodes_of(dot: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in NODE_RE.finditer(dot)}


def edges_of(dot: str) -> list[tuple[str, str, str]]:
    return [m.groups() for m in EDGE_RE.finditer(dot)]


def test_dot_has_one_node_per_state_with_initial_and_quiescent_marked(burst2, tmp_path):
    dot = render_result(burst2, tmp_path / "g.dot").read_text()
    nodes = nodes_of(dot)
    assert len(nodes) == burst2.stats.states == 52
    assert f'fillcolor="{FILL_INITIAL}"' in nodes["s0"] and 'label="START\\l' in nodes["s0"]
    pic = build_picture(burst2)
    quiescent_ids = {n.id for n in pic.nodes if n.state in set(burst2.quiescent_states())}
    assert len(quiescent_ids) == 3
    assert {k for k, attrs in nodes.items() if "peripheries=2" in attrs} == quiescent_ids
    assert all("(quiescent)" in nodes[k] for k in quiescent_ids)
    # Every drawn edge carries its actions, and every graph edge is drawn (burst2 has no notify loops).
    assert len(edges_of(dot)) == burst2.graph.number_of_edges() == 105


def test_labels_name_phases_flights_released_and_pages():
    spec = FlightSpec(SCENARIOS["burst2"])
    cx = Counterexample.from_actions(spec, ["arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)",
                                            "prefill(0)", "publish(0)", "prefill(0)", "release(0)", "admit(1)"])
    assert label(spec, cx.final_state(spec)).splitlines() == [
        "r0 decode 0/1 pub2", "r1 prefill 2/3 pub2 hit2", "released r0,r1", "pages A0 ref2, A1 ref2"]
    assert label(spec, cx.steps[3].state).splitlines() == [
        "r0 L prefill 1/3 pub0", "r1 F blocked", "flight f0 open; index A->f0"]


def test_counterexample_path_is_highlighted_to_the_violating_state(forget, tmp_path):
    cx = forget.result("termination_validated").counterexample
    assert forget.violations[0].counterexample is cx and len(cx) == 9
    dot = render_result(forget, tmp_path / "f.dot").read_text()
    red = [(u, v) for u, v, attrs in edges_of(dot) if f'color="{HIGHLIGHT}"' in attrs]
    assert len(red) == 9
    # The red edges form one path from the start, and it ends in the red (violating) state.
    succ = dict(red)
    assert len(succ) == 9
    node, seen = "s0", ["s0"]
    while node in succ:
        node = succ[node]
        seen.append(node)
    assert len(seen) == 10
    nodes = nodes_of(dot)
    assert f'fillcolor="{FILL_BAD}"' in nodes[seen[-1]] and "termination misjudged" in nodes[seen[-1]]
    assert all(f'color="{HIGHLIGHT}"' in nodes[n] for n in seen)
    assert "counterexample to termination_validated (9 steps)" in dot


def test_correct_design_draws_the_all_finished_witness(burst2):
    dot = to_dot(build_picture(burst2))
    story = [e for e in edges_of(dot) if f'color="{STORY}"' in e[2]]
    assert len(story) == len(burst2.result("sometimes_all_finished").witness) == 13
    assert f'color="{HIGHLIGHT}"' not in dot


def test_notify_self_loops_are_counted_not_drawn(tmp_path):
    res = explore(FlightSpec(SCENARIOS["burst2-abort"]))
    loops = [s for s in res.graph if res.graph.has_edge(s, s)
             and all(a.startswith("notify(") for a in res.graph[s][s]["actions"])]
    assert len(loops) == 90  # every state rejects a never-submitted ID, but those where a release is due first
    dot = render_result(res, tmp_path / "a.dot").read_text()
    assert not [e for e in edges_of(dot) if e[0] == e[1]]
    assert f"notify(...) self-loops on {len(loops)} states" in dot
    assert len(edges_of(dot)) == res.graph.number_of_edges() - len(loops)


def test_caller_colours_edges_and_nodes_given_as_concrete_states(burst2, tmp_path):
    spec = burst2.spec
    # A concrete path in which r1 leads: symmetry draws it as its representative's edges.
    cx = Counterexample.from_actions(spec, ["arrive(1)", "arrive(0)", "admit(1)", "prefill(1)"])
    states = [spec.initial()] + [st.state for st in cx.steps]
    colors = {(u, v): "#00aa88" for u, v in zip(states, states[1:])}
    dot = render_result(burst2, tmp_path / "c.dot", edge_colors=colors, node_colors={states[-1]: "#ffee00"}).read_text()
    assert len([e for e in edges_of(dot) if 'color="#00aa88"' in e[2]]) == 4
    assert len([n for n in nodes_of(dot).values() if 'fillcolor="#ffee00"' in n]) == 1
    assert f'color="{STORY}"' not in dot  # no default story path over the caller's colours
    bogus = tuple(9 for _ in spec.initial())
    with pytest.raises(RenderError, match="not in the explored graph"):
        render_result(burst2, tmp_path / "bad.dot", node_colors={bogus: "#000000"})
    assert not (tmp_path / "bad.dot").exists()


def test_svg_and_png_from_dot_are_valid(burst2, tmp_path):
    svg = render_result(burst2, tmp_path / "g.svg")
    root = ET.parse(svg).getroot()
    groups = [g for g in root.iter(f"{SVG_NS}g") if "node" in g.get("class", "").split()]
    assert sorted(g.get("id") for g in groups) == sorted(f"s{k}" for k in range(52))
    edges = [g for g in root.iter(f"{SVG_NS}g") if "edge" in g.get("class", "").split()]
    assert len(edges) == 105
    png = render_result(burst2, tmp_path / "g.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000


def _chromium(url: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is needed for the HTML test (scripts/setup.sh installs it)"
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


def test_html_page_loads_in_headless_chromium_with_every_state(forget, tmp_path):
    page = render_result(forget, tmp_path / "f.html")
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org", "")  # nothing to fetch
    proc = _chromium(page.as_uri() + "#s3", tmp_path, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    # The script ran to its end and wired every drawn state.
    assert re.search(r'<body[^>]*data-ready="65"', dom), dom[:500]
    ids = set(re.findall(r'<g id="(s\d+)" class="node[ "]', dom))
    assert ids == {f"s{k}" for k in range(65)}
    data = json.loads(re.search(r'<script type="application/json" id="fc-data">(.*?)</script>', dom, re.S).group(1))
    pic = build_picture(forget)
    assert len(data["nodes"]) == 65
    for node in pic.nodes[:10]:
        assert data["nodes"][node.id]["info"]["state"] == json.loads(json.dumps(describe(forget.spec, node.state)))
    # The URL's #s3 pinned state s3: its panel shows its label and its actions.
    info = re.search(r'<div id="info">(.*?)</div>\s*<h2>legend', dom, re.S).group(1)
    assert "state s3" in info and "actions out" in info and "full state" in info
    shot = tmp_path / "shot.png"
    proc = _chromium(page.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1200,900")
    assert proc.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_diff_counts_of_burst2_release_points(burst2, burst2_on_completion, tmp_path):
    counts = render_diff(burst2, burst2_on_completion, tmp_path / "d.dot")
    # On completion is the after-prefill graph minus every state where a follower runs beside a live leader.
    assert counts == {"states_only_a": 22, "states_only_b": 0, "states_common": 30,
                      "edges_only_a": 64, "edges_only_b": 0, "edges_common": 41}
    assert diff_counts(burst2_on_completion, burst2)["states_only_b"] == 22
    same = diff_counts(burst2, burst2)
    assert (same["states_only_a"], same["states_only_b"], same["states_common"], same["edges_common"]) == (0, 0, 52, 105)
    nodes = nodes_of((tmp_path / "d.dot").read_text())
    assert len(nodes) == 52
    assert sum('class="a' in attrs for attrs in nodes.values()) == 22


def test_diff_command(tmp_path):
    runner = CliRunner()
    out = tmp_path / "diff.svg"
    res = runner.invoke(app, ["diff", "--scenario", "burst2", "--render", str(out), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert (got["states_only_a"], got["states_only_b"], got["states_common"]) == (22, 0, 30)
    assert got["a"]["name"] == "release=after-prefill" and got["b"]["states"] == 30
    root = ET.parse(out).getroot()
    assert len([g for g in root.iter(f"{SVG_NS}g") if "node" in g.get("class", "").split()]) == 52
    res = runner.invoke(app, ["diff", "--a", "publication=on-completion", "--b", "publication=incremental", "--json"])
    got = json.loads(res.stdout)
    assert (got["states_only_a"], got["states_only_b"], got["states_common"]) == (6, 6, 46)
    bad = runner.invoke(app, ["diff", "--a", "release=sometime"])
    assert bad.exit_code == 2 and "release must be one of" in bad.output
    bad = runner.invoke(app, ["diff", "--render", str(tmp_path / "x.jpg")])
    assert bad.exit_code == 2 and "--render must end in" in bad.output and not (tmp_path / "x.jpg").exists()


def test_explore_command_renders(tmp_path):
    out = tmp_path / "b.svg"
    res = CliRunner().invoke(app, ["explore", "--scenario", "burst2", "--render", str(out)])
    assert res.exit_code == 0, res.output
    root = ET.parse(out).getroot()
    assert len([g for g in root.iter(f"{SVG_NS}g") if "node" in g.get("class", "").split()]) == 52


def test_bad_suffix_is_refused_and_writes_nothing(burst2, tmp_path):
    with pytest.raises(RenderError, match=r"must end in \.dot, \.svg, \.png, \.html"):
        render_result(burst2, tmp_path / "g.jpeg")
    assert list(tmp_path.iterdir()) == []


def test_oversized_graph_is_refused_unless_forced(tmp_path):
    big = explore(FlightSpec(SCENARIOS["burst4-abort"]))
    assert big.stats.states == 3066 > MAX_NODES
    with pytest.raises(RenderError, match="3066 states.*smaller scenario"):
        render_result(big, tmp_path / "big.svg")
    assert not (tmp_path / "big.svg").exists()
    dot = render_result(big, tmp_path / "big.dot", force=True).read_text()
    assert len(nodes_of(dot)) == 3066


def test_missing_graphviz_is_a_clear_error(burst2, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere on it
    with pytest.raises(RenderError, match="Graphviz's `dot` is not installed"):
        render_result(burst2, tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()
    assert len(nodes_of(render_result(burst2, tmp_path / "g.dot").read_text())) == 52


def test_edge_colours_follow_the_action(burst2):
    dot = to_dot(build_picture(burst2, use_default_highlight=False))
    for u, v, attrs in edges_of(dot):
        first = re.search(r'label="([a-z]+)\(', attrs).group(1)
        assert f'color="{ACTION_STYLE[first][0]}"' in attrs


class LockToy(GenericModel):
    """Two lock takers in opposite order (the explorer's own deadlock toy): any checkable model draws."""

    num_requests = 1

    def initial(self):
        return (0, 0, 0, 0)

    def successors(self, s):
        from flightcheck.spec.model import Action
        a, b, x, y = s
        out = []
        if a == 0 and x == 0:
            out.append((Action("admit", 0), (1, b, 1, y)))
        if a == 1 and y == 0:
            out.append((Action("prefill", 0), (2, b, 0, 0)))
        if b == 0 and y == 0:
            out.append((Action("decode", 0), (a, 1, x, 2)))
        if b == 1 and x == 0:
            out.append((Action("finish", 0), (a, 2, 0, 0)))
        return out

    def is_live(self, s, i):
        return s[0] < 2 or s[1] < 2


def test_a_toy_model_renders_with_its_deadlock_path(tmp_path):
    from flightcheck.spec.properties import deadlock_free
    res = explore(LockToy(), properties=[deadlock_free("no_deadlock", "")])
    assert not res.ok
    dot = render_result(res, tmp_path / "toy.dot").read_text()
    nodes = nodes_of(dot)
    assert len(nodes) == res.stats.states
    assert 'label="START\\l(0, 0, 0, 0)\\l"' in nodes["s0"]
    red = [e for e in edges_of(dot) if f'color="{HIGHLIGHT}"' in e[2]]
    assert len(red) == 2 and red[0][0] == "s0"
    assert f'fillcolor="{FILL_BAD}"' in nodes[red[1][1]]  # the deadlocked state
