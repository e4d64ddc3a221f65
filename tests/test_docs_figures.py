"""Figures the hand-written docs quote are the ones the tool computes (or records in
checks/suite/expectations.json, which `flightcheck check` compares with what it computes)."""

import json
import re
from pathlib import Path

import pytest

from flightcheck.spec.scenario import SCENARIOS

ROOT = Path(__file__).resolve().parents[1]
EXPECT = json.loads((ROOT / "checks" / "suite" / "expectations.json").read_text(encoding="utf-8"))
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
TREES = {name for name, scn in SCENARIOS.items() if scn.prefixes}  # the prompt-tree scenarios


def doc(name: str) -> str:
    return re.sub(r"\s+", " ", (ROOT / name).read_text(encoding="utf-8"))


def between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i:text.index(end, i)]


def number(word: str) -> int:
    return WORDS[word] if word in WORDS else int(word.replace(",", ""))


def variant_lengths(paragraph: str) -> dict[str, tuple[str | None, int]]:
    """For each variant named in backticks, the first property name and the first number before the next variant."""
    names = "|".join(re.escape(v) for v in sorted(EXPECT["variants"], key=len, reverse=True))
    found = {}
    marks = list(re.finditer(rf"`({names})`", paragraph))
    for m, nxt in zip(marks, marks[1:] + [None]):
        segment = paragraph[m.end():nxt.start() if nxt else len(paragraph)]
        props = re.findall(r"`?\b([a-z]+(?:_[a-z]+)+)\b`?", segment)
        steps = re.search(r"\b(\d+)\b", segment)
        assert steps, (m.group(1), segment)
        found[m.group(1)] = (props[0] if props else None, int(steps.group(1)))
    return found


@pytest.mark.parametrize("name,start,end", [
    ("docs/spec.md", "Design history (", "Prompt-tree scenarios"),
    # docs/explore.md's variant list is generated from the registry (tests/test_doc_blocks.py)
])
def test_each_variants_property_and_shortest_path(name, start, end):
    found = variant_lengths(between(doc(name), start, end))
    assert len(found) >= 11, found
    for variant, (prop, steps) in found.items():
        want_prop, want_steps = EXPECT["variants"][variant]
        assert steps == want_steps, (name, variant, steps, want_steps)
        assert prop in (None, want_prop), (name, variant, prop, want_prop)


def test_single_counterexample_lengths_quoted_in_prose():
    assert int(re.search(r"BMC to its (\d+)-step path", doc("docs/proofs.md")).group(1)) \
        == EXPECT["variants"]["forget-at-release"][1]
    assert int(re.search(r"unpinned-release` prints the (\d+)-step counterexample", doc("docs/spec.md")).group(1)) \
        == EXPECT["variants"]["unpinned-release"][1]
    assert int(re.search(r"--variant stranded-followers` prints the reason and the (\d+)-step path",
                         doc("docs/proofs.md")).group(1)) == EXPECT["variants"]["stranded-followers"][1]


def test_each_mutants_shortest_distinguishing_sequence():
    paragraph = between(doc("docs/proofs.md"), "The buggy variants differ", "under incremental publication")
    pairs = re.findall(r"\b(\d+) \(([a-z-]+)", paragraph)
    assert len(pairs) >= 11, pairs
    for steps, variant in pairs:
        assert EXPECT["equiv"][variant] == ["different", int(steps)], (variant, steps)


def test_the_bounded_proofs_on_prompt_trees():
    text = doc("docs/proofs.md")
    m = re.search(r"`single_prefill` on the (\w+) prompt-tree scenarios and `no_deadlock` on (\w+) of them", text)
    assert m, "the sentence on the bounded proofs moved"
    rows = {k: v for k, v in EXPECT["prove"].items() if k.split()[0] in TREES}
    assert {k.split()[0] for k in rows} == TREES
    assert all(v["single_prefill"].startswith("bounded") for v in rows.values())
    no_deadlock = {k.split()[0] for k, v in rows.items() if v["no_deadlock"].startswith("bounded")}
    assert (number(m.group(1)), number(m.group(2))) == (len(TREES), len(no_deadlock))


