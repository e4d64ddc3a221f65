"""The engine's own guard/command pairs against the spec at every engine state in a bound (checks/symbolic):
the clean engine passes, each of the project's engine mutants is caught at the smallest bound that
exposes it with a replayable program, and CrossHair drives the same harness."""

import pytest

from flightcheck.checks.conform.mutants import MUTANTS
from flightcheck.checks.conform.program import Program
from flightcheck.checks.symbolic.bound import BRANCHES, CONFIGS, TEMPLATES, Bound, parse_bound
from flightcheck.checks.symbolic.check import check_engine
from flightcheck.checks.symbolic.counterexample import replay_program
from flightcheck.checks.symbolic.exhaustive import enumerate_states
from flightcheck.checks.symbolic.harness import Command, build_engine, copy_engine, execute, state_key
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.spec.actions import ACTION_NAMES

from switches import SLOW  # noqa: E402

# The smallest bound (in the order N=1,M=3; N=2,M=3 ... N=3,M=6) at which each mutant is caught, and the
# action whose obligation catches it first (scripts/bench_symbolic.py's ladder found them).
CAUGHT = {
    "follower-admitted-early": ("2,3", "arrive"),
    "publish-before-compute": ("1,3", "publish"),
    "via-earliest-flight": ("3,3", "arrive"),
    "forget-released": ("1,3", "release"),
    "leak-ref-on-abort": ("1,3", "abort"),
    "strand-followers": ("1,3", "abort"),
    "accept-unknown-termination": ("1,3", "notify"),
    "unpinned-release": ("2,3", "abort"),
    "expire-forgets": ("2,3", "expire"),
    "admit-ignores-reservations": ("2,3", "admit"),
    "waiter-pins-leader-tail": ("2,3", "abort"),
    "waiter-unpinned": ("2,3", "abort"),
    "promote-loses-followers": ("3,3", "abort"),
    "heir-earliest-waiter": ("3,3", "abort"),
}
# Caught by the engine's own finish-reason contract (checks/symbolic/finishing.py), which the spec abstracts
# away (its finish takes any stop and keeps no reason): asked of can_finish at the first decoding state, in
# the simplest context that shows each mistake (an EOS output; a matched stop string). The program carries
# the context (an EOS template, a stop template), so its conformance run fails under the mutant too.
CAUGHT_BY_FINISH = {"eos-ignored": ("1,3", "eos"), "stop-as-length": ("1,3", "stop string matched")}
# Caught only over the branching templates (checks/symbolic/bound.py, BRANCHES: A B +16 and A C +1, two
# cached leaves under one parent): it needs a referenced cached leaf older than an unreferenced one under
# memory pressure, and the default tree's shareable pages form one chain (P0 shares A; P1 and P2 share A
# and AC), so no bound over it exposes it (N=3,M=4 single-flight covered whole with the mutant
# installed, 79 s: verified). The whole enumeration to the catch takes 15-30 s, so the default run checks
# the obligations along the path it finds (the same states, the same check) and FLIGHTCHECK_SLOW=1 runs
# the enumeration itself.
CAUGHT_ON_BRANCHES = {"evict-referenced": ("3,4,branches", "evict")}
# The shortest path the enumeration finds at 3,4,branches under single-flight: a leader (P0) and its
# follower, and P1; the leader publishes A and AB and is aborted (its follower is released with pins on
# A and AB), P1 hits A, publishes AC and is aborted, the follower is admitted (AC counted as evictable)
# and computes its third page; its decode then needs a fourth page, and the eviction must take AC.
BRANCH_PATH = ("arrive 0", "arrive 0", "arrive 1", "admit", "prefill 0", "publish 0", "prefill 0", "publish 0",
               "abort 0", "admit", "prefill 2", "publish 2", "abort 2", "admit", "prefill 1")


# Caught by the engine's own LRU contract (checks/symbolic/recency.py), which the spec abstracts away: the
# conformance run of its program passes, since the conform room's recency rule is checked at evictions and
# the program ends before one.
CAUGHT_BY_RECENCY = {"lru-stale-hit": ("2,3", "abort")}


def test_every_mutant_is_either_caught_or_explained():
    assert set(CAUGHT) | set(CAUGHT_BY_FINISH) | set(CAUGHT_ON_BRANCHES) | set(CAUGHT_BY_RECENCY) == set(MUTANTS)


def test_a_hit_that_does_not_refresh_its_page_breaks_the_lru_contract():
    bound_text, action = CAUGHT_BY_RECENCY["lru-stale-hit"]
    rows = check_engine(parse_bound(bound_text), mutant="lru-stale-hit")
    found = [r for r in rows if r.counterexample is not None]
    assert action in {r.action for r in found}
    ce = next(r for r in found if r.action == action).counterexample
    assert ce.finding.kind == "recency" and [str(c) for c in ce.path] == [
        "arrive(t0)", "arrive(t0)", "admit()", "prefill(0)", "publish(0)"], ce.format()
    # The leader's abort releases its follower with pins on the published page: the pin is not a use.
    assert "page 0 gained holder(s) [1] but was not made recently used" in ce.finding.summary, ce.format()
    Program.from_json(ce.program)  # the clean engine passes this bound: test_the_clean_engine_passes_...


