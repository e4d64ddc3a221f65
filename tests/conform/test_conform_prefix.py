"""The engine conforms to the prompt-tree spec in lockstep under prefix coordination: questions over one
document, a conversation's turns, every release point, publication and leader-loss policy, cancels of
leaders waiting via another flight, expiries, small pools; the tiny model in full and SmolLM2 in a short
run. Each run's events go through the spec and the engine's abstract state (``via`` included) is compared
with the spec's after every event."""

import random

import pytest

from flightcheck.checks.conform.campaign import run_conformance
from flightcheck.checks.conform.program import KINDS, Program, Setup, Template
from flightcheck.checks.conform.prompts import class_tokens
from flightcheck.checks.conform.results import ConformOptions
from flightcheck.checks.conform.runner import ProgramRun, run_program
from flightcheck.impl import model_file
from flightcheck.spec.scenario import LEADER_LOSSES, PUBLICATIONS, RELEASES

from switches import SLOW  # noqa: E402


def doc_templates(rng: random.Random) -> tuple[Template, ...]:
    """A document of two or three pages, questions of different lengths after it, a conversation turn that
    extends one question, and a repeat: prompts of one tree."""
    doc = class_tokens(0, 16 * rng.randint(2, 3), 256)
    questions = [doc + class_tokens(q + 1, rng.choice((5, 21, 37)), 256) for q in range(2)]
    turn = questions[0] + class_tokens(7, rng.choice((9, 20)), 256)
    prompts = questions + [turn, questions[1]]
    return tuple(Template(tuple(p), rng.randint(1, 3), f"P{k}") for k, p in enumerate(prompts))


def doc_program(seed: int) -> Program:
    rng = random.Random(seed)
    templates = doc_templates(rng)
    config = {"coordination": "prefix", "release": rng.choice(RELEASES), "publication": rng.choice(PUBLICATIONS),
              "leader_loss": rng.choice(LEADER_LOSSES), "max_running": rng.randint(1, 3),
              "prefill_chunk_pages": rng.choice((1, 2, 64)), "num_pages": rng.randint(12, 40),
              "min_shared_pages": rng.choice((1, 1, 2, 3)), "follower_wait_bound": rng.choice((None, None, 2))}
    ops: list = [("arrive", t, 0.0, rng.randint(0, 3)) for t in rng.sample(range(len(templates)), len(templates))]
    for _ in range(rng.randint(3, 12)):
        kind = rng.choice(("step", "step", "arrive", "abort", "expire", "notify"))
        if kind == "step":
            ops.append(("step", rng.randint(1, 3)))
        elif kind == "arrive":
            ops.append(("arrive", rng.randrange(len(templates)), 0.0, rng.randint(0, 3)))
        elif kind == "abort":
            ops.append(("abort", rng.choice(KINDS), rng.randint(0, 3)))
        elif kind == "expire":
            ops.append(("expire", rng.randint(0, 3)))
        else:
            ops.append(("notify", rng.choice(("unknown", "terminated")), rng.randint(0, 5)))
    return Program(Setup(config, templates), tuple(ops))


@pytest.mark.parametrize("seed", range(60 if SLOW else 20))
def test_tiny_engine_conforms_on_questions_over_one_document(seed):
    out = run_program(doc_program(seed))
    assert out.ok, out.diagnosis.format()
    assert out.actions.count("arrive(0)") == 1 and out.steps > 0


def test_the_document_programs_do_wait_via_other_prompts_flights():
    # The campaign is only worth its verdict if requests really wait via other prompts' flights.
    waited = released = 0
    for seed in range(20):
        program = doc_program(seed)
        run = ProgramRun(program.setup)
        for op in program.ops:
            run.execute(op)
        run.drain()
        events = run.engine.events.events
        waited += any(e["action"] == "arrive" and e.get("via") is not None for e in events)
        released += any(e["action"] == "release" and e.get("waiters") for e in events)
    assert waited >= 8 and released >= 5, (waited, released)


def test_hypothesis_campaign_under_prefix_coordination_conforms():
    result = run_conformance(ConformOptions(coordination="prefix", examples=60 if SLOW else 15, max_rules=25, seed=11))
    assert result.ok, result.failure.format()
    assert result.runs >= 10 and result.events > 2 * result.runs


