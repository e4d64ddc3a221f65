"""The runner's own per-step rules, which no spec slot holds: each test breaks one in a real
tiny-model engine (a plausible bug, patched in) and asserts the runner names it; the same program
passes on the unbroken engine."""

import inspect
import sys
import textwrap

import numpy as np
import pytest

from flightcheck.checks.conform.program import Program, Setup, Template
from flightcheck.checks.conform.runner import run_program
from flightcheck.impl.flights import FlightLifecycle
from flightcheck.impl.scheduler import Scheduler

A = Template((3,) * 40, 3, "A")
B = Template((4,) * 40, 3, "B")


def program(ops, **config):
    cfg = {"max_running": 2, "num_pages": 16, "prefill_chunk_pages": 1, **config}
    return Program(Setup(cfg, (A, B)), tuple(ops))


BURST = [("arrive", 0, 0.0, 0), ("arrive", 0, 0.0, 1), ("step", 6)]


def test_an_ignored_abort_is_named(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("step", 1), ("abort", "leader", 0)]
    assert run_program(program(ops)).ok
    monkeypatch.setattr(FlightLifecycle, "abort", lambda self, rid: None)
    out = run_program(program(ops))
    assert out.diagnosis.kind == "effect"
    assert out.diagnosis.reasons == ["no abort event for request 0; it is prefill, not aborted"]


def test_a_follower_expired_a_step_early_is_named(monkeypatch):
    assert run_program(program(BURST, follower_wait_bound=1)).ok

    def early(self):
        for request in list(self.requests.values()):
            if request.phase.value == "blocked":
                request.num_wait_steps += 1
                if request.num_wait_steps >= self.config.follower_wait_bound:  # >= for >
                    self.expire(request.request_id, "wait-bound")
    monkeypatch.setattr(FlightLifecycle, "_expire_waited_out", early)
    out = run_program(program(BURST, follower_wait_bound=1))
    assert out.diagnosis.kind == "step"
    assert out.diagnosis.reasons == ["request 1 expired after 1 blocked steps; the bound is 1"]


def test_a_token_from_a_failed_pass_is_named(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("step", 1), ("fault", "leader", 0), ("step", 1)]
    assert run_program(program(ops)).ok
    monkeypatch.setattr(np, "isfinite", lambda x: np.ones(np.shape(x), dtype=bool))  # the check forgotten
    out = run_program(program(ops))
    assert out.diagnosis.kind == "step"
    assert out.diagnosis.reasons == ["request 0's forward pass gave non-finite logits, yet it prefilled"]


def test_a_prefill_budget_not_shared_between_requests_is_named(monkeypatch):
    # A takes 2 of its 3 units in the first step; in the second its last unit leaves B one, not two.
    ops = [("arrive", 0, 0.0, 0), ("step", 1), ("arrive", 1, 0.0, 0), ("step", 1)]
    assert run_program(program(ops, prefill_chunk_pages=2)).ok
    real = Scheduler.plan_prefill
    monkeypatch.setattr(Scheduler, "plan_prefill", lambda self, r, budget: real(self, r, self.config.prefill_chunk_pages))
    out = run_program(program(ops, prefill_chunk_pages=2))
    assert out.diagnosis.kind == "step"
    assert out.diagnosis.reasons == ["the step prefilled 3 units; the budget is 2"]


def test_an_uncounted_step_is_named(monkeypatch):
    assert run_program(program(BURST)).ok
    real = Scheduler.step

    def step(self):
        produced = real(self)
        self.counters.num_forward_passes -= 1 if self.counters.num_steps == 3 else 0
        return produced
    monkeypatch.setattr(Scheduler, "step", step)
    out = run_program(program(BURST))
    assert out.diagnosis.reasons == ["the engine counts 3 steps and 2 forward passes; the runner 3 and 3"]