@pytest.mark.parametrize("name", sorted(CAUGHT_BY_FINISH))
def test_a_wrong_finish_reason_breaks_the_finish_contract(name):
    bound_text, context = CAUGHT_BY_FINISH[name]
    rows = check_engine(parse_bound(bound_text), mutant=name)
    found = [r for r in rows if r.counterexample is not None]
    assert [r.action for r in found] == ["finish"]
    ce = found[0].counterexample
    assert ce.finding.kind == "finish-reason" and str(ce.finding.finishing) == context, ce.format()
    # The first state where a request decodes: one prefill of its two prompt pages, a publication, the other.
    assert [str(c) for c in ce.path] == ["arrive(t0)", "admit()", "prefill(0)", "publish(0)", "prefill(0)"]
    program = Program.from_json(ce.program)
    assert (program.setup.eos_template, program.setup.stop_template) == ((0, None) if context == "eos" else (None, 0))
    assert ce.replay.startswith("fails") and "visible_after_compute" in ce.replay, ce.replay
    assert replay_program(program) == (False, "the conformance run of the program passes (the step's order does "
                                              "not retrace the path)")  # the clean engine ends it right


def test_the_finish_contract_holds_for_the_clean_engine_in_every_context():
    from flightcheck.checks.symbolic.finishing import CONTEXTS, finish_problem

    bound = Bound(1, 3)
    eng = build_engine(bound, "single-flight")
    for text in ("arrive 0", "admit", "prefill 0", "publish 0", "prefill 0"):
        execute(eng, bound, _command(text))
    assert len(CONTEXTS) == 36 and len(set(CONTEXTS)) == 36
    assert [(str(c), c.expected()) for c in CONTEXTS[:7]] == [  # one factor at a time first
        ("nothing", None), ("eos", "eos"), ("ignore_eos", None), ("stop string matched", "stop"),
        ("stop string not matched", None), ("max_tokens reached", "length"), ("context full", "length")]
    assert finish_problem(copy_engine(eng), 0) is None
    # The contract's precedence: EOS before a stop string before length.
    first = {str(c): c.expected() for c in CONTEXTS}
    assert first["eos, stop string matched, max_tokens reached"] == "eos"
    assert first["ignore_eos, stop string matched, context full"] == "stop"
    assert first["eos, ignore_eos, stop string not matched, context full"] == "length"


def test_the_clean_engine_passes_at_the_default_bound():
    # Two prompts of the tree under every configuration (every action but promote taken, evictions
    # included); FLIGHTCHECK_SLOW=1 also every template at N=2, M=6 (about 100 s).
    rows = check_engine(Bound(2, 3, templates=TEMPLATES[:2]), replay=False)
    assert [r.action for r in rows] == list(ACTION_NAMES)
    assert {r.verdict for r in rows} == {"verified"}, [r.line() for r in rows if not r.verified]
    assert {r.action for r in rows if r.commands} == set(ACTION_NAMES) - {"promote"}
    assert next(r for r in rows if r.action == "promote").events > 0  # inside aborts and failures of leaders
    if SLOW:
        assert {r.verdict for r in check_engine(Bound(2, 6), replay=False)} == {"verified"}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_each_mutant_is_caught_at_its_smallest_bound(name):
    bound_text, action = CAUGHT[name]
    rows = check_engine(parse_bound(bound_text), mutant=name)
    found = [r for r in rows if r.counterexample is not None]
    assert found, f"{name} not caught at {bound_text}"
    assert action in {r.action for r in found}
    ce = found[0].counterexample
    Program.from_json(ce.program)  # a program `flightcheck conform --replay` reads
    assert ce.replay.startswith("fails"), ce.replay  # ... and whose conformance run fails under the mutant


def _command(text: str) -> Command:
    name, *arg = text.split()
    return Command(name, int(arg[0]) if arg else -1)


