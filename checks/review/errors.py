"""Why a review could not be made: each a one-line message, and exit status 2 at the command line.

A review that cannot compare both sides is never shown as a pass: the command turns these into
:func:`~flightcheck.checks.errors.usage_error` (one line on standard error, exit 2).

For example::

    >>> str(NoSuchRef("HEAD~99", "unknown revision"))
    'no commit HEAD~99 in this repository (unknown revision)'
"""

from __future__ import annotations


class ReviewError(Exception):
    """A review could not be made (the base of every error here)."""


class NotARepository(ReviewError):
    """The current folder is not inside a git working tree of flightcheck."""


class NoSuchRef(ReviewError):
    """The ref names no commit."""

    def __init__(self, ref: str, why: str = "") -> None:
        super().__init__(f"no commit {ref} in this repository" + (f" ({why})" if why else ""))
        self.ref = ref


class GitFailed(ReviewError):
    """A git command failed (its message is the first line of git's)."""


class SideFailed(ReviewError):
    """One side's process could not import its tree (another layout) or could not explore it."""
