"""At 80 columns the command line wraps its tables and help, and never cuts a name with an ellipsis."""

import click
import pytest
import typer
from typer.testing import CliRunner

from flightcheck.checks.cli.app import build_app
from flightcheck.spec.variants import VARIANTS

NARROW = {"COLUMNS": "80", "TERMINAL_WIDTH": "80"}


def _run(*args: str) -> str:
    result = CliRunner().invoke(build_app(), list(args), env=NARROW)
    assert result.exit_code == 0, result.output
    return result.output


def _words(text: str) -> set[str]:
    return {w.strip(",.;:()") for w in text.replace("│", " ").split()}


def test_variants_prints_every_variant_and_property_whole_at_80_columns():
    out = _run("variants")
    assert "…" not in out
    assert max(map(len, out.splitlines())) <= 80
    words = _words(out)
    for v in VARIANTS.values():
        assert v.name in words, v.name
        assert v.expected_violation is None or v.expected_violation in words, v.expected_violation


def _commands():
    group = typer.main.get_command(build_app())
    ctx = click.Context(group)
    return [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]


@pytest.mark.parametrize("name,command", _commands(), ids=[n for n, _ in _commands()])
def test_every_option_name_is_whole_in_help_at_80_columns(name, command):
    out = _run(name, "--help")
    assert "…" not in out
    assert max(map(len, out.splitlines())) <= 80
    words = _words(out)
    for p in command.params:
        for opt in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]:
            if opt.startswith("--"):
                assert opt in words, (name, opt)


def test_explore_help_names_every_variant_whole():
    words = _words(_run("explore", "--help"))
    assert set(VARIANTS) <= words, set(VARIANTS) - words


def test_the_command_list_is_whole_at_80_columns():
    out = _run("--help")
    assert "…" not in out
    words = _words(out)
    assert {name for name, _ in _commands()} <= words


def test_diff_keeps_each_side_whole_at_80_columns():
    out = _run("diff", "--a", "release=after-prefill,publication=on-completion",
               "--b", "release=on-completion,publication=on-completion")
    assert max(map(len, out.splitlines())) <= 80
    assert {"release=after-prefill", "release=on-completion", "publication=on-completion"} <= _words(out)