def test_evict_referenced_is_caught_where_two_cached_branches_meet():
    from flightcheck.checks.conform.mutants import get_mutant
    from flightcheck.checks.symbolic.counterexample import to_program
    from flightcheck.checks.symbolic.obligations import check_state, namer_for

    bound_text, action = CAUGHT_ON_BRANCHES["evict-referenced"]
    bound = parse_bound(bound_text).with_configs("single-flight")
    path = [_command(c) for c in BRANCH_PATH]
    with get_mutant("evict-referenced").patched():
        eng = build_engine(bound, "single-flight")
        namer = namer_for(eng)
        for command in path:  # every state on the way conforms: the mistake shows only at the eviction
            result = check_state(eng, bound, namer)
            assert not result.findings, [f.format() for f in result.findings]
            assert command in result.ran
            execute(eng, bound, command)
        pool = eng.scheduler.pool
        found = check_state(eng, bound, namer).findings
    # The eviction itself, and the decode that allocates through it, both take the pinned AB.
    assert {f.action for f in found} == {action} and found[0].command == Command("evict")
    assert "in_use_never_evicted" in found[0].properties, found[0].format()
    # Two cached leaves (AB pinned by the follower, the newer AC unreferenced); the clean engine takes AC.
    assert len(pool.cached) == 3 and list(pool.num_cached_children.values()) == [2]
    clean = build_engine(bound, "single-flight")
    for command in path:
        execute(clean, bound, command)
    assert not check_state(clean, bound, namer_for(clean)).findings
    victim = clean.scheduler.can_evict()
    page = clean.scheduler.pool.pages[victim]
    assert page.ref_count == 0 and page.token_ids == tuple(BRANCHES[1][0][PAGE_SIZE:2 * PAGE_SIZE])  # AC
    program = to_program(bound, "single-flight", path, Command("evict"))
    failed, said = replay_program(program, "evict-referenced")
    assert failed and "in_use_never_evicted" in said, said
    failed, said = replay_program(program)
    assert not failed, said  # the clean engine follows the same program


def test_the_clean_engine_passes_over_two_branches():
    # Every action but promote is taken over the branching templates at N=2, M=4, evictions included;
    # the full check's engine stage covers N=3, M=4 (single-flight), where evict-referenced shows.
    rows = check_engine(parse_bound("2,4,branches"), replay=False)
    assert {r.verdict for r in rows} == {"verified"}, [r.line() for r in rows if not r.verified]
    assert {r.action for r in rows if r.commands} == set(ACTION_NAMES) - {"promote"}
    assert rows[0].bound == "N=2,M=4,branches"


def test_the_full_engine_stage_runs_the_bound_that_catches_it():
    # check's engine stage covers 3,4,branches under single-flight (not --quick), the configuration the
    # catch is found in, and three requests under every configuration in --quick already.
    from flightcheck.checks.suite.stage_engine import ENGINE_BOUNDS, ENGINE_BOUNDS_QUICK, ENGINE_CONFIGS, engine_items

    assert CAUGHT_ON_BRANCHES["evict-referenced"][0] in ENGINE_BOUNDS
    assert ENGINE_CONFIGS == {"3,4,branches": ("single-flight",)} and ENGINE_BOUNDS_QUICK == ("2,3", "3,3")
    assert str(parse_bound("3,4,branches").with_configs("single-flight")) == "N=3,M=4,branches"
    # Every bound a mutant is caught at (but the branches') lies within one --quick runs (N,M covers every
    # state with at most N arrivals over M pages), under every configuration.
    quick = [parse_bound(b) for b in ENGINE_BOUNDS_QUICK]
    for b, _ in CAUGHT.values():
        c = parse_bound(b)
        assert any(c.num_requests <= q.num_requests and c.num_pages == q.num_pages for q in quick), b
    assert {c for b, c in engine_items(quick=True) if b == "3,3"} == {"single-flight", "promote", "prefix"}
    # The full check reaches four requests under every configuration (issue 43).
    assert {c for b, c in engine_items(quick=False) if parse_bound(b).num_requests >= 4} == set(CONFIGS)


def test_the_quick_engine_stage_fails_on_a_wrong_heir_and_names_the_abort(monkeypatch):
    # The stage as `flightcheck check --quick --stage engine` runs it (in this process, stopping at the
    # first failure as `mutate` does): a lost leader's flight that makes its earliest waiter the heir, not
    # the one sharing the most pages, needs three requests under prefix coordination with promotion. Only
    # the quick items of that configuration run here (the others pass whole: about 35 s more).
    from flightcheck.checks.suite import stage_engine
    from flightcheck.checks.suite.context import Context

    items = stage_engine.engine_items(quick=True)
    monkeypatch.setattr(stage_engine, "engine_items", lambda quick: [i for i in items if i[1] == "prefix"])
    with MUTANTS["heir-earliest-waiter"].patched():
        rows = stage_engine.engine_stage(Context(quick=True, first_failure=True))
    assert not all(r.ok for r in rows)
    found = [r for r in rows if r.detail.startswith("counterexample:")]
    assert [r.item for r in found] == ["engine = spec: abort at N=3,M=3"], [r.item for r in found]
    ce = found[0].evidence["engine"]["counterexample"]
    assert ce["config"] == "prefix" and len(ce["path"]) == 3, ce  # three arrivals, then the leader's abort
    assert not [r for r in found if "N=2,M=3" in r.item]  # two requests never have a choice of heir


