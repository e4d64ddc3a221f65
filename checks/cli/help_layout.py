"""Help that stays readable in a narrow terminal: option names are never cut.

typer draws each ``--help`` panel as a rich table whose columns all default to wrapping with an
ellipsis, so at 80 columns rich shrinks the widest columns evenly and an option name such as
``--min-shared-pages`` prints as ``--min-shared-pag…``. :func:`keep_option_names_whole` makes the
columns that hold option and command names keep their words whole (``no_wrap``), so only the type and
help columns give up width, and those wrap at words, folding a word longer than the column (a long
default such as a path) rather than cutting it.

For example::

    >>> keep_option_names_whole()
    >>> import typer.rich_utils
    >>> typer.rich_utils.Table is WholeNamesTable
    True
"""

from __future__ import annotations

import re
from typing import Any

from rich.columns import Columns
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

_TYPE_WORD = re.compile(r"<[^>]*>|\S+")  # "<int range>" is one word of a type
NARROW = 120  # below this width the type column wraps to its longest word, leaving the help text room


class WholeNamesTable(Table):
    """A typer help table whose name columns (all but the last two: type and help, or the one description
    column of a command list) keep their words whole, and whose other columns fold rather than ellipsize;
    in a narrow terminal the type column is no wider than its longest word, so the help text (which lists
    variant and scenario names) keeps room to wrap between words."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        names = len(self.columns) - 2 if len(self.columns) > 2 else 1
        for k, column in enumerate(self.columns):
            if k < names:
                column.no_wrap = True
            else:
                column.overflow = "fold"
                for cell in column._cells:  # typer's help cell: Columns of the help text and its default
                    for item in cell.renderables if isinstance(cell, Columns) else [cell]:
                        if isinstance(item, Text) and item.overflow is None:
                            item.overflow = "fold"  # a long default (a path) folds rather than ends in …
        if len(self.columns) > 2 and options.max_width < NARROW:  # the type column gives up width to the help
            self.collapse_padding = True  # and an empty column (no short options) costs one space, not two
            types = self.columns[-2]
            types.max_width = max((len(w) for c in types._cells for w in _TYPE_WORD.findall(str(c))),
                                  default=None)
        yield from super().__rich_console__(console, options)


def keep_option_names_whole() -> None:
    """Make every typer help panel drawn from now on a :class:`WholeNamesTable` (idempotent)."""
    import typer.rich_utils

    rich_utils: Any = typer.rich_utils
    rich_utils.Table = WholeNamesTable


__all__ = ["WholeNamesTable", "keep_option_names_whole"]
