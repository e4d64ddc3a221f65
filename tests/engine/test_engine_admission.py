"""Admission under load: a long prompt behind a deep queue (issue 43, fault 8), counted in engine steps.

The tiny model with capacity 2 and a 2-page prefill budget; eight closed-loop clients of one-page prompts
keep the queue deeper than two turnovers, then a 10-page prompt arrives (5 steps of prefill alone).
Nothing here is timed: the bound is on admissions and steps, the figure in seconds is in BENCHMARKS.md.
"""

import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine

CAPACITY, BUDGET, CLIENTS = 2, 2, 8
LONG = [(7 * i) % 251 + 1 for i in range(160)]  # 10 pages
ALONE_STEPS = -(-len(LONG) // (16 * BUDGET))  # its prefill steps with the engine to itself


def short(client: int, n: int) -> list[int]:
    return [client + 1, n % 200 + 1, 3, 4, 5]  # one page, distinct per request: no cache hits


def engine(**overrides) -> Engine:
    return Engine.tiny(EngineConfig(**{"max_running": CAPACITY, "prefill_chunk_pages": BUDGET, "num_pages": 256}
                                    | overrides))


def long_under_load(eng: Engine, warmup_steps: int = 12) -> tuple[int, list[list[dict]]]:
    """Runs the closed loop, adds the long prompt, steps until its first token: its ID, and the events
    of each step from its arrival on."""
    sched, live, n = eng.scheduler, {}, [0]

    def resubmit() -> None:
        for client in range(CLIENTS):
            if client not in live or not sched.requests[live[client]].phase.is_live:
                n[0] += 1
                live[client] = eng.add_request(short(client, n[0]), {"max_tokens": 3 + client % 4})

    resubmit()
    for _ in range(warmup_steps):
        eng.step()
        resubmit()
    assert sched.is_queue_deep, "the load must keep the queue deeper than two turnovers"
    rid = eng.add_request(LONG, {"max_tokens": 2})
    steps = []
    while sched.requests[rid].first_token_time is None:
        first = len(eng.events.events)
        eng.step()
        steps.append(eng.events.events[first:])
        resubmit()
    return rid, steps


def admissions_before(rid: int, steps: list[list[dict]]) -> int:
    return [e["request"] for step in steps for e in step if e["action"] == "admit"].index(rid)


def test_a_long_prompt_behind_a_deep_queue_is_admitted_by_the_second_admission():
    rid, steps = long_under_load(engine())
    assert admissions_before(rid, steps) <= 1


def test_once_admitted_the_long_prefill_advances_every_step_to_its_first_token():
    rid, steps = long_under_load(engine())
    admitted = next(k for k, step in enumerate(steps) if any(e["action"] == "admit" and e["request"] == rid
                                                             for e in step))
    prefills = [[e for e in step if e["action"] == "prefill" and e["request"] == rid] for step in steps[admitted:]]
    assert all(len(p) == 1 for p in prefills), "a step passed without the long prompt's prefill"
    assert sum(p[0]["num_units"] for p in prefills) == -(-len(LONG) // 16) and prefills[-1][0]["first_token"]
    assert len(prefills) <= ALONE_STEPS + 1  # a short prompt admitted just before it may take a unit once


def test_in_arrival_order_only_the_long_prompt_waits_behind_the_whole_queue():
    """The engine before the fix (admission in arrival order, patched in): the same load fails the bound."""
    eng = engine()
    eng.scheduler.admission_order = lambda: list(eng.scheduler.waiting)
    rid, steps = long_under_load(eng)
    assert admissions_before(rid, steps) > 2 * CAPACITY


def test_a_shallow_queue_keeps_arrival_order():
    eng = engine(max_running=1)
    first = eng.add_request(short(0, 1), {"max_tokens": 4})
    eng.step()  # the first is running; two wait, within two turnovers of one slot
    queued = [eng.add_request(short(1, 2), {"max_tokens": 1}), eng.add_request(LONG, {"max_tokens": 1})]
    assert not eng.scheduler.is_queue_deep
    eng.run()
    admits = [e["request"] for e in eng.events.events if e["action"] == "admit"]
    assert admits == [first, *queued]


@pytest.mark.parametrize("capacity", [1, 2])
def test_from_a_deep_queue_every_other_admission_goes_to_the_oldest(capacity):
    """Long prompts cannot starve short ones: the lanes alternate, so a short request at most doubles
    its wait in arrival order."""
    eng = engine(max_running=capacity)
    for k in range(4 * capacity + 2):  # short and long arrive in turn
        eng.add_request(short(k, k) if k % 2 == 0 else [k + 1] + LONG[: 32 + 16 * k], {"max_tokens": 1})
    order: list[tuple[int, int, bool, int]] = []  # (admitted, the oldest then, the queue was deep, the longest)
    sched = eng.scheduler
    original = sched.admit

    def admit(admission):
        order.append((admission.request.request_id, sched.waiting[0].request_id, sched.is_queue_deep,
                      max(sched.waiting, key=lambda r: r.num_tokens).request_id))
        return original(admission)

    sched.admit = admit
    eng.run()
    deep = [o for o in order if o[2]]
    assert len(deep) >= 3
    for k, (admitted, oldest, _deep, longest) in enumerate(deep):
        assert admitted == (longest if k % 2 == 0 else oldest)
