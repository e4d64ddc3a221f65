"""The symmetry reduction of the engine check (checks/symbolic/harness.py, ``state_key``): states equal up
to the names of their requests share a key, the reduced state counts are pinned, every state of a class
behaves alike (the reduction's soundness, checked at small bounds), and mutants stay caught."""

from collections import defaultdict, deque

import pytest

from flightcheck.checks.symbolic.bound import TEMPLATES, Bound
from flightcheck.checks.symbolic.check import check_engine
from flightcheck.checks.symbolic.exhaustive import enumerate_states
from flightcheck.checks.symbolic.harness import Command, build_engine, execute, state_key
from flightcheck.checks.symbolic.obligations import check_state, namer_for


def _engine(bound, config, *commands):
    eng = build_engine(bound, config)
    for name, arg in commands:
        execute(eng, bound, Command(name, arg))
    return eng


def test_states_equal_up_to_request_names_share_a_key():
    b = Bound(2, 6)
    one = _engine(b, "single-flight", ("arrive", 0), ("arrive", 1), ("abort", 0))
    other = _engine(b, "single-flight", ("arrive", 1), ("arrive", 0), ("abort", 1))
    assert state_key(one) == state_key(other)
    assert state_key(one, symmetry=False) != state_key(other, symmetry=False)


def test_the_prompt_of_a_live_request_is_in_its_key():
    # Before the reduction the key left it out: a released follower of P0 and one of P1, each waiting
    # alone after its leader's abort, shared a key though their prefills differ.
    b = Bound(2, 3, templates=TEMPLATES[:2])
    p0 = _engine(b, "single-flight", ("arrive", 0), ("arrive", 0), ("abort", 0))
    p1 = _engine(b, "single-flight", ("arrive", 1), ("arrive", 1), ("abort", 0))
    assert state_key(p0, symmetry=False) != state_key(p1, symmetry=False)


def test_the_arrival_order_a_via_choice_reads_is_kept():
    # Under prefix coordination a new leader waits via the flight whose leader arrived first: a P1 leader
    # with a P1 follower and a P2 leader that arrived after both, or between them, are different states
    # (once the P1 leader is lost, its follower leads and arrived after, or before, the P2 leader).
    b = Bound(3, 6, templates=TEMPLATES[1:])
    after = _engine(b, "prefix", ("arrive", 0), ("arrive", 0), ("arrive", 1))
    between = _engine(b, "prefix", ("arrive", 0), ("arrive", 1), ("arrive", 0))
    assert state_key(after) != state_key(between)
    # ... while single-flight reads no order of IDs: a P1 pair and a P2 leader, in either order, agree.
    b = Bound(3, 6, templates=TEMPLATES[1:], configs=("single-flight",))
    after = _engine(b, "single-flight", ("arrive", 0), ("arrive", 0), ("arrive", 1), ("abort", 2))
    first = _engine(b, "single-flight", ("arrive", 1), ("arrive", 0), ("arrive", 0), ("abort", 0))
    assert state_key(after) == state_key(first)


def test_reduced_state_counts_are_pinned():
    # Two requests of the prompt tree, with both reductions, with the renaming only (664), and without
    # either (705). Larger bounds are pinned by the figures in BENCHMARKS.md ("The engine stage").
    assert enumerate_states(Bound(2, 3), "single-flight").num_states == 372
    assert enumerate_states(Bound(2, 3), "single-flight", tombstones=False).num_states == 664
    assert enumerate_states(Bound(2, 3), "single-flight", symmetry=False).num_states == 705


def test_states_that_differ_in_how_a_request_that_holds_nothing_ended_share_a_key():
    b = Bound(2, 3)
    aborted = _engine(b, "single-flight", ("arrive", 0), ("abort", 0), ("arrive", 0))
    failed = _engine(b, "single-flight", ("arrive", 0), ("admit", -1), ("fail", 0), ("arrive", 0))
    assert state_key(aborted) == state_key(failed)
    assert state_key(aborted, tombstones=False) != state_key(failed, tombstones=False)
    # A lost leader whose flight is still open (its follower blocked, its flight handed on) is no tombstone.
    b = Bound(3, 3, configs=("promote",))
    promoted = _engine(b, "promote", ("arrive", 0), ("arrive", 0), ("arrive", 0), ("abort", 0))
    assert len(state_key(promoted)[-2]) == 3


def test_a_notice_bug_that_depends_on_how_a_request_ended_is_caught_through_the_merged_endings(monkeypatch):
    # The key forgets how a request that holds nothing ended, so the class of "one request, terminated"
    # is checked at its first state (an abort: arrive, abort). An engine that accepts a termination
    # notice for a finished request only is still caught there: each tombstone's notice runs under every
    # ending.
    from flightcheck.impl.request import Phase
    from flightcheck.impl.scheduler import Scheduler

    live = Scheduler.live

    def accepts_finished(self, request_id):
        request = self.requests.get(request_id)
        return request if request is not None and request.phase is Phase.FINISHED else live(self, request_id)

    monkeypatch.setattr(Scheduler, "live", accepts_finished)
    run = enumerate_states(Bound(1, 3), "single-flight", first=True)
    (path, finding), = run.findings
    assert [str(c) for c in path] == ["arrive(t0)", "abort(0)"] and finding.action == "notify", finding.format()
    assert "ended finished" in finding.summary, finding.summary


def _classes(bound, config, limit):
    """Breadth first without the reduction (at most ``limit`` states): per class of the reduced key, the
    (successor classes by command name, findings) of each of its states."""
    engine = build_engine(bound, config)
    namer = namer_for(engine)
    seen, frontier, out = {state_key(engine, symmetry=False)}, deque([engine]), defaultdict(set)
    for num_states in range(limit):
        if not frontier:
            break
        eng = frontier.popleft()
        result = check_state(eng, bound, namer)
        after = frozenset((c.name, state_key(a)) for c, a in result.successors)
        out[state_key(eng)].add((after, frozenset((f.action, f.kind) for f in result.findings)))
        for _c, a in result.successors:
            k = state_key(a, symmetry=False)
            if k not in seen:
                seen.add(k)
                frontier.append(a)
    return out, num_states


@pytest.mark.parametrize("bound, config, limit", [
    (Bound(2, 3), "single-flight", 10_000),
    (Bound(2, 3), "prefix", 10_000),
    # Three requests of two prompts under prefix coordination (the first states, where a follower and a
    # leader of another prompt arrive in either order): 300 of about 15,000 states.
    (Bound(3, 3, templates=TEMPLATES[1:]), "prefix", 300),
])
def test_every_state_of_a_class_has_the_same_successor_classes_and_findings(bound, config, limit):
    # The reduction's soundness, by brute force: were a renaming it allows to change what the engine or
    # the spec does, two states of one class would lead to different classes (or findings).
    classes, num_states = _classes(bound, config, limit)
    split = {k: v for k, v in classes.items() if len(v) > 1}
    assert not split, f"{len(split)} classes whose states differ"
    assert len(classes) < num_states  # some states were renamings of others


@pytest.mark.parametrize("mutant, bound, action", [
    ("promote-loses-followers", Bound(3, 3), "abort"),  # needs a leader and two followers of one prompt
    ("via-earliest-flight", Bound(3, 3), "arrive"),  # reads the leaders' arrival order
    ("follower-admitted-early", Bound(2, 3), "arrive"),
])
def test_the_reduction_keeps_mutants_caught(mutant, bound, action):
    rows = check_engine(bound, mutant=mutant, replay=False)
    assert action in {r.action for r in rows if r.counterexample is not None}