@pytest.mark.slow
@pytest.mark.skipif(not model_file.default_path().exists(), reason="SmolLM2 model file not fetched (scripts/setup.sh)")
def test_real_model_conforms_under_prefix_coordination():
    for seed in range(6 if SLOW else 1):
        out = run_program(doc_program(100 + seed), "smollm2")
        assert out.ok, out.diagnosis.format()


@pytest.mark.parametrize("name", ["doc2", "doc3", "doc3-abort", "doc3-evict", "doc3-pool", "doc3-expire", "chat2", "tri-abort"])
def test_programs_bound_to_a_tree_scenario_conform_under_every_coordination(name):
    # Bound to the scenario, states land on its explored graph; the second question arriving first names
    # the shared page after a class none of whose requests has arrived (the abstraction once missed it).
    from flightcheck.checks.conform.generate import scenario_program
    for k in range(4):
        for policy in ({}, {"release": "on-completion"}, {"coordination": "single-flight"}, {"coordination": "none"}):
            out = run_program(scenario_program(random.Random(f"{name}:{k}"), name, policy))
            assert out.ok, out.diagnosis.format()


def _via_program(*ops) -> Program:
    """Q2 arrives while Q1 (the same two-page document, another question) computes: it waits via Q1's flight."""
    doc = class_tokens(0, 32, 256)
    templates = (Template(tuple(doc + class_tokens(1, 5, 256)), 2, "Q1"),
                 Template(tuple(doc + class_tokens(2, 21, 256)), 2, "Q2"))
    config = {"coordination": "prefix", "release": "on-completion", "publication": "incremental",
              "leader_loss": "promote", "max_running": 2, "prefill_chunk_pages": 1, "num_pages": 24}
    return Program(Setup(config, templates), (("arrive", 0, 0.0, 0), ("step", 1), ("arrive", 1, 0.0, 0)) + ops)


@pytest.mark.parametrize("action, ops", [
    ("promote", (("arrive", 1, 0.0, 1), ("abort", "leader", 1), ("step", 3))),   # its follower takes the wait over
    ("expire", (("expire", 0), ("step", 3))),                                     # it stops waiting
])
def test_a_wait_via_a_flight_handed_on_or_given_up_must_name_its_shared_pages(monkeypatch, action, ops):
    from flightcheck.impl.events import EventLog

    program = _via_program(*ops)
    run = ProgramRun(program.setup)
    for op in program.ops:
        run.execute(op)
    assert [e["shared_pages"] for e in run.engine.events.events if e["action"] == action] == [2]
    emit = EventLog.emit

    def without(self, name, **fields):
        if name == action:
            fields.pop("shared_pages", None)
        return emit(self, name, **fields)
    monkeypatch.setattr(EventLog, "emit", without)
    out = run_program(program)
    assert out.diagnosis.kind == "payload"
    assert out.diagnosis.reasons[0].startswith("shared_pages of the ") and out.diagnosis.reasons[0].endswith(
        "engine None, spec 2")


@pytest.mark.parametrize("leader_loss, freed", [("promote", 1), ("release-all", 2)])
def test_a_lost_leaders_waiters_handed_on_conform_in_lockstep(leader_loss, freed):
    # Three questions over one document, the document's leader cancelled before it computes anything and
    # with no follower: under promote its flight hands the two waiters on (one goes, the other waits via
    # it), under release-all both go. The lockstep run holds the engine's state equal to the spec's.
    doc = class_tokens(0, 32, 256)
    templates = tuple(Template(tuple(doc + class_tokens(q + 1, 5 + 16 * q, 256)), 2, f"Q{q}") for q in range(3))
    config = {"coordination": "prefix", "release": "after-prefill", "publication": "incremental",
              "leader_loss": leader_loss, "max_running": 2, "prefill_chunk_pages": 1, "num_pages": 24}
    ops = (("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("arrive", 2, 0.0, 0), ("abort", "leader", 0), ("step", 12))
    program = Program(Setup(config, templates), ops)
    out = run_program(program)
    assert out.ok, out.diagnosis.format()
    run = ProgramRun(program.setup)
    for op in program.ops:
        run.execute(op)
    release = next(e for e in run.engine.events.events if e["action"] == "release")
    assert (release["flight"], len(release["waiters"])) == (0, freed)
