"""What ``flightcheck check --baseline REF`` and ``check --since REF`` do, apart from their options.

:func:`make_review` summarises both sides (:mod:`~flightcheck.checks.review.baseline`) and compares
them (:mod:`~flightcheck.checks.review.graphdiff`) into one JSON-ready review; :func:`baseline_command`
prints it (text or ``--json``), keeps it in the report folder (``review.txt``, ``review.json``) and
returns the exit status; :func:`since_command` picks the stages a change can affect
(:mod:`~flightcheck.checks.review.since`), says which, and runs them. The repository is the one the
current folder is in. Every :class:`~flightcheck.checks.review.errors.ReviewError` becomes one line on
standard error and exit 2 (raised as :func:`~flightcheck.checks.errors.usage_error`).

For example::

    >>> quick_scenarios(["burst2", "burst4-abort", "doc3"])
    ['burst2', 'doc3']
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any, Callable

from flightcheck.checks.review.errors import ReviewError
from flightcheck.checks.suite.stage_explore import HEAVY  # what check --quick leaves out of its explore stage


def quick_scenarios(names: list[str]) -> list[str]:
    """``names`` without the heavy scenarios."""
    return [n for n in names if n not in HEAVY]


# A change under these can move what the engine does on the corpus (the engine, or the corpus itself).
ENGINE_PATHS = ("impl/", "checks/conform/")


def corpus_choice(paths: list[str], quick: bool) -> str | None:
    """Whether both sides run the conformance corpus: only when a path the engine's behaviour depends on
    changed (a spec-only change cannot move the engine), each scenario's own policy under ``quick``.

    >>> corpus_choice(["spec/model.py", "README.md"], False), corpus_choice(["impl/pages.py"], True)
    (None, 'own')
    """
    if not any(p.startswith(ENGINE_PATHS) for p in paths):
        return None
    return "own" if quick else "all"


def draw_changes(sides: Any, diff: dict[str, Any], folder: Path, limit: int) -> dict[str, str]:
    """The first ``limit`` changed graphs, each drawn as one picture of both sides (added green, removed
    red: :mod:`~flightcheck.checks.review.drawing`) into ``folder`` as ``graph-<scenario and policy>.svg``;
    a graph too large to stay readable is left out. Returns the path of each picture by the item's key."""
    import re

    from flightcheck.checks.explore.picture import MAX_NODES, RenderError
    from flightcheck.checks.explore.render import write_picture
    from flightcheck.checks.review.drawing import build_union, union_size

    base = {i["key"]: i for i in sides.baseline["items"]}
    cand = {i["key"]: i for i in sides.candidate["items"]}
    drawn: dict[str, str] = {}
    for item in [i for i in diff["items"] if i["changed"]][:limit]:
        b, c = base[item["key"]], cand[item["key"]]
        if union_size(b, c) > MAX_NODES:
            continue
        path = folder / ("graph-" + re.sub(r"[^A-Za-z0-9]+", "-", item["key"]).strip("-") + ".svg")
        try:
            write_picture(build_union(b, c, (sides.ref, "the working tree")), path)
        except RenderError:  # graphviz missing or refusing: the text review stands without the picture
            continue
        drawn[item["key"]] = str(path)
    return drawn


def make_review(root: Path, ref: str, *, scenarios: list[str] | None = None, strict: bool = False,
                quick: bool = False, draw_dir: Path | None = None) -> dict[str, Any]:
    """The review of the working tree at ``root`` against ``ref``: both sides, the diff, the verdict and
    the exit status. ``scenarios`` restricts the default scenarios compared (every one by default); when
    the engine or the corpus changed (:func:`corpus_choice`), both sides also run the conformance corpus.
    With ``draw_dir``, the first changed graphs are drawn there (:func:`draw_changes`)."""
    from flightcheck.checks.review.baseline import summarise_sides
    from flightcheck.checks.review.gitrepo import changed_files, uncommitted
    from flightcheck.checks.review.graphdiff import compare
    from flightcheck.checks.review.present import outcome

    dirty = uncommitted(root)
    corpus = corpus_choice(changed_files(root, ref), quick)
    sides = summarise_sides(root, ref, scenarios, corpus=corpus)
    diff = compare(sides.baseline, sides.candidate)
    verdict, status = outcome(diff, strict)
    from flightcheck.checks.review.present import DETAILED

    drawn = draw_changes(sides, diff, draw_dir, DETAILED) if draw_dir is not None else {}
    return {"drawn": drawn, "verdict": verdict, "exit": status, "strict": strict,
            "baseline": {"ref": ref, "commit": sides.commit, "origin": sides.baseline["origin"]},
            "candidate": {"root": str(root), "uncommitted": dirty, "origin": sides.candidate["origin"]},
            "scenarios": sides.candidate["scenarios"], "corpus": corpus, "seconds": round(sides.seconds, 2),
            "cpu_seconds": round(sides.cpu_seconds, 2), "diff": diff}


def _usage(error: ReviewError) -> Exception:
    from flightcheck.checks.errors import usage_error

    return usage_error(str(error).splitlines()[0] if str(error) else type(error).__name__)


