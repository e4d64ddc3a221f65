"""The command manual (``docs/commands.md``), generated from the command line itself: every command's
help, its arguments and options with their defaults, in the order ``flightcheck --help`` lists them.

Written by ``flightcheck docs`` beside the walkthrough and checked for staleness by ``flightcheck docs
--check`` and ``tests/cli/test_manual.py``, so the manual cannot drift from the tool: a new option, a
changed default or help text shows up as a stale file.

For example::

    >>> text = command_manual()
    >>> text.splitlines()[0], "## `flightcheck check`" in text, "`--quick`" in text
    ('# Command manual', True, True)
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "docs" / "commands.md"


def _default(value: Any) -> str:
    """A default as the manual shows it: a path inside the repository relative to it (the manual is the
    same on every machine), a list joined, nothing for None."""
    if value is None or value == () or value == []:
        return ""
    if isinstance(value, Path):
        try:
            return str(value.resolve().relative_to(ROOT))
        except ValueError:
            return str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _cell(text: str) -> str:
    """Text fit for one cell of a Markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


def _param_rows(command: Any) -> list[str]:
    rows = []
    for p in command.params:
        if p.name == "help":
            continue
        if type(p).__name__.endswith("Argument"):
            name = f"`{(p.metavar or p.name).upper()}`" + ("" if p.required else " (optional)")
            rows.append(f"| {name} | | {_cell(p.help or '')} |")
            continue
        name = " / ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
        if getattr(p, "metavar", None) and not p.is_flag:
            name += f" {p.metavar}"
        default = "" if p.is_flag and p.default is False else _default(p.default)
        if p.is_flag and p.secondary_opts:
            default = p.opts[0] if p.default else p.secondary_opts[0]
        rows.append(f"| {name} | {_cell(default)} | {_cell(p.help or '')} |")
    return rows


def command_manual() -> str:
    """The whole manual as Markdown."""
    import click
    import typer

    from flightcheck.checks.cli.app import build_app

    group = typer.main.get_command(build_app())
    ctx = click.Context(group, info_name="flightcheck")
    names = group.list_commands(ctx)
    out = ["# Command manual", "",
           "Generated from the command line by `flightcheck docs` (do not edit; `flightcheck docs --check` and "
           "tests/cli/test_manual.py fail when it is stale). `flightcheck COMMAND --help` prints the same. Every "
           "command exits 0 when what it checked passed, 1 when it is wrong, 2 for bad input or arguments and 3 "
           "for a fault of flightcheck itself (docs/check.md, \"Exit status and errors\").", ""]
    out += [f"- [`{n}`](#flightcheck-{n}): {_cell((group.get_command(ctx, n).help or '').split(chr(10) * 2)[0])}"
            for n in names]
    for name in names:
        command = group.get_command(ctx, name)
        sub = click.Context(command, info_name=name, parent=ctx)
        usage = " ".join(command.collect_usage_pieces(sub))
        out += ["", f"## `flightcheck {name}`", "", inspect.cleandoc(command.help or ""), "",
                f"```\nflightcheck {name} {usage}\n```", ""]
        rows = _param_rows(command)
        if rows:
            out += ["| argument or option | default | what it does |", "|---|---|---|", *rows]
    return "\n".join(out).rstrip() + "\n"


def manual_is_stale(path: Path = MANUAL) -> bool:
    """Whether the manual at ``path`` differs from what the command line gives now (missing counts)."""
    return not path.is_file() or path.read_text(encoding="utf-8") != command_manual()


def write_manual(path: Path = MANUAL) -> Path:
    """Write the manual to ``path``; returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(command_manual(), encoding="utf-8")
    return path


__all__ = ["MANUAL", "command_manual", "manual_is_stale", "write_manual"]