def test_a_release_put_off_past_the_release_point_is_named(monkeypatch):
    assert run_program(program(BURST)).ok
    real = FlightLifecycle.can_release

    def late(self, flight_id):  # the release point is reached, but the engine waits one more decode step
        leader = self.requests[self.coordinator.flights[flight_id].leader_request_id]
        return real(self, flight_id) and (not leader.phase.is_live or len(leader.output_token_ids) >= 2)

    monkeypatch.setattr(FlightLifecycle, "can_release", late)
    out = run_program(program(BURST))
    assert out.diagnosis.kind == "due"
    assert out.diagnosis.reasons == ["release(0) was due before the step returned"]


def test_a_request_that_runs_past_its_output_limit_is_named(monkeypatch):
    assert run_program(program(BURST)).ok
    real = Scheduler.can_finish

    def long(self, request):
        reason = real(self, request)
        return None if reason == "length" and len(request.output_token_ids) <= request.sampling.max_tokens else reason

    monkeypatch.setattr(Scheduler, "can_finish", long)
    out = run_program(program(BURST))
    assert out.diagnosis.kind == "due"
    assert any("has 3 outputs (max_tokens 3) and still runs after the step" in r for r in out.diagnosis.reasons)


def test_an_expiry_of_a_request_that_is_not_blocked_must_be_refused(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("step", 1), ("refuse", "expire", "unblocked", 0), ("step", 2)]
    out = run_program(program(ops))
    assert out.ok and "refuse(expire of request 0, unblocked)" in out.rules
    monkeypatch.setattr(FlightLifecycle, "can_expire", lambda self, rid: rid in self.requests)  # phase unchecked
    out = run_program(program(ops))
    assert out.diagnosis is not None and "expire" in out.diagnosis.summary
    assert out.rules[-1] == "refuse(expire of request 0, unblocked)"


def test_a_test_hook_on_a_terminated_request_must_be_refused(monkeypatch):
    from flightcheck.impl.engine import Engine

    ops = [("arrive", 0, 0.0, 0), ("step", 6), ("refuse", "hold", "terminated", 0)]
    assert run_program(program(ops)).ok
    monkeypatch.setattr(Engine, "hold", lambda self, rid: setattr(self.scheduler.requests[rid], "is_held", True))
    out = run_program(program(ops))
    assert out.diagnosis.summary == "hold(request 0) of a finished request was accepted"

    def hold_then_refuse(self, rid):  # refused, but only after the change
        self.scheduler.requests[rid].is_held = True
        self.scheduler.live(rid)
    monkeypatch.setattr(Engine, "hold", hold_then_refuse)
    out = run_program(program(ops))
    assert out.diagnosis.summary == "the refused hold of 0 changed the engine's state"


def test_a_third_of_the_seeded_programs_carry_refusals_and_are_otherwise_unchanged(monkeypatch):
    from flightcheck.checks.conform import generate
    from flightcheck.checks.conform.campaign import seeded_programs

    programs = [p.ops for p in seeded_programs(0, 150)]
    with_refusals = sum(any(op[0] == "refuse" for op in ops) for ops in programs)
    assert 30 <= with_refusals <= 70
    monkeypatch.setattr(generate, "_with_refusals", lambda side, ops: ops)
    without = [p.ops for p in seeded_programs(0, 150)]
    assert [tuple(op for op in ops if op[0] != "refuse") for ops in programs] == without


def test_an_event_its_log_format_does_not_allow_is_named(monkeypatch):
    """A page index computed with / instead of //: 2.0 equals 2, so the spec sees nothing, but a log
    written from the run is refused by validate (a count must be an integer)."""
    from flightcheck.impl.events import EventLog

    ops = [("arrive", 0, 0.0, 0), ("step", 4)]
    assert run_program(program(ops)).ok
    emit = EventLog.emit

    def floats(self, action, **fields):
        if action == "prefill":
            fields["first_page"] = float(fields["first_page"])
        return emit(self, action, **fields)
    monkeypatch.setattr(EventLog, "emit", floats)
    out = run_program(program(ops))
    assert out.diagnosis.kind == "schema"
    assert out.diagnosis.summary == ("the engine emitted an event its log format does not allow (first_page: "
                                     "must be an integer >= 0, got 0.0)")


