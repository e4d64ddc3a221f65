"""Spec coverage: the engine's runs land on the explored graph; the directed replay reaches every edge
of burst2; the figure and the coloured graph are written."""

from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.conform.coverage import cover, cover_directed, plot_coverage, render_coverage
from flightcheck.spec.scenario import SCENARIOS


def test_engine_runs_land_on_the_explored_graph(tmp_path):
    cov = cover(SCENARIOS["burst2"], runs=15, seed=3)
    assert cov.failure is None
    assert cov.num_states == 52 and cov.num_edges == 105
    # Every visited state and edge is one of the explorer's (the abstraction lands on its nodes).
    assert cov.states <= set(cov.explored.graph.nodes)
    assert cov.edges <= set(cov.explored.graph.edges)
    assert 0.2 < cov.edge_fraction < 1
    assert [h[0] for h in cov.history] == list(range(1, 16))
    assert cov.history[-1][2] == cov.edge_fraction
    png = plot_coverage([cov], tmp_path / "cov.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dot = render_coverage(cov, tmp_path / "burst2.dot").read_text()
    assert dot.count("forestgreen") >= len(cov.edges)


def test_directed_replay_reaches_every_edge_of_burst2():
    # Driven through its guard/command pairs the engine takes every edge: since a terminated leader's
    # flight is settled before anything else, the spec no longer has edges the engine's calls cannot make.
    cov = cover_directed(SCENARIOS["burst2"])
    assert cov.failure is None
    assert (len(cov.edges), cov.num_edges) == (105, 105)


def test_cli_coverage(tmp_path):
    r = CliRunner().invoke(app, ["coverage", "--scenario", "notail", "--runs", "5", "--json"])
    assert r.exit_code == 0, r.output
    assert '"scenario": "notail"' in r.output
    assert CliRunner().invoke(app, ["coverage", "--scenario", "nope"]).exit_code == 2
