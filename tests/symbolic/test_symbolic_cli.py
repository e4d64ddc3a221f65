"""``flightcheck prove --engine``: its rows, its exit status, its counterexample program, its bad arguments."""

from __future__ import annotations

import json

import pytest

from tests.cli.bad_input import flat, invoke


def test_the_clean_engine_is_verified_action_by_action():
    result = invoke("prove", "--engine", "--bound", "1,3", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["verdict"] == "ok" and out["bound"] == "N=1,M=3"
    assert [a["action"] for a in out["actions"]] == ["arrive", "admit", "prefill", "publish", "release", "promote",
                                                     "decode", "finish", "evict", "abort", "notify", "expire", "fail"]
    assert {a["verdict"] for a in out["actions"]} == {"verified"} and out["actions"][1]["states"] == 93


def test_a_planted_engine_bug_is_a_counterexample_whose_program_replays_to_the_same_failure(tmp_path):
    program = tmp_path / "program.json"
    result = invoke("prove", "--engine", "--bound", "2,3", "--mutant", "forget-released", "--program-out", program)
    assert result.exit_code == 1, result.output
    text = flat(result.output)
    assert "abort N=2,M=3 exhaustive" in text and "rel[1]: spec 1, engine 0" in text
    assert "[single-flight] after arrive(t0), arrive(t0):" in text
    replayed = invoke("conform", "--replay", program, "--mutant", "forget-released")
    assert replayed.exit_code == 1 and "the engine departs from the spec" in replayed.output
    assert invoke("conform", "--replay", program).exit_code == 0  # the clean engine follows the same program


@pytest.mark.parametrize("args, message", [
    (["--bound", "3"], "error: --bound: a bound is N,M (requests, pages), e.g. 3,6; got '3'"),
    (["--bound", "3,4,forest"], "error: --bound: unknown template set 'forest' in bound '3,4,forest'; known: "
                                "tree, branches"),
    (["--bound", "9,3"], "error: --bound: num_requests must be from 1 to 6, got 9"),
    (["--bound", "2,1"], "error: --bound: num_pages must be at least"),
    (["--bound", "1,100"], "error: --bound: num_pages must be at most 64, got 100"),
    (["--mutant", "sloppy"], "error: unknown --mutant 'sloppy'; known: "),
    (["--method", "guess"], "error: --method must be one of exhaustive, crosshair; got 'guess'"),
    (["--scenario", "burst2"], "error: --engine checks the engine against the spec over its own configurations; "
                               "it takes no --scenario"),
])
def test_bad_arguments_exit_2_naming_them(args, message):
    result = invoke("prove", "--engine", *args)
    assert result.exit_code == 2 and flat(result.output).startswith(message), result.output


def test_the_engine_options_need_engine():
    result = invoke("prove", "--bound", "2,3")
    assert result.exit_code == 2 and "go with --engine" in result.output