def test_an_arrival_time_outside_the_call_is_named(monkeypatch):
    """The arrival's t, clamped at a second (max(..., 1.0) for max(..., 0.0)): still in order, but not
    when the request arrived, which is what workload --from-events replays."""
    from flightcheck.impl.events import EventLog

    ops = [("arrive", 0, 0.0, 0), ("step", 2), ("arrive", 1, 0.0, 0), ("step", 2)]
    assert run_program(program(ops)).ok
    emit = EventLog.emit

    def late(self, action, **fields):
        if action == "arrive":
            fields["t"] = max(fields["t"], 1.0)
        return emit(self, action, **fields)
    monkeypatch.setattr(EventLog, "emit", late)
    out = run_program(program(ops))
    assert out.diagnosis.kind == "order"
    assert out.diagnosis.summary == "request 0 arrived at t=1.0, outside the call that submitted it"


def test_a_request_that_runs_past_the_context_is_named(monkeypatch):
    """A fifth of the seeded programs set max_context, so some requests end at the context, not at
    max_tokens; the end-of-context test off by one (> for >=) runs a request past it."""
    from flightcheck.checks.conform.campaign import seeded_programs
    from flightcheck.impl.request import Phase

    ops = [("arrive", 0, 0.0, 0), ("step", 6)]
    assert run_program(program(ops, max_context=41)).ok
    assert 20 <= sum("max_context" in p.setup.config for p in seeded_programs(0, 200)) <= 50  # pressure programs: none

    def late(self, request):
        if request.phase is not Phase.DECODE:
            return None
        if len(request.output_token_ids) >= request.sampling.max_tokens or request.num_computed > request.max_positions:
            return "length"
        return None
    monkeypatch.setattr(Scheduler, "can_finish", late)
    out = run_program(program(ops, max_context=41))
    assert out.diagnosis.kind == "disabled" and out.diagnosis.summary == "decode(0) is not enabled in the spec"
    assert out.diagnosis.reasons == ["r0 already took 1 decode steps (max_tokens allows 1)"]


