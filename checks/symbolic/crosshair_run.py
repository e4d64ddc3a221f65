"""CrossHair (symbolic execution of Python over z3) driving the same harness over symbolic command codes.

The function CrossHair analyses, :func:`path_conforms`, takes a list of ``depth`` integers, builds an
engine from the empty one by the engine's own commands (at each state the code picks one of the
commands whose engine guard holds and that conformed, by comparing the code with each index in turn, so
the engine itself only ever sees concrete values), and checks every obligation of
:func:`~flightcheck.checks.symbolic.obligations.check_state` at every state along the way. Its
postcondition is that it returns True; CrossHair explores the paths of the codes with z3 and either
confirms it over all paths (``verified``), finds codes that make it False (a ``counterexample``, replayed
concretely to get the path and the finding) or runs out of time (``unfinished``, never reported as
verified). What it covers: every command sequence of length ``depth`` (fewer when no command is
enabled), i.e. every state reachable in ``depth`` commands, with no merging of equal states.

CrossHair runs the real engine code, unmodified; the only concession is that the symbolic codes choose
among concrete commands by equality tests (no symbolic value reaches the engine, so its dicts, hashes
and sets stay concrete). It needs the optional ``crosshair-tool`` package.

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> run = crosshair_check(Bound(1, 3), "single-flight", depth=2, time_limit=60)  # doctest: +SKIP
    >>> run.complete, run.findings  # doctest: +SKIP
    (True, [])
"""

from __future__ import annotations

import ast
import re
import time
from typing import Any

from flightcheck.checks.symbolic.bound import Bound
from flightcheck.checks.symbolic.exhaustive import Enumeration
from flightcheck.checks.symbolic.harness import Command, build_engine, state_key
from flightcheck.checks.symbolic.obligations import Finding, check_state, namer_for

# What the analysed function reads (CrossHair calls it with the codes only).
_TARGET: dict[str, Any] = {}


def walk(bound: Bound, config: str, codes: list[int], stats: Enumeration | None = None,
         seen: set | None = None) -> tuple[list[Command], Finding | None]:
    """Follow ``codes`` from the empty engine, checking every state on the way: the commands taken and
    the first finding (None if every obligation held). A code past the number of enabled commands ends
    the walk (so shorter paths are covered too)."""
    engine = build_engine(bound, config)
    namer = namer_for(engine)
    path: list[Command] = []
    for code in [*codes, -1]:
        result = check_state(engine, bound, namer)
        if stats is not None:
            _count(stats, result, state_key(engine), seen if seen is not None else set())
        if result.findings:
            return path, result.findings[0]
        chosen = None
        for k, (command, after) in enumerate(result.successors):
            if code == k:  # a branch CrossHair explores both ways; the engine sees only concrete values
                chosen = (command, after)
        if chosen is None:
            return path, None
        path.append(chosen[0])
        engine = chosen[1]
    return path, None


def _count(stats: Enumeration, result: Any, key: Any, seen: set) -> None:
    """Add a state's figures to ``stats`` the first time a path visits it."""
    if key in seen:
        return
    seen.add(key)
    stats.tally(result)


def path_conforms(codes: list[int]) -> bool:
    """
    pre: len(codes) == _TARGET["depth"]
    pre: all(0 <= c < 64 for c in codes)
    post: __return__
    """
    t = _TARGET
    t["paths"] += 1
    return walk(t["bound"], t["config"], codes, t["stats"], t["seen"])[1] is None


def crosshair_check(bound: Bound, config: str, *, depth: int = 4, time_limit: float = 60.0) -> Enumeration:
    """CrossHair over :func:`path_conforms` with ``depth`` codes, at most ``time_limit`` seconds: an
    :class:`~flightcheck.checks.symbolic.exhaustive.Enumeration` whose ``complete`` says whether CrossHair
    confirmed the postcondition over all paths, with the distinct states its paths visited and the
    finding of the codes it refuted it with (replayed concretely)."""
    from crosshair.core_and_libs import analyze_function, run_checkables
    from crosshair.options import AnalysisKind, AnalysisOptionSet
    from crosshair.statespace import MessageType

    stats = Enumeration(config)
    _TARGET.update(bound=bound, config=config, depth=depth, stats=stats, paths=0, seen=set())
    start = time.perf_counter()
    options = AnalysisOptionSet(analysis_kind=[AnalysisKind.PEP316], per_condition_timeout=time_limit,
                                per_path_timeout=time_limit, max_uninteresting_iterations=10**9)
    messages = run_checkables(analyze_function(path_conforms, options))
    stats.wall_seconds = time.perf_counter() - start
    stats.paths = _TARGET["paths"]
    for m in messages:
        if m.state == MessageType.CONFIRMED:
            stats.complete = True
        elif m.state in (MessageType.POST_FAIL, MessageType.EXEC_ERR, MessageType.POST_ERR):
            codes = _codes_of(m.message)
            if codes is not None:
                path, finding = walk(bound, config, codes)
                if finding is not None:
                    stats.findings.append((path, finding))
            if not stats.findings:
                stats.note = m.message
    return stats


def _codes_of(message: str) -> list[int] | None:
    """The codes in CrossHair's ``when calling path_conforms([...])``, or None."""
    found = re.search(r"path_conforms\((\[[^\]]*\])\)", message)
    return ast.literal_eval(found.group(1)) if found else None
