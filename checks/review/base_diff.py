"""What ``flightcheck diff --base REF`` does: one scenario's graph at REF against the working tree, drawn as one.

The comparison ``check --baseline`` makes for every default scenario, for one scenario, one policy and
one design variant: REF is checked out into a temporary worktree and each side explores the graph with
its own code in its own process (:func:`~flightcheck.checks.review.baseline.summarise_sides` with
``one=``), the two graphs are compared by state keys
(:func:`~flightcheck.checks.review.graphdiff.compare_item`: states and edges added and removed, the first
change with the path to it, verdicts and counterexamples that moved) and, with ``render``, drawn as one
(:mod:`~flightcheck.checks.review.drawing`: added green, removed red). As with ``check --baseline``, the
candidate is the working tree as it is, uncommitted changes included and named. The exit status is 1 when
a verdict got worse and 0 otherwise (a behaviour change alone is shown, not failed); every
:class:`~flightcheck.checks.review.errors.ReviewError` (no such commit, not a repository, a baseline that
cannot be imported or lacks the scenario) is one line and exit 2.

For example::

    >>> describe_request({"scenario": "burst2", "policy": {"release": "on-completion"}, "variant": "correct"})
    'burst2, release=on-completion'
    >>> describe_request({"scenario": "burst2", "policy": {}, "variant": "early-release"})
    'burst2, its own policy, variant early-release'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flightcheck.checks.review.errors import ReviewError


def describe_request(request: dict[str, Any]) -> str:
    """The scenario, policy changes and variant of a request, in a few words."""
    policy = ",".join(f"{k}={v}" for k, v in request["policy"].items()) or "its own policy"
    variant = "" if request.get("variant", "correct") == "correct" else f", variant {request['variant']}"
    return f"{request['scenario']}, {policy}{variant}"


def make_scenario_review(root: Path, ref: str, request: dict[str, Any]) -> tuple[dict[str, Any], tuple[dict, dict]]:
    """The review of one graph (``request``: see :func:`~flightcheck.checks.review.summary.one_item`) of the
    working tree at ``root`` against ``ref``, and the two graphs (baseline, candidate) for drawing."""
    from flightcheck.checks.review.baseline import summarise_sides
    from flightcheck.checks.review.gitrepo import uncommitted
    from flightcheck.checks.review.graphdiff import compare_item
    from flightcheck.checks.review.present import outcome

    dirty = uncommitted(root)
    sides = summarise_sides(root, ref, one=request)
    [base], [cand] = sides.baseline["items"], sides.candidate["items"]
    item, regressions = compare_item(base, cand)
    verdict, status = outcome({"regressions": regressions, "changed": item["changed"]}, strict=False)
    review = {"verdict": verdict, "exit": status, "request": request,
              "baseline": {"ref": ref, "commit": sides.commit, "origin": sides.baseline["origin"]},
              "candidate": {"root": str(root), "uncommitted": dirty, "origin": sides.candidate["origin"]},
              "seconds": round(sides.seconds, 2), "cpu_seconds": round(sides.cpu_seconds, 2),
              "diff": item, "regressions": regressions}
    return review, (base, cand)


def to_lines(review: dict[str, Any]) -> list[str]:
    """The review of one graph as lines of plain text."""
    from flightcheck.checks.review.present import change_lines, counts

    base, cand, item = review["baseline"], review["candidate"], review["diff"]
    lines = [f"{describe_request(review['request'])}: baseline {base['ref']} ({base['commit'][:10]}) "
             f"against the working tree {cand['root']}"]
    if cand["uncommitted"]:
        lines.append(f"note: the candidate includes uncommitted changes ({len(cand['uncommitted'])} paths: "
                     + ", ".join(cand["uncommitted"][:5]) + (", ..." if len(cand["uncommitted"]) > 5 else "") + ")")
    lines.append(counts(item))
    lines += change_lines(item)
    lines += [f"regression: {r}" for r in review["regressions"]]
    lines.append({"regressed": f"REGRESSED: a verdict got worse (exit {review['exit']})",
                  "changed": "behaviour changed, no verdict got worse (exit 0)",
                  "same": "no behaviour change: the graph, its verdicts and counterexamples are the baseline's (exit 0)",
                  }[review["verdict"]])
    return lines


def base_diff_command(ref: str, request: dict[str, Any], *, render: Path | None, force: bool, as_json: bool,
                      folder: Path | None = None) -> int:
    """``diff --base REF``: compare, print (text or ``as_json``), draw to ``render``; the exit status."""
    from rich.console import Console

    from flightcheck.checks.errors import usage_error
    from flightcheck.checks.explore.picture import MAX_NODES, RenderError
    from flightcheck.checks.explore.render import write_picture
    from flightcheck.checks.review.drawing import build_union, union_size
    from flightcheck.checks.review.gitrepo import toplevel

    try:
        root = toplevel(folder or Path.cwd())
        review, (base, cand) = make_scenario_review(root, ref, request)
    except ReviewError as error:
        raise usage_error(str(error).splitlines()[0] if str(error) else type(error).__name__) from None
    if render is not None:
        union = union_size(base, cand)
        if union > MAX_NODES and not force:
            raise usage_error(f"the two graphs have {union} states together, more than the {MAX_NODES} a picture "
                              "stays readable with; pass --force to draw it anyway, or leave out --render")
        try:
            write_picture(build_union(base, cand, (ref, "the working tree")), render)
        except RenderError as error:
            raise usage_error(str(error)) from None
    review["render"] = str(render) if render is not None else None
    if as_json:
        print(json.dumps(review))
    else:
        console = Console(highlight=False)
        for line in to_lines(review) + ([f"picture written to {render}"] if render is not None else []):
            console.print(line, markup=False, soft_wrap=True)
    return review["exit"]
