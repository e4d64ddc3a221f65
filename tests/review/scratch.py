"""Scratch clones of the project for the review tests (never /work's own history): clone, edit, commit.

``GUARD`` and ``EARLY`` are the after-prefill release condition of ``spec/derived.py`` and the edit both
files make to it: the release point one page early, during prefill.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
GUARD = "published = And(s.ph[f] == DECODE, s.pubd[f] >= self.shareable(f))"
EARLY = "published = And(s.ph[f] >= PREFILL, s.pubd[f] >= self.shareable(f) - 1)"


def clone_into(root: Path) -> Path:
    """``git clone`` of the checkout's committed state into ``root``."""
    subprocess.run(["git", "clone", "-q", str(HERE), str(root)], check=True)
    return root


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` as a throwaway identity; its stdout."""
    return subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=test", *args],
                          check=True, capture_output=True, text=True).stdout


def commit(root: Path, message: str) -> None:
    """Commit every tracked change in ``root``."""
    git(root, "commit", "-q", "-a", "-m", message)


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    """Replace ``old`` by ``new`` in ``path`` (``count`` times; every one when negative); ``old`` must be there."""
    text = path.read_text()
    assert text.count(old) >= 1, f"{old!r} is not in {path}: update the test's edit"
    path.write_text(text.replace(old, new) if count < 0 else text.replace(old, new, count))


def release_early(root: Path) -> None:
    """The release point one page early, during prefill: followers may compute pages the leader has not
    published (single_prefill regresses under after-prefill)."""
    derived = root / "spec" / "derived.py"
    edit(derived, GUARD, EARLY)
    edit(derived, "DECODE, FINISHED, OPEN, View", "DECODE, FINISHED, OPEN, PREFILL, View")
