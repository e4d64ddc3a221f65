"""The scenario and variant lists of the hand-written docs are generated from the registries and never stale."""

import dataclasses

import pytest

from flightcheck.checks.report import doc_blocks
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS
from flightcheck.spec.variants import VARIANTS

BLOCK = "<!-- generated: {0} (flightcheck docs) -->\n{1}<!-- end generated: {0} -->\n"


def test_the_committed_docs_lists_are_what_the_registries_give_now():
    assert doc_blocks.stale_blocks() == [], "a generated list is stale: run `flightcheck docs`"
    names = {m[1] for p in doc_blocks.documents() for m in doc_blocks._BLOCK.findall(p.read_text())}
    assert names == set(doc_blocks.BLOCKS)  # every list is used somewhere


def test_every_scenario_and_variant_has_a_line():
    scenarios, variants = doc_blocks.scenario_list(), doc_blocks.variant_list()
    for name in [*SCENARIOS, *SCALE_SCENARIOS]:
        assert f"`{name}`: " in scenarios, name
    assert f": {len(SCENARIOS)}, numbered" in scenarios and f"{len(SCENARIOS) + len(SCALE_SCENARIOS)} in all" in scenarios
    for v in VARIANTS.values():
        assert f"- `{v.name}`: " in variants, v.name
        assert v.expected_violation is None or f"violates `{v.expected_violation}` in " in variants


def test_a_new_scenario_makes_the_docs_stale(monkeypatch, tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n" + BLOCK.format("scenarios", "") + "outro\n")
    assert doc_blocks.stale_blocks([doc]) == [str(doc)]
    assert doc_blocks.write_blocks([doc]) == [doc] and doc_blocks.stale_blocks([doc]) == []
    extra = dataclasses.replace(SCENARIOS["burst2"], name="burst2-new", story="A scenario the docs lack.")
    monkeypatch.setitem(SCENARIOS, "burst2-new", extra)
    assert doc_blocks.stale_blocks([doc]) == [str(doc)]
    assert "`burst2-new`: A scenario the docs lack." in doc_blocks.fill(doc.read_text())
    assert doc.read_text().startswith("intro\n") and doc.read_text().endswith("outro\n")


def test_an_unknown_block_is_an_error():
    with pytest.raises(ValueError, match="unknown generated block 'nope'"):
        doc_blocks.fill(BLOCK.format("nope", ""))


def test_only_burst4_abort_has_the_most_requests():
    # its story says so (the docs once called it the largest scenario, which doc3-expire is by states)
    most = max(len(s.requests) for s in SCENARIOS.values())
    assert [n for n, s in SCENARIOS.items() if len(s.requests) == most] == ["burst4-abort"]
    assert "most requests" in SCENARIOS["burst4-abort"].story