def test_k_of_the_bounded_proofs():
    text = doc("docs/proofs.md")
    assert "is proved, with k=1 or k=2 (each row's k is recorded in" in text
    proved = [s for v in EXPECT["prove"].values() for s in v.values() if s.startswith("proved")]
    assert set(proved) == {"proved k=1", "proved k=2"}
    # spec.md: burst3-evict's single_prefill needs k = 2
    assert "`single_prefill` there for every depth by k-induction (k = 2," in doc("docs/spec.md")
    evict = [v["single_prefill"] for k, v in EXPECT["prove"].items() if k.split()[0] == "burst3-evict"]
    assert evict and set(evict) == {"proved k=2"}


def test_unbounded_configurations_proving_single_prefill():
    m = re.search(r"single_prefill: proved for all sizes \((\d+) configurations", doc("docs/proofs.md"))
    assert m
    assert int(m.group(1)) == sum(v.get("single_prefill") == "proved" for v in EXPECT["unbounded"].values())


def test_policy_grid_of_doc3_abort():
    from flightcheck.spec.scenario import SCENARIOS, policy_grid

    m = re.search(r"every policy of its grid \((\d+) for `doc3-abort`\)", doc("docs/spec.md"))
    assert m
    assert int(m.group(1)) == len(policy_grid(SCENARIOS["doc3-abort"]))
    assert int(m.group(1)) == sum(k.split()[0] == "doc3-abort" for k in EXPECT["explore"])


def test_the_walkthroughs_diff_command_prints_the_counts_it_quotes():
    """The trade-off chapter quotes a `flightcheck diff` command beside its counts: run it, same counts."""
    import shlex

    from typer.testing import CliRunner

    from flightcheck.checks.cli.app import build_app

    m = re.search(r"(\d+) states and (\d+) edges exist only under [a-z-]+ and (\d+) states and (\d+) edges only "
                  r"under [a-z-]+ \((\d+) states in both\); [^`]*`(flightcheck diff [^`]*?) --render", doc("docs/walkthrough.md"))
    assert m, "the walkthrough's trade-off sentence moved"
    result = CliRunner().invoke(build_app(), shlex.split(m.group(6))[1:] + ["--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    got = [out[k] for k in ("states_only_a", "edges_only_a", "states_only_b", "edges_only_b", "states_common")]
    assert got == [int(g) for g in m.groups()[:5]], (m.group(6), got)


def test_spec_known_limits_on_prompt_trees_agree_with_the_recorded_proofs():
    text = between(doc("docs/spec.md"), "### Known limits", "The batched explorer reads")
    assert "`prove --unbounded` proves it for all sizes on any prompt tree" in text
    prefix = {k: v for k, v in EXPECT["unbounded"].items() if k.startswith("prefix/")}
    assert prefix and all(v.get("single_prefill") == "proved" for v in prefix.values())
    rows = {k: v for k, v in EXPECT["prove"].items() if k.split()[0] in TREES}
    assert all(v["single_prefill"].startswith("bounded") for v in rows.values())  # "Per scenario, `prove` leaves"
    m = re.search(r"`no_deadlock` is proved by k-induction on every tree but `([a-z0-9-]+)`", text)
    assert m
    assert {k.split()[0] for k, v in rows.items() if v["no_deadlock"].startswith("bounded")} == {m.group(1)}


def test_spec_names_the_scenarios_the_symmetry_test_leaves_out():
    from tests.explore.test_explorer import LARGE_FULL, LARGE_TREES

    text = between(doc("docs/spec.md"), "### Known limits", "Prompt trees are small")
    m = re.search(r"every default scenario but `([a-z0-9-]+)` .*?; six costlier ones \(([^)]*)\) only with", text)
    assert m, "the sentence on the symmetry test moved"
    named = set(re.findall(r"`([a-z0-9-]+)`", m.group(2)))
    if LARGE_TREES or LARGE_FULL:  # FLIGHTCHECK_SLOW=1 runs them all
        assert named == set(LARGE_TREES + LARGE_FULL) and len(named) == 6
    src = (ROOT / "tests" / "explore" / "test_explorer.py").read_text()
    assert f'if n != "{m.group(1)}" and n not in LARGE_TREES + LARGE_FULL' in src