def test_a_computed_row_whose_result_is_dropped_is_named(monkeypatch):
    """After a failed row the step stops handling the others (break for continue): their rows were
    computed and thrown away, and they compute them again next step, so every page and output is
    still right; the runner counts the rows of the forward pass against the requests that moved."""
    ops = [("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("step", 1), ("fault", "running", 0), ("step", 2)]
    assert run_program(program(ops, prefill_chunk_pages=64)).ok  # both prefill in step 1, decode side by side
    source = inspect.getsource(Scheduler.step)
    assert source.count("continue") == 1
    namespace = {}
    exec(textwrap.dedent(source.replace("continue", "break")), vars(sys.modules[Scheduler.__module__]), namespace)
    monkeypatch.setattr(Scheduler, "step", namespace["step"])
    out = run_program(program(ops, prefill_chunk_pages=64))
    assert out.diagnosis.kind == "step"
    assert out.diagnosis.reasons == ["the step's forward pass computed 2 rows, but 1 requests prefilled, decoded "
                                     "or failed: a computed row's result was dropped"]


def test_a_client_expiry_logged_with_another_reason_is_named(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("arrive", 0, 0.0, 1), ("step", 1), ("expire", 0), ("step", 4)]
    assert run_program(program(ops)).ok
    expire = FlightLifecycle.expire
    monkeypatch.setattr(FlightLifecycle, "expire", lambda self, rid, reason="client": expire(self, rid, "deadline"))
    out = run_program(program(ops))
    assert out.diagnosis.summary == "expire(request 1) by the client logged the reason 'deadline'"


def test_an_engine_call_that_never_returns_is_a_stuck_run_not_a_hung_check(monkeypatch):
    """Allocation that waits for pages without evicting any (the eviction call deleted) loops forever
    once the pool is full; the run names the call instead of hanging the check."""
    from flightcheck.checks.conform import watchdog

    ops = [("arrive", 0, 0.0, 0), ("step", 6), ("arrive", 1, 0.0, 0), ("step", 6)]
    assert run_program(program(ops, num_pages=4, max_running=1)).ok

    def never_evicts(self, request, num):
        while not self.pool.can_allocate(num):
            pass
        request.block_table.extend(self.pool.allocate(num))
        self.counters.num_pages_allocated += num
        request.num_pages_reserved -= num
    monkeypatch.setattr(Scheduler, "_allocate", never_evicts)
    monkeypatch.setitem(watchdog.CALL_LIMIT_SECONDS, "tiny", 1.0)
    out = run_program(program(ops, num_pages=4, max_running=1))
    assert out.diagnosis.kind == "stuck"
    assert out.diagnosis.summary == "the engine did not return from step() x6 within 1 s"
    assert out.diagnosis.properties == ["eventually_terminates"]


def test_a_terminated_request_must_say_why_and_when_it_ended(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("step", 1), ("abort", "leader", 0), ("step", 1)]
    assert run_program(program(ops)).ok
    end = FlightLifecycle._end
    monkeypatch.setattr(FlightLifecycle, "_end", lambda self, request, phase, reason: end(
        self, request, phase, "cancelled" if reason == "abort" else reason))
    out = run_program(program(ops))
    assert out.diagnosis.reasons == ["r0 (engine 0) is aborted but its finish reason is 'cancelled'"]


def test_a_page_key_entry_left_behind_is_named(monkeypatch):
    """Release deletes a page key's entry once its last flight is gone; left behind (an empty set), it
    changes no choice, but the index grows with every flight a server ever had."""
    from flightcheck.impl.coordinator import Coordinator

    ops = [("arrive", 0, 0.0, 0), ("arrive", 0, 0.0, 1), ("step", 6)]
    assert run_program(program(ops)).ok
    release = Coordinator.release

    def keeps_entries(self, flight_id):
        keys = self.flights[flight_id].page_keys
        followers = release(self, flight_id)
        for key in keys:
            self.by_page_key.setdefault(key, set())
        return followers
    monkeypatch.setattr(Coordinator, "release", keeps_entries)
    out = run_program(program(ops))
    assert out.diagnosis.reasons[0].startswith("the page-key index lists flights [] under key ")


def test_a_promoted_follower_must_read_as_the_leader(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("arrive", 0, 0.0, 1), ("arrive", 0, 0.0, 2), ("step", 1),
           ("abort", "leader", 0), ("step", 6)]
    assert run_program(program(ops, leader_loss="promote")).ok
    promote = FlightLifecycle.promote

    def keeps_role(self, flight_id):
        followers = list(self.coordinator.flights[flight_id].follower_request_ids)
        promote(self, flight_id)
        self.requests[followers[0]].role = "follower"
    monkeypatch.setattr(FlightLifecycle, "promote", keeps_role)
    out = run_program(program(ops, leader_loss="promote"))
    assert "r1 (engine 1) leads flight 0 but its role is 'follower'" in out.diagnosis.reasons


def test_a_failed_request_must_carry_its_error(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("step", 1), ("fault", "running", 0), ("step", 1)]
    assert run_program(program(ops)).ok
    fail = FlightLifecycle.fail

    def silent(self, request, error):
        fail(self, request, error)
        request.error = None
    monkeypatch.setattr(FlightLifecycle, "fail", silent)
    out = run_program(program(ops))
    assert out.diagnosis.reasons == ["r0 (engine 0) failed but carries no error for its client"]


def test_a_token_the_step_does_not_return_is_named(monkeypatch):
    """step() returns each request's new token (what a streaming client is sent); one left out of the
    list that step() builds is a token its client never gets, whatever the engine's state says."""
    ops = [("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("step", 6)]
    assert run_program(program(ops)).ok
    step = Scheduler.step
    monkeypatch.setattr(Scheduler, "step", lambda self: step(self)[1:])
    out = run_program(program(ops))
    assert out.diagnosis.summary == "step() returned other new tokens than the step produced"
