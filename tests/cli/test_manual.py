"""The command manual (docs/commands.md) is generated from the command line and is never stale."""

from flightcheck.checks.cli.manual import MANUAL, command_manual, manual_is_stale, write_manual


def test_the_committed_manual_is_what_the_command_line_gives_now():
    assert not manual_is_stale(), "docs/commands.md is stale: run `flightcheck docs`"


def test_every_command_and_option_is_in_the_manual():
    import click
    import typer

    from flightcheck.checks.cli.app import build_app

    text = MANUAL.read_text(encoding="utf-8")
    group = typer.main.get_command(build_app())
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        assert f"## `flightcheck {name}`" in text
        for p in group.get_command(ctx, name).params:
            for opt in getattr(p, "opts", []):
                if opt.startswith("--") and opt != "--help":
                    assert f"`{opt}`" in text, (name, opt)


def test_a_changed_manual_reads_as_stale(tmp_path):
    path = write_manual(tmp_path / "commands.md")
    assert not manual_is_stale(path)
    path.write_text(path.read_text().replace("| 8000 |", "| 8080 |"))
    assert manual_is_stale(path) and not manual_is_stale(write_manual(path))
    assert manual_is_stale(tmp_path / "missing.md")
    assert "/work/" not in command_manual() and "/tmp/" not in command_manual()  # the same on every machine
