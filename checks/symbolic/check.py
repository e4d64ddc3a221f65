"""The entry point: every spec action's obligations over every engine state in a bound, one row per action.

:func:`check_engine` runs the enumeration (or CrossHair, :mod:`~flightcheck.checks.symbolic.crosshair_run`)
under each configuration of the bound (those a mutant's mistake shows under, when one is installed) and
folds the configurations into one :class:`~flightcheck.checks.symbolic.results.ActionResult` per spec
action. ``promote`` has no command of its own in the engine (a lost leader's flight is handed on inside
the ``abort``/``fail`` that loses it), so its row counts the promotions checked inside those commands.

For example::

    >>> from flightcheck.checks.symbolic.bound import Bound
    >>> rows = check_engine(Bound(1, 3), replay=False)
    >>> sorted({r.verdict for r in rows}), [r.action for r in rows][:3]
    (['verified'], ['arrive', 'admit', 'prefill'])
"""

from __future__ import annotations

from flightcheck.checks.symbolic.bound import CONFIGS, Bound
from flightcheck.checks.symbolic.counterexample import replay_program, to_program
from flightcheck.checks.symbolic.exhaustive import Enumeration, enumerate_states
from flightcheck.checks.symbolic.results import ActionResult, Counterexample
from flightcheck.spec.actions import ACTION_NAMES, HANDOVERS, NOTICES

METHODS = ("exhaustive", "crosshair")


def mutant_configs(bound: Bound, mutant: str) -> tuple[str, ...]:
    """The bound's configurations under which ``mutant``'s mistake can show (its policy's settings)."""
    from flightcheck.checks.conform.mutants import get_mutant

    wanted = dict(get_mutant(mutant).policy)
    names = tuple(c for c in bound.config_names
                  if all(CONFIGS[c].get(k, v) == v for k, v in wanted.items() if k in ("coordination", "leader_loss")))
    return names or bound.config_names


def check_engine(bound: Bound, *, mutant: str | None = None, method: str = "exhaustive", first: bool | None = None,
                 time_limit: float | None = None, replay: bool = True, depth: int = 2) -> list[ActionResult]:
    """One :class:`ActionResult` per spec action, over every engine state in ``bound``.

    ``mutant``: a name of :data:`~flightcheck.checks.conform.mutants.MUTANTS`, installed for the run (and
    only its configurations checked). ``method``: ``exhaustive`` (every reachable state, enumerated) or
    ``crosshair`` (CrossHair over symbolic command codes, :func:`~flightcheck.checks.symbolic.crosshair_run.crosshair_check`).
    ``first`` (default: when a mutant is given): stop at the first counterexample (the other actions are
    then unfinished). ``time_limit``: seconds per configuration, past which the run is unfinished.
    ``replay``: run each counterexample's conformance program (the tiny MLX model) and record what it says.
    ``depth``: CrossHair only, the commands each path takes (every state within that many commands).
    """
    first = mutant is not None if first is None else first  # (enumerate_config checks ``method``)
    configs = mutant_configs(bound, mutant) if mutant else bound.config_names
    runs: list[Enumeration] = []
    for config in configs:
        runs.append(enumerate_config(bound, config, mutant=mutant, method=method, first=first,
                                     time_limit=time_limit, depth=depth))
        if first and runs[-1].findings:
            break
    return fold_runs(bound, runs, mutant=mutant, method=method, replay=replay)


def enumerate_config(bound: Bound, config: str, *, mutant: str | None = None, method: str = "exhaustive",
                     first: bool = False, time_limit: float | None = None, depth: int = 2) -> Enumeration:
    """One configuration's run of :func:`check_engine` (``mutant`` installed for it): a unit of work that
    a cluster can run apart from the others, folded back into rows by :func:`fold_runs`."""
    from contextlib import nullcontext

    from flightcheck.checks.conform.mutants import get_mutant
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    with get_mutant(mutant).patched() if mutant else nullcontext():
        if method == "crosshair":
            from flightcheck.checks.symbolic.crosshair_run import crosshair_check
            return crosshair_check(bound, config, depth=depth, time_limit=time_limit or 60.0)
        return enumerate_states(bound, config, first=first, time_limit=time_limit)


def fold_runs(bound: Bound, runs: list[Enumeration], *, mutant: str | None = None, method: str = "exhaustive",
              replay: bool = True) -> list[ActionResult]:
    """One :class:`ActionResult` per spec action from the configurations' runs (in ``bound``'s order); with
    ``replay``, each counterexample's conformance program is run and what it says recorded."""
    from contextlib import nullcontext

    from flightcheck.checks.conform.mutants import get_mutant
    with get_mutant(mutant).patched() if mutant else nullcontext():
        rows = _rows(bound, method, runs, mutant)  # the paths are rebuilt under the mutant too
    if replay:
        for row in rows:
            ce = row.counterexample
            if ce is not None:
                from flightcheck.checks.conform.program import Program
                failed, said = replay_program(Program.from_json(ce.program), mutant)
                ce.replay = said if failed else f"not reproduced: {said}"
    return rows


def _rows(bound: Bound, method: str, runs: list[Enumeration], mutant: str | None) -> list[ActionResult]:
    complete = all(r.complete for r in runs) and len(runs) == len(mutant_configs(bound, mutant) if mutant
                                                                   else bound.config_names)
    rows = []
    for name in ACTION_NAMES:
        row = ActionResult(name, str(bound), method)
        for run in runs:
            row.states += run.states.get(name, 0)
            row.commands += run.commands.get(name, 0)
            row.events += run.events.get(name, 0)
            row.seconds += run.seconds.get(name, 0.0)
            found = next(((path, f) for path, f in run.findings if f.action == name), None)
            if found is not None and row.counterexample is None:
                path, finding = found
                program = to_program(bound, run.config, path, finding.command, finding.finishing)
                row.counterexample = Counterexample(run.config, path, finding, program.to_json())
        if row.counterexample is not None:
            row.verdict = "counterexample"
        elif complete:
            row.verdict = "verified"
        if row.verdict == "verified" and not row.commands and not row.events:
            row.notes.append("vacuous: never enabled in this bound")
        if name in HANDOVERS:
            row.notes.append("checked inside abort and fail: the engine hands a flight on in the call that loses "
                             "its leader")
        if name in NOTICES:
            row.notes.append("Engine.abort of a terminated or unknown ID: refused with nothing changed")
        rows.append(row)
    return rows