@pytest.mark.slow
def test_evict_referenced_is_caught_by_the_enumeration_over_two_branches():
    # FLIGHTCHECK_SLOW=1: the whole check at 3,4,branches with the mutant installed (15-30 s), as
    # `flightcheck prove --engine --bound 3,4,branches --mutant evict-referenced` runs it; by default
    # the path it finds is checked state by state (test_evict_referenced_is_caught_where_two_...).
    if not SLOW:
        pytest.skip("the whole enumeration runs under FLIGHTCHECK_SLOW=1; the default run checks its path")
    bound_text, action = CAUGHT_ON_BRANCHES["evict-referenced"]
    rows = check_engine(parse_bound(bound_text), mutant="evict-referenced")
    found = [r for r in rows if r.counterexample is not None]
    assert [r.action for r in found] == [action]
    ce = found[0].counterexample
    assert ce.config == "single-flight" and ce.path == [_command(c) for c in BRANCH_PATH]
    assert "in_use_never_evicted" in ce.finding.properties
    assert ce.replay.startswith("fails"), ce.replay


def test_a_counterexample_replays_as_a_conformance_program_that_fails_only_under_the_mutant():
    rows = check_engine(parse_bound("2,3"), mutant="expire-forgets")
    ce = next(r.counterexample for r in rows if r.counterexample is not None)
    assert ce.finding.diff == [("rel[1]", 1, 0)]
    assert ce.replay.startswith("fails"), ce.replay
    failed, said = replay_program(Program.from_json(ce.program))
    assert not failed, said


def test_a_run_out_of_time_is_unfinished_never_verified():
    rows = check_engine(Bound(2, 6), time_limit=0.0, replay=False)
    assert {r.verdict for r in rows} == {"unfinished"}


def test_states_are_named_up_to_page_ids_and_copies_are_independent():
    b = Bound(2, 6)
    eng = build_engine(b, "single-flight")
    for c in (Command("arrive", 0), Command("admit"), Command("prefill", 0)):
        execute(eng, b, c)
    clone = copy_engine(eng)
    assert state_key(clone) == state_key(eng)
    execute(clone, b, Command("prefill", 0))
    assert state_key(clone) != state_key(eng) and eng.scheduler.requests[0].num_computed == 16


def test_enumeration_pins_its_state_counts():
    # Up to page and request names and to how the requests that hold nothing ended (tests/symbolic/
    # test_symbolic_symmetry.py pins the counts without those reductions): 502 before the key held a live
    # request's prompt and the renaming came, 527 with the renaming, 271 with tombstones (37 and 32 at N=1).
    assert enumerate_states(Bound(1, 3), "single-flight").num_states == 32
    assert enumerate_states(Bound(2, 3, templates=TEMPLATES[:2]), "single-flight").num_states == 271


def test_a_bound_is_checked():
    with pytest.raises(ValueError, match="N,M"):
        parse_bound("3")
    with pytest.raises(ValueError, match="at least 3"):
        Bound(2, 2)


@pytest.mark.slow
def test_crosshair_drives_the_same_harness():
    # CrossHair runs the real engine over symbolic command codes; about 4 s a path on this machine, so the
    # default run refutes one mutant at depth 1 and FLIGHTCHECK_SLOW=1 also confirms the clean engine.
    pytest.importorskip("crosshair")
    from flightcheck.checks.conform.mutants import get_mutant
    from flightcheck.checks.symbolic.crosshair_run import crosshair_check

    with get_mutant("accept-unknown-termination").patched():
        run = crosshair_check(Bound(1, 3), "single-flight", depth=1, time_limit=60)
    assert run.findings and run.findings[0][1].action == "notify"
    if SLOW:
        run = crosshair_check(Bound(1, 3), "single-flight", depth=2, time_limit=300)
        assert run.complete and not run.findings


@pytest.mark.slow
def test_the_clean_engine_passes_at_three_requests():
    # A leader and two followers (a promotion that must keep the other follower waiting). The default run
    # checks the first states of three requests of one prompt (M=3) for a few seconds (no counterexample,
    # promotions among them); FLIGHTCHECK_SLOW=1 covers N=3, M=3 whole: the whole prompt tree under every
    # configuration (56,385 states, about 5 minutes, before states were taken up to request names).
    bound = Bound(3, 3) if SLOW else Bound(3, 3, templates=TEMPLATES[:1], configs=("promote",))
    rows = check_engine(bound, replay=False, time_limit=None if SLOW else 5.0)
    assert not [r.line() for r in rows if r.counterexample is not None]
    assert next(r for r in rows if r.action == "promote").events > 0
    if SLOW:
        assert {r.verdict for r in rows} == {"verified"}, [r.line() for r in rows if not r.verified]
