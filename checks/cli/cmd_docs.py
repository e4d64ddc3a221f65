"""Command ``docs``: generate the walkthrough (``docs/walkthrough.md`` and its pictures) from the spec, the
command manual (``docs/commands.md``) from the command line (:mod:`flightcheck.checks.cli.manual`), and the
scenario and variant lists of the hand-written docs from the registries
(:mod:`flightcheck.checks.report.doc_blocks`).

For example::

    $ flightcheck docs                      # writes docs/walkthrough.md, docs/walkthrough/*.svg, docs/commands.md
    $ flightcheck docs --check              # exit 1 naming the files that are stale, writing nothing
    $ flightcheck docs --out /tmp/walk.md   # anywhere else (pictures in /tmp/walk/)
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs" / "walkthrough.md"


def register(app: typer.Typer) -> None:
    """Add ``docs`` to the app."""

    @app.command()
    def docs(
        out: Path = typer.Option(DEFAULT_OUT, "--out", help="The Markdown file to write (its pictures go in a "
                                 "folder named after it)."),
        check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 when the files on disk differ "
                                   "from what the spec gives now."),
    ) -> None:
        """Generate the teaching walkthrough from the spec (each step of the design's story illustrated by a
        run the explorer found, every bug of the design history as its counterexample), the command
        manual from the command line, beside it, and the scenario and variant lists of the other docs (between
        their "generated" markers) from the registries."""
        from flightcheck.checks.cli.manual import MANUAL, manual_is_stale, write_manual
        from flightcheck.checks.errors import usage_error
        from flightcheck.checks.report.doc_blocks import stale_blocks, write_blocks
        from flightcheck.checks.report.markdown import stale_files, walkthrough_files, write_walkthrough

        if out.suffix.lower() != ".md":
            raise usage_error(f"--out must be a .md file; got {out.name!r}")
        console = Console()
        files = walkthrough_files(out)
        manual = out.parent / MANUAL.name  # the manual goes beside the walkthrough
        if check:
            stale = stale_files(files, out) + ([str(manual)] if manual_is_stale(manual) else []) + stale_blocks()
            if stale:
                console.print(f"[bold red]the walkthrough is stale[/]: {len(stale)} file(s) differ; run `flightcheck docs`")
                for p in stale:
                    console.print(f"  {p}", markup=False, highlight=False)
                raise typer.Exit(1)
            console.print(f"[green]up to date[/]: {out}, {len(files) - 1} pictures, {manual} and the generated "
                          "lists of the other docs")
            return
        written = write_walkthrough(files, out)
        write_manual(manual)
        blocks = write_blocks()  # the scenario and variant lists in docs/explore.md and the like
        console.print(f"wrote {out}, {len(written) - 1} pictures in {out.with_suffix('')}/ and {manual}"
                      + "".join(f", {p}" for p in blocks), highlight=False)
