"""Every table that interprets the spec's actions outside the spec has one entry per action, no more, no
less: adding an action to the spec fails this test, naming each table that still lacks it (the steps are
in docs/architecture.md, "Adding an action")."""

import pytest

from flightcheck.checks.conform.counters import COUNT
from flightcheck.checks.conform.explain import _EXPLAIN
from flightcheck.checks.conform.adapter import ADAPTER
from flightcheck.checks.conform.schema import EVENT_FIELDS
from flightcheck.checks.conform.validator import PAYLOAD
from flightcheck.checks.explore.picture import ACTION_STYLE
from flightcheck.checks.report.lifelines import ACTION_MESSAGES
from flightcheck.checks.report.sequence import LABELS
from flightcheck.impl.events import ACTIONS
from flightcheck.spec.actions import ACTION_NAMES

REGISTRIES = {
    "checks/conform/schema.py EVENT_FIELDS (the event log's fields)": EVENT_FIELDS,
    "checks/conform/validator.py PAYLOAD (an event's details against the spec's step)": PAYLOAD,
    "checks/conform/counters.py COUNT (the engine's counters, recounted)": COUNT,
    "checks/conform/adapter.py ADAPTER (each action's engine guard and command, for the replay and the engine stage)": ADAPTER,
    "checks/conform/explain.py _EXPLAIN (why a guard is false, in words)": _EXPLAIN,
    "checks/report/lifelines.py ACTION_MESSAGES (the sequence diagram's arrows)": ACTION_MESSAGES,
    "checks/report/sequence.py LABELS (the words on those arrows)": LABELS,
    "checks/explore/picture.py ACTION_STYLE (edge colours in the state graph)": ACTION_STYLE,
}


@pytest.mark.parametrize("where", sorted(REGISTRIES))
def test_each_registry_has_exactly_one_entry_per_spec_action(where):
    keys = set(REGISTRIES[where])
    assert not set(ACTION_NAMES) - keys, f"{where} lacks {sorted(set(ACTION_NAMES) - keys)}"
    assert not keys - set(ACTION_NAMES), f"{where} has entries for no spec action: {sorted(keys - set(ACTION_NAMES))}"


def test_the_engine_emits_the_spec_actions():
    assert tuple(ACTIONS) == tuple(ACTION_NAMES)


def test_a_registry_entry_is_what_runs():
    # The counters of an abort come from COUNT["abort"]: replacing the entry changes what runs.
    from flightcheck.checks.conform import counters

    calls = []
    saved = counters.COUNT["abort"]
    counters.COUNT["abort"] = lambda ref, seen: calls.append(seen.i)
    try:
        from types import SimpleNamespace
        spec = SimpleNamespace(view=lambda s: s)
        counters.ReferenceCounters(16, True).observe(spec, {}, SimpleNamespace(name="abort", arg=2), None, None)
    finally:
        counters.COUNT["abort"] = saved
    assert calls == [2]


# The named facts about actions (spec/actions.py) that code outside the spec asks instead of comparing an
# action's name with a literal: each holds spec action names only, and the roles give each action one.
FACTS = ("ENGINE_ACTIONS", "ENVIRONMENT_ACTIONS", "TERMINATIONS", "SUBMISSIONS", "ADMISSIONS", "PROMPT_PASSES",
         "TOKEN_PASSES", "FORWARD_PASSES", "CACHE_PUBLICATIONS", "FOLLOWER_RELEASES", "HANDOVERS", "FLIGHT_ACTIONS",
         "COMPLETIONS", "SLOT_ACTIONS", "CHOSEN_BY_ENGINE", "CANCELS", "NOTICES", "EXPIRIES", "PASS_FAILURES")


@pytest.mark.parametrize("fact", FACTS)
def test_each_action_fact_names_spec_actions(fact):
    from flightcheck.spec import actions

    members = set(getattr(actions, fact))
    assert members, f"spec/actions.py {fact} is empty"
    assert not members - set(ACTION_NAMES), f"spec/actions.py {fact} names no spec action: {sorted(members - set(ACTION_NAMES))}"


def test_the_roles_give_each_action_exactly_one():
    from flightcheck.spec.actions import ROLES

    for name in ACTION_NAMES:
        assert sum(name in role for role in ROLES) == 1, f"{name} has {sum(name in role for role in ROLES)} roles"
    assert set().union(*ROLES) == set(ACTION_NAMES)


def test_the_workload_readers_facts_are_the_specs():
    # checks/workload may not import the spec: its reader of engine logs names the facts it asks itself.
    from flightcheck.checks.workload import trace
    from flightcheck.spec import actions

    for fact in ("SUBMISSIONS", "TOKEN_PASSES", "PROMPT_PASSES"):
        assert getattr(trace, fact) == getattr(actions, fact), f"checks/workload/trace.py {fact} differs from the spec's"


def test_the_program_operations_facts_name_operations():
    from flightcheck.checks.conform.program import NOTICE_OPS, OP_NAMES, PICKING_OPS, SUBMIT_OPS

    for name, fact in (("SUBMIT_OPS", SUBMIT_OPS), ("PICKING_OPS", PICKING_OPS), ("NOTICE_OPS", NOTICE_OPS)):
        assert fact and fact <= set(OP_NAMES), f"checks/conform/program.py {name} names no operation: {sorted(fact - set(OP_NAMES))}"
