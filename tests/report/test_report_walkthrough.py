"""docs/walkthrough.md is generated from the spec (`flightcheck docs`): the committed copy must be what the
spec gives now, and render on a code-hosting site as it is (relative links to pictures beside it)."""

import re
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.cli.cmd_docs import DEFAULT_OUT
from flightcheck.checks.report.markdown import stale_files, walkthrough_files, write_walkthrough
from flightcheck.spec.variants import VARIANTS


@pytest.fixture(scope="module")
def files():
    return walkthrough_files(DEFAULT_OUT)  # generated once from the spec of this commit


def test_the_committed_walkthrough_is_not_stale(files):
    stale = stale_files(files, DEFAULT_OUT)
    assert not stale, f"docs/walkthrough is stale; run `flightcheck docs` and commit: {stale}"


def test_its_links_are_relative_and_every_picture_is_an_svg_beside_it(files):
    text = files[DEFAULT_OUT]
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links and all(link.startswith("walkthrough/") and link.endswith(".svg") for link in links)
    pictures = {p.name for p in files if p != DEFAULT_OUT}
    assert {link.split("/", 1)[1] for link in links} == pictures
    for path, svg in files.items():
        if path != DEFAULT_OUT:
            assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"
    # every bug of the design history is told as its counterexample
    for name, v in VARIANTS.items():
        if v.expected_violation is not None:
            assert f"walkthrough/bug-{name}.svg" in links and f"`flightcheck explore --variant {name}`" in text


def test_a_changed_or_extra_picture_is_stale_and_regeneration_removes_it(files, tmp_path):
    md = tmp_path / "walk.md"
    moved = {md.with_suffix("") / p.name if p != DEFAULT_OUT else md: t.replace("walkthrough/", "walk/")
             if p == DEFAULT_OUT else t for p, t in files.items()}
    write_walkthrough(moved, md)
    assert stale_files(moved, md) == []
    first = sorted(p for p in moved if p != md)[0]
    first.write_text(first.read_text() + "<!-- edited -->")
    (md.with_suffix("") / "old.svg").write_text("<svg/>")
    assert stale_files(moved, md) == [str(first), str(md.with_suffix("") / "old.svg")]
    write_walkthrough(moved, md)
    assert stale_files(moved, md) == [] and not (md.with_suffix("") / "old.svg").exists()


def test_docs_rejects_an_out_that_is_not_markdown(tmp_path):
    r = CliRunner().invoke(app, ["docs", "--out", str(tmp_path / "walk.txt")])
    assert r.exit_code == 2 and "--out must be a .md file" in r.output