def baseline_command(ref: str, *, scenarios: list[str] | None, quick: bool, strict: bool, as_json: bool,
                     report_dir: Path | None, folder: Path | None = None) -> int:
    """``check --baseline REF``: review the working tree against ``ref``, print it, keep it in
    ``report_dir``, and return the exit status (0 same or changed, 1 regressed or, ``strict``, changed)."""
    from rich.console import Console

    from flightcheck.checks.errors import usage_error
    from flightcheck.checks.review.gitrepo import toplevel
    from flightcheck.checks.review.present import to_text
    from flightcheck.spec.scenario import SCENARIOS

    unknown = [s for s in scenarios or [] if s not in SCENARIOS]
    if unknown:
        raise usage_error(f"unknown --scenario {unknown[0]!r}; known (default scenarios): {', '.join(SCENARIOS)}")
    names = list(scenarios) if scenarios else list(SCENARIOS)
    if quick:
        names = quick_scenarios(names)
    try:
        root = toplevel(folder or Path.cwd())
        review = make_review(root, ref, scenarios=names, strict=strict, quick=quick, draw_dir=report_dir)
    except ReviewError as error:
        raise _usage(error) from None
    text = to_text(review)
    if report_dir is not None:
        (report_dir / "review.json").write_text(json.dumps(review, indent=1))
        (report_dir / "review.txt").write_text("\n".join(text) + "\n")
    if as_json:
        print(json.dumps(review))
    else:
        console = Console(highlight=False)
        for line in text:
            console.print(line, markup=False, soft_wrap=True)
        if report_dir is not None:
            console.print(f"review: {report_dir / 'review.txt'}", markup=False, soft_wrap=True)
    return review["exit"]


def unchanged_code(root: Path, ref: str, paths: list[str]) -> list[str]:
    """The Python files among ``paths`` whose code in the working tree is the same as at ``ref`` (only
    comments or layout changed: :func:`~flightcheck.checks.review.since.same_code`)."""
    from flightcheck.checks.review.gitrepo import file_at
    from flightcheck.checks.review.since import same_code

    out = []
    for path in paths:
        if not path.endswith(".py") or not (root / path).is_file():
            continue
        try:
            now = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if same_code(file_at(root, ref, path), now):
            out.append(path)
    return out


def since_command(ref: str, *, known: list[str], stage: list[str] | None, as_json: bool,
                  run: Callable[[list[str]], str], folder: Path | None = None) -> str:
    """``check --since REF``: run (through ``run``) only the stages of ``known`` a change since ``ref`` can
    affect (narrowed to ``stage`` when given), say which and why, and return the suite's verdict
    (``ok`` when nothing needed to run). With ``as_json`` the suite's JSON gains ``since``."""
    from rich.console import Console

    from flightcheck.checks.review.gitrepo import changed_files, toplevel
    from flightcheck.checks.review.since import select

    try:
        root = toplevel(folder or Path.cwd())
        paths = changed_files(root, ref)
        same = unchanged_code(root, ref, paths)
    except ReviewError as error:
        raise _usage(error) from None
    chosen = select(paths, known, same=same)
    todo = [s for s in chosen.stages if stage is None or s in stage]
    said = {"ref": ref, "changed": len(paths), "selected": chosen.stages, "running": todo,
            "everything": chosen.everything, "paths": chosen.reasons, "same_code": chosen.same_code}
    if not as_json:
        console = Console(highlight=False)
        why = (f"{len(paths)} changed path(s) since {ref}" if paths else f"nothing changed since {ref}")
        if todo:
            console.print(f"since {ref}: {why}; running {', '.join(todo)}"
                          + (" (a change can affect every stage)" if chosen.everything else ""), markup=False, soft_wrap=True)
        elif chosen.stages:
            console.print(f"since {ref}: {why}; it can affect {', '.join(chosen.stages)}, none of them named by --stage,"
                          " so none runs", markup=False, soft_wrap=True)
        else:
            console.print(f"since {ref}: {why}; no stage can be affected, so none runs", markup=False, soft_wrap=True)
        for path, stages in list(chosen.reasons.items())[:20]:
            why = " (the same code: comments or layout only)" if path in chosen.same_code else ""
            console.print(f"  {path}: {', '.join(stages) if stages else 'no stage'}{why}", markup=False, soft_wrap=True)
        if len(chosen.reasons) > 20:
            console.print(f"  ... and {len(chosen.reasons) - 20} more", markup=False, soft_wrap=True)
    if not todo:
        if as_json:
            print(json.dumps({"verdict": "ok", "report": None, "recorded": None, "rows": [], "since": said}))
        return "ok"
    if not as_json:
        return run(todo)
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            verdict = run(todo)
    except BaseException:  # a refused --record, an interrupt: what the suite printed still comes out
        print(buffer.getvalue(), end="")
        raise
    out = buffer.getvalue()
    try:
        merged = json.loads(out)
        merged["since"] = said
        print(json.dumps(merged))
    except ValueError:  # not one JSON object: pass it on as it came
        print(out, end="")
    return verdict
