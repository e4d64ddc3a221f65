"""Every command that builds a design takes the spec's whole Policy as options, from one definition
(checks/cli/policy_options.py): a field of Policy cannot be missing from one command and present in another."""

import dataclasses
import json

import pytest
import typer
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.explore.explorer import explore
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import SCENARIOS, Policy

COMMANDS = ("explore", "export", "explorer", "validate", "replay")


def _options(name):
    command = typer.main.get_command(app).commands[name]
    return {opt for p in command.params for opt in [*p.opts, *p.secondary_opts]}


@pytest.mark.parametrize("name", COMMANDS)
def test_each_design_command_has_an_option_for_every_policy_field(name):
    expected = {"--" + f.name.replace("_", "-") for f in dataclasses.fields(Policy)}
    assert {"--prefix-caching", "--no-prefix-caching", "--leader-loss", "--min-shared-pages"} <= _options(name)
    assert expected <= _options(name), expected - _options(name)


def test_an_option_that_was_missing_from_explore_now_changes_the_graph():
    r = CliRunner().invoke(app, ["explore", "--scenario", "burst2-abort", "--leader-loss", "promote", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    promote = explore(FlightSpec(SCENARIOS["burst2-abort"].with_policy(leader_loss="promote")))
    release_all = explore(FlightSpec(SCENARIOS["burst2-abort"]))
    assert got["stats"]["states"] == promote.stats.states != release_all.stats.states


@pytest.mark.parametrize("name,args", [("explore", []), ("export", ["--promela"]), ("explorer", []),
                                       ("validate", ["events.jsonl"]), ("replay", ["path.txt"])])
def test_a_bad_choice_is_exit_2_naming_the_option_before_anything_runs(name, args, tmp_path):
    r = CliRunner().invoke(app, [name, *args, "--leader-loss", "sometimes"])
    assert r.exit_code == 2 and "--leader-loss must be one of release-all, promote; got 'sometimes'" in r.output, r.output


def test_a_policy_the_spec_refuses_is_exit_2_with_its_reason():
    r = CliRunner().invoke(app, ["explore", "--scenario", "burst2", "--no-prefix-caching"])
    assert r.exit_code == 2 and "bad policy: coordination single-flight needs prefix caching" in r.output, r.output
    r = CliRunner().invoke(app, ["explore", "--scenario", "burst2", "--no-prefix-caching", "--coordination", "none",
                                 "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["stats"]["states"] > 0, r.output
