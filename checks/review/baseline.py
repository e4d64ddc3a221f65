"""Both sides of a review summarised, each by its own code in its own process.

The candidate is the working tree (as it is, uncommitted changes included); the baseline is a ref,
checked out into a temporary ``git worktree`` that is removed afterwards, also on error. Each side runs
``python checks/review/bootstrap.py TREE OUT`` (the candidate's copy of that script, which maps
``flightcheck.*`` to ``TREE``'s folders), the two at once, and writes its JSON summary
(:mod:`~flightcheck.checks.review.summary`) to a temporary file. Afterwards each summary's ``origin``
(the files ``flightcheck``, ``flightcheck.spec`` and the explorer were imported from) is checked to lie
in its own tree: nothing of the candidate leaks into the baseline.

For example::

    >>> inside("/tmp/t/spec/__init__.py", Path("/tmp/t")), inside("/work/x/spec/__init__.py", Path("/tmp/t"))
    (True, False)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flightcheck.checks.review.errors import SideFailed
from flightcheck.checks.review.gitrepo import resolve, worktree

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap.py"
EXIT_IMPORT, EXIT_FAILED = 3, 4  # bootstrap's statuses (kept equal to its EXIT_IMPORT, EXIT_FAILED)


@dataclass
class Sides:
    """The two summaries, what the baseline is, and what the comparison cost."""

    baseline: dict[str, Any]
    candidate: dict[str, Any]
    ref: str
    commit: str
    seconds: float
    cpu_seconds: float  # both side processes together (user + system)


def inside(path: str | None, root: Path) -> bool:
    """True when ``path`` lies under ``root`` (both resolved)."""
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _start(tree: Path, out: Path, args: list[str]) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.setdefault("PYTHONHASHSEED", "0")
    return subprocess.Popen([sys.executable, str(BOOTSTRAP), str(tree), str(out), *args],
                            cwd=str(tree), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _finish(name: str, proc: subprocess.Popen, tree: Path, out: Path) -> dict[str, Any]:
    import json

    _stdout, stderr = proc.communicate()
    if proc.returncode == EXIT_IMPORT:
        line = (stderr.strip().splitlines() or ["(no message)"])[-1]
        raise SideFailed(f"the {name} cannot be imported (another layout?): {line}")
    if proc.returncode != 0:
        lines = stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise SideFailed(f"the {name} could not be explored: {lines[-1]}")
    try:
        summary = json.loads(out.read_text())
    except (OSError, ValueError) as error:
        raise SideFailed(f"the {name}'s summary cannot be read: {error}") from None
    for part, where in summary.get("origin", {}).items():
        if not inside(where, tree):
            raise SideFailed(f"the {name} imported {part} from {where}, outside its tree {tree}")
    return summary


def _cpu_of_children() -> float:
    t = os.times()
    return t.children_user + t.children_system


def summarise_sides(root: Path, ref: str, scenarios: list[str] | None = None, *,
                    one: dict[str, Any] | None = None, corpus: str | None = None) -> Sides:
    """Summarise the working tree at ``root`` and the commit ``ref`` names, in parallel processes: every
    default scenario (or those named) and variant, or, with ``one``, only the graph that request names
    (``scenario``, ``policy``, ``variant``, ``symmetry``, ``max_states``: ``flightcheck diff --base``).
    With ``corpus`` (``own`` or ``all``) each side also runs its own conformance corpus on its own engine.

    Raises NoSuchRef for a ref that names no commit, and SideFailed when either side cannot be imported
    or explored (the message names the side and the last line of its error)."""
    import json

    args = ["--one", json.dumps(one)] if one is not None else list(scenarios or [])
    if corpus is not None and one is None:
        args.insert(0, f"--corpus={corpus}")
    commit = resolve(root, ref)
    t0, cpu0 = time.perf_counter(), _cpu_of_children()
    with tempfile.TemporaryDirectory(prefix="flightcheck-review-") as tmp, worktree(root, commit) as tree:
        outs = {"baseline": Path(tmp) / "baseline.json", "candidate": Path(tmp) / "candidate.json"}
        trees = {"baseline": tree, "candidate": root}
        procs = {name: _start(trees[name], outs[name], args) for name in ("baseline", "candidate")}
        try:
            summaries = {name: _finish(name, procs[name], trees[name], outs[name]) for name in procs}
        finally:
            for proc in procs.values():  # the other side, when one failed
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    return Sides(summaries["baseline"], summaries["candidate"], ref, commit, time.perf_counter() - t0,
                 _cpu_of_children() - cpu0)
