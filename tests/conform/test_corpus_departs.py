"""A searched corpus program that the engine fails on is a verdict on the engine, never a tool fault.

``corpus --build`` and ``--grow`` run candidate programs on the engine; under a broken engine the first
failing one stops the search with :class:`CandidateDeparts` (its diagnosis, rules and the program), which
the command turns into exit 1 with the program saved for ``conform --replay`` and the corpus unchanged.
"""

from __future__ import annotations

import json
import pickle

import pytest

from flightcheck.checks.cli.cmd_corpus import _departs
from flightcheck.checks.conform import corpus
from flightcheck.checks.conform.grow import grow
from flightcheck.checks.conform.mutants import MUTANTS
from flightcheck.checks.conform.program import Program
from flightcheck.checks.conform.runner import run_program

BURST2 = next(p for n, p in corpus.grid() if n == "burst2")


@pytest.fixture(scope="module")
def departs() -> corpus.CandidateDeparts:
    with MUTANTS["follower-admitted-early"].patched():
        with pytest.raises(corpus.CandidateDeparts) as caught:
            corpus.build("burst2", BURST2, seconds=20, patience=50)
    return caught.value


def test_build_stops_with_the_engine_departing(departs: corpus.CandidateDeparts) -> None:
    text = str(departs)
    assert text.startswith("a corpus candidate for burst2 after-prefill incremental release-all makes")
    assert "makes the engine depart from the spec" in text and "\n  " in text  # the rules, one a line
    assert "setup" not in text  # the program travels beside the message, not in it
    back = pickle.loads(pickle.dumps(departs))  # as it comes back from a Dask worker
    assert (str(back), back.program) == (text, departs.program)


def test_the_saved_program_replays_the_departure(departs: corpus.CandidateDeparts, tmp_path, capsys) -> None:
    exit_ = _departs(departs, tmp_path)
    assert exit_.exit_code == 1
    saved = list(tmp_path.glob("failure-*.json"))
    assert len(saved) == 1
    err = capsys.readouterr().err
    assert f"flightcheck conform --replay {saved[0]}" in err and "the corpus is unchanged" in err
    program = Program.from_json(json.loads(saved[0].read_text()))
    with MUTANTS["follower-admitted-early"].patched():
        assert not run_program(program).ok
    assert run_program(program).ok  # the correct engine runs it: the departure is the mutant's


def test_grow_stops_with_the_engine_departing() -> None:
    entry = next(e for e in corpus.load() if e.scenario == "burst2" and e.policy == BURST2)
    with MUTANTS["follower-admitted-early"].patched():
        with pytest.raises(corpus.CandidateDeparts, match=f"^a corpus candidate for {entry.key} makes"):
            grow(entry, {("never", "taken")}, seconds=20, patience=50)
