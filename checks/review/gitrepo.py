"""The git facts a review needs: the working tree, a ref's commit, what changed, a temporary worktree.

Every call runs ``git`` with ``-C`` on the repository's top folder; a failure is a
:class:`~flightcheck.checks.review.errors.GitFailed` naming the command and git's first line. The
temporary worktree of :func:`worktree` lives under the system's temporary folder and is removed on the
way out, also after an error.

For example::

    >>> from pathlib import Path
    >>> top = toplevel(Path(__file__).parent)
    >>> (top / "spec").is_dir() and resolve(top, "HEAD") == resolve(top, "HEAD^{commit}")
    True
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from flightcheck.checks.review.errors import GitFailed, NoSuchRef, NotARepository

SOURCE_FOLDERS = ("spec", "impl", "checks", "flightcheck")  # what a flightcheck checkout must have


def git(root: Path, *args: str) -> str:
    """Run ``git -C root args`` and return its standard output (GitFailed on a non-zero status)."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except OSError as error:
        raise GitFailed(f"git cannot be run: {error}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
        raise GitFailed(f"git {' '.join(args)}: {first}")
    return done.stdout


def toplevel(folder: Path) -> Path:
    """The top folder of the flightcheck working tree that holds ``folder`` (NotARepository otherwise)."""
    try:
        top = Path(git(folder, "rev-parse", "--show-toplevel").strip())
    except GitFailed as error:
        raise NotARepository(f"{folder} is not inside a git working tree ({error})") from None
    missing = [f for f in SOURCE_FOLDERS if not (top / f).is_dir()]
    if missing:
        raise NotARepository(f"{top} is not a flightcheck checkout (no {', '.join(missing)})")
    return top


def resolve(root: Path, ref: str) -> str:
    """The full commit id ``ref`` names (NoSuchRef when none; a ref that looks like an option too)."""
    if not ref.strip() or ref.startswith("-"):
        raise NoSuchRef(repr(ref), "not a ref")
    try:
        return git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").strip()
    except GitFailed:
        raise NoSuchRef(ref) from None


def changed_files(root: Path, ref: str) -> list[str]:
    """Paths (relative to ``root``) that differ between ``ref`` and the working tree, untracked files
    included (ignored ones not), sorted."""
    commit = resolve(root, ref)
    tracked = git(root, "diff", "--name-only", "--no-renames", commit, "--").splitlines()
    untracked = git(root, "ls-files", "--others", "--exclude-standard").splitlines()
    return sorted(set(filter(None, tracked + untracked)))


def file_at(root: Path, ref: str, path: str) -> str | None:
    """The text of ``path`` (relative to ``root``) at the commit ``ref`` names; None when the commit has no
    such file (or it is not text)."""
    commit = resolve(root, ref)
    try:
        return git(root, "show", f"{commit}:{path}")
    except (GitFailed, UnicodeDecodeError):
        return None


def uncommitted(root: Path) -> list[str]:
    """Paths with changes not yet committed (modified, staged or untracked), as ``git status`` names them."""
    return [line[3:] for line in git(root, "status", "--porcelain", "--untracked-files=normal").splitlines() if line]


@contextmanager
def worktree(root: Path, commit: str) -> Iterator[Path]:
    """A detached temporary worktree of ``commit``; removed (and pruned) on the way out, whatever happens."""
    parent = Path(tempfile.mkdtemp(prefix="flightcheck-baseline-"))
    path = parent / "tree"
    try:
        git(root, "worktree", "add", "--detach", "--quiet", str(path), commit)
        yield path
    finally:
        try:
            if path.exists():
                git(root, "worktree", "remove", "--force", str(path))
        except GitFailed:
            pass  # removed below by hand, and pruned
        shutil.rmtree(parent, ignore_errors=True)
        try:
            git(root, "worktree", "prune")
        except GitFailed:
            pass
