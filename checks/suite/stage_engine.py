"""The ``engine`` stage of ``flightcheck check``: the engine's own guard/command pairs against the spec.

Every engine state the engine's own commands reach within a bound is checked against the spec's guard and
update (:mod:`flightcheck.checks.symbolic`); a counterexample names the state, the slot that differs, and
replays as a conformance program. The stage's units of work are (bound, configuration) pairs, so that a
cluster spreads the configurations of one bound; a bound's rows fold its configurations' runs, one row
per spec action.

For example::

    >>> engine_items(quick=True)[:4]
    [('2,3', 'single-flight'), ('2,3', 'promote'), ('2,3', 'prefix'), ('3,3', 'single-flight')]
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage
from flightcheck.checks.suite.context import Context, parallel

# The engine's guard/command pairs against the spec at every engine state within a bound, one state per
# class of states equal up to the names of pages and requests and to how the requests that hold nothing
# ended (checks/symbolic/statekey.py says why that is sound). N=2 requests over 3 pages takes seconds
# (every action taken, evict included) but never has a choice among several waiters; N=3 over 3 pages is
# the smallest bound where prefix coordination meets three requests (a lost leader's heir chosen among two
# waiters, a request choosing between two flights) and promotion picks one follower of two: 2,600 /
# 3,800 / 11,700 states under single-flight / promote / prefix (9 / 12 / 35 s of CPU), each configuration
# its own item so that a cluster spreads them (BENCHMARKS.md, "The engine stage").
ENGINE_BOUNDS_QUICK: tuple[str, ...] = ("2,3", "3,3")
# The full check adds 2,6 (every template at N=2 with room to spare), 3,4 (evictions among three
# requests), 4,3 (four requests under every configuration: an heir chosen among three waiters, releases
# in order among several, prefix coordination over three flights; 16,800 / 27,200 / 158,000 states, 67 /
# 102 / 545 s of CPU) and 3,4,branches: two prompts branching off a common first page
# (checks/symbolic/bound.py, BRANCHES), the smallest bound where an eviction chooses between two cached leaves, so that taking a referenced one (the mutant
# evict-referenced) shows; the default tree's shareable pages form one chain and never do. Under
# single-flight only (the mistake shows through a released follower's pins; the other configurations
# add minutes and no mistake of the project's set).
ENGINE_BOUNDS: tuple[str, ...] = ("2,3", "3,3", "2,6", "3,4", "4,3", "3,4,branches")
ENGINE_CONFIGS: dict[str, tuple[str, ...]] = {"3,4,branches": ("single-flight",)}


def engine_items(quick: bool) -> list[tuple[str, str]]:
    """The engine stage's units of work: (bound, configuration) pairs, in the order their rows fold."""
    from flightcheck.checks.symbolic.bound import parse_bound

    bounds = ENGINE_BOUNDS_QUICK if quick else ENGINE_BOUNDS
    return [(b, c) for b in bounds for c in ENGINE_CONFIGS.get(b) or parse_bound(b).config_names]


def _engine_one(item: tuple[str, str], first: bool = False) -> Any:
    from flightcheck.checks.symbolic.bound import parse_bound
    from flightcheck.checks.symbolic.check import enumerate_config

    return enumerate_config(parse_bound(item[0]), item[1], first=first)


def _engine_one_first(item: tuple[str, str]) -> Any:
    return _engine_one(item, first=True)


def _engine_rows(bound_text: str, runs: list[Any]) -> list[Row]:
    from flightcheck.checks.symbolic.bound import parse_bound
    from flightcheck.checks.symbolic.check import fold_runs

    configs = ENGINE_CONFIGS.get(bound_text)
    bound = parse_bound(bound_text)
    bound = bound.with_configs(*configs) if configs else bound
    where = f" ({', '.join(configs)})" if configs else ""
    out = []
    for r in fold_runs(bound, runs):
        if r.verdict == "verified":
            detail = (f"verified at {r.states:,} engine states ({r.commands:,} commands, {r.events:,} events)"
                      if r.commands or r.events else f"verified, but never taken at the {r.states:,} states of the bound")
        elif r.counterexample is not None:
            detail = "counterexample: " + r.counterexample.format().replace("\n", " | ")
        else:
            detail = f"unfinished after {r.states:,} states: not verified"
        out.append(Row("engine", f"engine = spec: {r.action} at {r.bound}{where}", r.verdict == "verified", detail,
                       r.seconds, {"engine": r.to_json()}))
    return out


def engine_stage(ctx: Context) -> list[Row]:
    """A row per spec action and bound: the engine's own guard and command agree with the spec's guard and
    update at every engine state the engine's commands reach within the bound (:mod:`flightcheck.checks.symbolic`);
    a counterexample names the state, the slot that differs, and replays as a conformance program. Each
    (bound, configuration) pair is one item of work; a bound's rows fold its configurations' runs."""
    items = engine_items(ctx.quick)
    runs = parallel(_engine_one_first if ctx.first_failure else _engine_one, items, ctx)
    by_bound: dict[str, list[Any]] = {}
    for (bound_text, _config), run in zip(items, runs):
        by_bound.setdefault(bound_text, []).append(run)
    return [row for bound_text, rs in by_bound.items() for row in _engine_rows(bound_text, rs)]


STAGE = Stage(
    "engine", engine_stage,
    depends=("spec/**", "impl/*.py", "checks/symbolic/**", "checks/conform/**", "checks/explore/**"),
    kills=("impl/*.py",), kill_rank=1,
)
