"""Running a conformance program against the real engine, every event checked by the online monitor.

:class:`ProgramRun` builds the engine a :class:`~flightcheck.checks.conform.program.Setup` describes, puts
a :class:`~flightcheck.checks.conform.monitor.Monitor` on it (bound to the setup's scenario when it has
one, so every state lands on that scenario's explored graph), and executes operations one at a time:
the Hypothesis machine calls :meth:`ProgramRun.execute` rule by rule, :func:`run_program` runs a whole
program. After every operation the engine's abstract state is compared with the spec's; a step that
does nothing while requests are live is a deadlock; a bogus termination notice must be refused with the
engine's state unchanged; at the end the engine is drained and every request must terminate.

Whatever goes wrong becomes a :class:`~flightcheck.checks.conform.diagnosis.Diagnosis` in the outcome;
nothing the engine raises escapes, and a failure found while draining is a failure like any other.

For example::

    >>> from flightcheck.checks.conform.program import Program, Setup, Template
    >>> setup = Setup({"max_running": 2, "num_pages": 8, "prefill_chunk_pages": 1}, (Template((3,) * 40, 2, "A"),))
    >>> out = run_program(Program(setup, (("arrive", 0, 0.0, 0), ("arrive", 0, 0.0, 1), ("step", 3))))
    >>> out.ok, out.actions[:4]
    (True, ['arrive(0)', 'arrive(1)', 'admit(0)', 'prefill(0)'])
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.engines import build_engine, first_token, text_codec
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.checks.conform.program import KINDS, REFUSALS, Op, Program, Setup, describe_op
from flightcheck.checks.conform.watchdog import CALL_LIMIT_SECONDS, EngineHang, deadline
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.errors import EngineError, UnknownRequestError
from flightcheck.impl.request import Phase
from flightcheck.impl.sampling import SamplingParams
from flightcheck.spec.actions import (CANCELS, EXPIRIES, FOLLOWER_RELEASES, FORWARD_PASSES, HANDOVERS, PASS_FAILURES,
                                       PROMPT_PASSES, SLOT_ACTIONS, SUBMISSIONS, TOKEN_PASSES)

MAX_DRAIN_STEPS = 300
FEATURES = ("followers_released", "leaders_lost_in_prefill", "capacity_full", "evictions", "aborts",
            "promotions", "expiries", "failures", "pins")
# The feature an event counts once, by its action (a release counts its followers instead).
_COUNTED_AS = {**dict.fromkeys(HANDOVERS, "promotions"), **dict.fromkeys(EXPIRIES, "expiries"),
               **dict.fromkeys(SLOT_ACTIONS, "evictions"), **dict.fromkeys(PASS_FAILURES, "failures")}


@dataclass
class RunOutcome:
    """What one run did and found: the diagnosis (None when it conformed), the rules as people read
    them, the spec actions the engine took, and counts."""

    program: Program
    diagnosis: Diagnosis | None
    rules: list[str]
    actions: list[str]
    steps: int = 0
    events: int = 0
    features: dict[str, int] = field(default_factory=dict)
    spec: Any = None

    @property
    def ok(self) -> bool:
        """The engine conformed throughout."""
        return self.diagnosis is None


class ProgramRun:
    """One engine under its monitor, driven operation by operation."""

    def __init__(self, setup: Setup, model: str = "tiny") -> None:
        self.setup = setup
        self.model = model
        self.config = EngineConfig(**setup.config)
        eos = [] if setup.eos_template is None else [first_token(model, setup.templates[setup.eos_template].tokens)]
        self.engine = build_engine(model, self.config, eos)
        self.stop: tuple[str, ...] = ()  # the stop template's stop string
        if setup.stop_template is not None:
            first = first_token(model, setup.templates[setup.stop_template].tokens)
            self.stop = (text_codec(model).decode([first, first]),)
        scenario = policy = None
        if setup.scenario is not None:
            from flightcheck.spec.scenario import SCENARIOS
            from flightcheck.checks.conform.policy_map import policy_of
            scenario = SCENARIOS[setup.scenario].with_policy(**setup.policy) if setup.policy else SCENARIOS[setup.scenario]
            policy = policy_of(self.config)
        self.monitor = Monitor(self.engine, policy, scenario=scenario)
        self.rules: list[str] = [setup.describe()]
        self.ops: list[Op] = []
        self.steps = 0
        self.features = {k: 0 for k in FEATURES}
        self.diagnosis: Diagnosis | None = None
        self.arrived: set[int] = set()
        self.faulted: set[int] = set()  # requests whose next forward pass fails
        self.waited: dict[int, int] = {}  # steps each request spent blocked, counted here
        self.forward_passes = 0
        self._rows_seen = 0  # forward passes of the witness's log already checked

    # --- selectors --------------------------------------------------------------------------------------
    def live(self, kind: str) -> list[int]:
        """IDs of the live requests of ``kind`` (leader, follower, waiting, running, any; held, holdable,
        blocked, terminated), in ID order."""
        sched = self.engine.scheduler
        out = []
        for rid, req in sched.requests.items():
            ph = req.phase.value
            if kind == "terminated":
                ok = not req.phase.is_live
            elif not req.phase.is_live:
                ok = False
            elif kind == "leader":
                ok = sched.leads_open_flight(req)
            elif kind in ("follower", "blocked"):
                ok = ph == "blocked"
            elif kind == "waiting":
                ok = ph == "waiting"
            elif kind == "running":
                ok = ph in (Phase.PREFILL.value, Phase.DECODE.value)
            elif kind == "held":
                ok = req.is_held
            elif kind == "holdable":
                ok = not req.is_held and ph in ("waiting", "prefill", "blocked")
            else:
                ok = True
            if ok:
                out.append(rid)
        return out

    def _pick(self, kind: str, k: int) -> int | None:
        ids = self.live(kind)
        return ids[k % len(ids)] if ids else None

    # --- operations -------------------------------------------------------------------------------------
    def execute(self, op: Op) -> bool:
        """Run one operation; False when it did not apply (nothing to select). Raises ConformanceError
        with the diagnosis on a failure (also kept in ``self.diagnosis``)."""
        op = tuple(op)
        self.ops.append(op)
        name = op[0]
        try:
            with self._watched(describe_op(op)):
                done = getattr(self, "_op_" + name)(*op[1:])
            if done:
                self._guard("the state check", self.monitor.check)
            return done
        except ConformanceError as error:
            self.diagnosis = self.diagnosis or error.diagnosis
            raise ConformanceError(self.diagnosis) from None

    @contextmanager
    def _watched(self, what: str) -> Iterator[None]:
        """Run an operation under :data:`CALL_LIMIT_SECONDS`; one that runs past it is a hung engine."""
        limit = CALL_LIMIT_SECONDS.get(self.model, max(CALL_LIMIT_SECONDS.values()))
        try:
            with deadline(limit):
                yield
        except EngineHang:
            raise ConformanceError(Diagnosis(
                "stuck", f"the engine did not return from {what} within {limit:.0f} s", last_state=self._last_state(),
                properties=["eventually_terminates"],
                notes=["an engine call that never returns (a loop waiting for pages that nothing frees, say) "
                       "stops every request: none of them can terminate"])) from None

    def _op_arrive(self, t: int, temperature: float, seed: int) -> bool:
        if t >= len(self.setup.templates) or (self.setup.scenario is not None and t in self.arrived):
            return False
        tpl = self.setup.templates[t]
        if self.setup.scenario is not None:
            self.monitor.tracker.next_index = t  # scenario-bound: template t is spec request t
        self.arrived.add(t)
        stop = self.stop if t == self.setup.stop_template else ()
        params = SamplingParams(temperature=temperature, seed=seed, max_tokens=tpl.max_tokens, stop=stop)
        self.rules.append(describe_op(("arrive", t, temperature, seed)))  # first: it shows even if the arrival breaks
        called = time.perf_counter()
        rid = self._guard("arrive", lambda: self.engine.add_request(list(tpl.tokens), params))
        returned = time.perf_counter()
        self.rules[-1] += f" -> request {rid}"
        self._check_arrival_time(rid, called, returned)
        return True

    def _check_arrival_time(self, rid: int, called: float, returned: float) -> None:
        """The arrival's ``t`` (seconds since the log started, to the microsecond) lies between the
        moments the client's call began and returned: what ``workload --from-events`` replays."""
        log = self.engine.events
        event = next((e for e in reversed(log.events) if e["action"] in SUBMISSIONS and e.get("request") == rid), None)
        t = event.get("t") if event is not None else None
        if t is None:
            return
        low, high = called - log.started, returned - log.started
        if not low - 1e-6 <= t <= high + 1e-6:
            raise ConformanceError(Diagnosis(
                "order", f"request {rid} arrived at t={t}, outside the call that submitted it",
                event=event, last_state=self._last_state(),
                reasons=[f"add_request ran from t={low:.6f} to t={high:.6f} (seconds since the log started)"]))

    def _op_step(self, n: int) -> bool:
        for _ in range(max(1, int(n))):
            self.rules.append("step()")
            self._step()
        return True

    def _step(self) -> None:
        sched = self.engine.scheduler
        before = len(self.engine.events.events)
        live = self.engine.has_unfinished()
        blocked = set(self.live("blocked"))
        held = set(self.live("held"))
        if len(sched.running) >= self.config.max_running and sched.waiting:
            self.features["capacity_full"] += 1
        tokens = self._guard("step", self.engine.step)
        self.steps += 1
        new = self.engine.events.events[before:]
        self._check_tokens(tokens, new)
        for ev in new:
            a = ev["action"]
            if a in FOLLOWER_RELEASES:
                self.features["followers_released"] += len(ev["followers"])
            elif a in _COUNTED_AS:
                self.features[_COUNTED_AS[a]] += 1
        self._check_step(new, blocked, held)
        self._check_due("the step")
        if live and not new and not self.live("held"):
            spec = self.monitor.spec
            pending = [str(a) for a in spec.enabled(self.monitor.state) if spec.is_engine(a)]
            names = ", ".join(f"r{self.monitor.tracker.index_of[r]}" for r in self.live("any"))
            raise ConformanceError(Diagnosis(
                "stuck", "the engine took a step that did nothing while requests are live",
                last_state=self._last_state(),
                reasons=[f"live: {names}", "engine steps the spec still allows: " + (", ".join(pending) or "none")],
                properties=["no_deadlock"],
                notes=["no engine step happens although requests are live: they can never terminate"]))

    def _check_tokens(self, tokens: Any, events: list[dict]) -> None:
        """What step() returns (what a streaming client is sent) is each new token of the step: one for
        every request that prefilled its last chunk or decoded, its latest output."""
        sched = self.engine.scheduler
        moved = {ev["request"] for ev in events
                 if ev["action"] in TOKEN_PASSES or (ev["action"] in PROMPT_PASSES and ev.get("first_token"))}
        want = {rid: [sched.requests[rid].output_token_ids[-1]] for rid in moved}
        if tokens != want:
            raise ConformanceError(Diagnosis(
                "step", "step() returned other new tokens than the step produced", last_state=self._last_state(),
                reasons=[f"step() returned {tokens!r}; the step's prefill and decode events give {want!r}"],
                notes=["a streaming client is sent what step() returns: a token missing there never reaches it"]))

    def _check_step(self, events: list[dict], blocked: set[int], held: set[int]) -> None:
        """What one step must have done, counted by the runner (no spec slot holds it): the prefill budget,
        one forward row per request, no token for a held request or from a failed pass, the wait bound,
        and the step and forward-pass counters."""
        cfg, reasons, props = self.config, [], []
        passes = [ev for ev in events if ev["action"] in FORWARD_PASSES | PASS_FAILURES]
        computed = self.monitor.witness.rows_since(self._rows_seen)
        self._rows_seen += len(computed)
        if sum(computed) != len(passes):
            reasons.append(f"the step's forward pass computed {sum(computed)} rows, but {len(passes)} requests "
                           "prefilled, decoded or failed: a computed row's result was dropped")
        units = sum(ev.get("num_units", 0) for ev in passes if ev["action"] in PROMPT_PASSES)
        if units > cfg.prefill_chunk_pages:
            reasons.append(f"the step prefilled {units} units; the budget is {cfg.prefill_chunk_pages}")
        rows = [ev["request"] for ev in passes]
        reasons += [f"request {rid} had {rows.count(rid)} rows in one forward pass" for rid in sorted(set(rows))
                    if rows.count(rid) > 1]
        reasons += [f"request {ev['request']} was held but prefilled" for ev in passes
                    if ev["action"] in PROMPT_PASSES and ev["request"] in held]
        for ev in passes:
            if ev["request"] in self.faulted and ev["action"] not in PASS_FAILURES:
                reasons.append(f"request {ev['request']}'s forward pass gave non-finite logits, yet it {ev['action']}ed")
                props.append("termination_validated")
            self.faulted.discard(ev["request"])
        self.forward_passes += 1 if passes else 0
        sched = self.engine.scheduler
        bound = cfg.follower_wait_bound
        expired = {ev["request"]: ev.get("reason") for ev in events if ev["action"] in EXPIRIES}
        still = set(self.live("blocked"))
        for rid in blocked:
            if rid in still or expired.get(rid) == "wait-bound":
                self.waited[rid] = self.waited.get(rid, 0) + 1
        for rid, reason in expired.items():
            if reason != "wait-bound" or bound is None:
                reasons.append(f"request {rid} expired in a step (reason {reason}) without a wait bound to pass")
            elif self.waited.get(rid, 0) != bound + 1:
                reasons.append(f"request {rid} expired after {self.waited.get(rid, 0)} blocked steps; the bound is {bound}")
        if bound is not None:
            reasons += [f"request {rid} has been blocked for {self.waited[rid]} steps, past the bound {bound}"
                        for rid in sorted(still) if self.waited.get(rid, 0) > bound]
        counters = self.engine.counters
        if counters["num_steps"] != self.steps or counters["num_forward_passes"] != self.forward_passes:
            reasons.append(f"the engine counts {counters['num_steps']} steps and {counters['num_forward_passes']} "
                           f"forward passes; the runner {self.steps} and {self.forward_passes}")
        if len(sched.running) > cfg.max_running:
            reasons.append(f"{len(sched.running)} requests run; max_running is {cfg.max_running}")
        if reasons:
            raise ConformanceError(Diagnosis("step", "the step broke a rule of the engine's step loop",
                                             last_state=self._last_state(), reasons=reasons, properties=props))

    # What the engine must have done before any call returns: the spec leaves these enabled for one
    # moment only (publication after a forward pass, a lost or done leader's flight settled in the same
    # call), so one still enabled at the end of a call is a step the engine skipped or put off.
    DUE_AFTER_STEP = ("publish", "release", "promote")
    DUE_AFTER_CALL = ("release", "promote")

    def _check_due(self, call: str, due: tuple[str, ...] = DUE_AFTER_STEP) -> None:
        """Nothing urgent is left enabled in the spec, and no running request is past its output limit."""
        m = self.monitor
        if m.spec is None:
            return
        late = [str(a) for a in m.spec.enabled(m.state) if a.name in due]
        reasons = [f"{a} was due before {call} returned" for a in late]
        for rid in self.live("running"):
            req = self.engine.scheduler.requests[rid]
            if len(req.output_token_ids) >= req.sampling.max_tokens:
                reasons.append(f"request {rid} has {len(req.output_token_ids)} outputs (max_tokens "
                               f"{req.sampling.max_tokens}) and still runs after {call}")
        if reasons:
            # A flight left unsettled strands its followers: nothing the engine does later releases them.
            props = ["no_deadlock"] if any(a.startswith(("release", "promote")) for a in late) else []
            raise ConformanceError(Diagnosis(
                "due", f"{call} returned with work the engine must have done in it", last_state=self._last_state(),
                reasons=reasons, properties=props,
                notes=["publication follows every forward pass, a flight is settled in the call that ends or "
                       "loses its leader, and a request finishes at its output limit: none of them may wait"]))

    def _op_abort(self, kind: str, k: int) -> bool:
        rid = self._pick(kind if kind in KINDS else "any", k)
        if rid is None:
            return False
        req = self.engine.scheduler.requests[rid]
        if self.engine.scheduler.leads_open_flight(req) and req.phase is Phase.PREFILL:
            self.features["leaders_lost_in_prefill"] += 1
        self.rules.append(f"abort(request {rid}, a {kind} in {req.phase.value})")
        self.features["aborts"] += 1
        before = len(self.engine.events.events)
        self._guard("abort", lambda: self.engine.abort(rid))
        self._check_effect("abort", rid, before, "aborted")
        self._check_due("the abort", self.DUE_AFTER_CALL)
        return True

    def _op_fault(self, kind: str, k: int) -> bool:
        if kind == "queued":  # armed before it runs: its first forward pass fails
            ids = [r for r in self.live("any") if r not in self.live("running")]
        else:
            ids = [r for r in self.live(kind if kind in KINDS else "any") if r in self.live("running")]
        if not ids:
            return False
        rid = ids[k % len(ids)]
        self.rules.append(f"fault(request {rid}: its next forward pass fails)")
        self._guard("fault", lambda: self.engine.inject_fault(rid))
        self.faulted.add(rid)
        return True

    def _op_expire(self, k: int) -> bool:
        rid = self._pick("blocked", k)
        if rid is None:
            return False
        self.rules.append(f"expire(request {rid})")
        before = len(self.engine.events.events)
        self._guard("expire", lambda: self.engine.expire(rid))
        self._check_effect("expire", rid, before, "waiting", reason="client")
        self._check_due("the expiry", self.DUE_AFTER_CALL)
        return True

    def _check_effect(self, action: str, rid: int, before: int, phase: str, reason: str | None = None) -> None:
        """A client call that returned must have done what it says: its event (with the reason a client's
        call gives, where the event has one), and the request's new phase."""
        got = [ev for ev in self.engine.events.events[before:] if ev["action"] == action and ev.get("request") == rid]
        now = self.engine.scheduler.requests[rid].phase.value
        if not got or now != phase:
            raise ConformanceError(Diagnosis(
                "effect", f"{action}(request {rid}) returned but did not take effect",
                last_state=self._last_state(), properties=["termination_validated"] if action in CANCELS else
                ["expired_never_blocked"],
                reasons=[f"{'an' if got else 'no'} {action} event for request {rid}; it is {now}, not {phase}"]))
        if reason is not None and got[0].get("reason") != reason:
            raise ConformanceError(Diagnosis(
                "payload", f"{action}(request {rid}) by the client logged the reason {got[0].get('reason')!r}",
                event=got[0], last_state=self._last_state(),
                reasons=[f"a client's {action} is logged with reason {reason!r} (the wait bound's with 'wait-bound')"]))

    def _op_hold(self, kind: str, k: int) -> bool:
        ids = [r for r in self.live(kind if kind in KINDS else "any") if r in self.live("holdable")]
        if not ids:
            return False
        rid = ids[k % len(ids)]
        self.engine.hold(rid)
        self.rules.append(f"hold(request {rid})")
        return True

    def _op_resume(self, k: int) -> bool:
        rid = self._pick("held", k)
        if rid is None:
            return False
        self.engine.resume(rid)
        self.rules.append(f"resume(request {rid})")
        return True

    def _op_notify(self, kind: str, k: int) -> bool:
        rid = self._bogus(kind, k)
        if rid is None:
            return False
        self.rules.append(f"notify(request {rid}, {kind})")
        accepted = lambda: Diagnosis(  # noqa: E731 -- built only if the engine accepts (describing costs)
            "termination", f"a termination for {kind} ID {rid} was accepted",
            last_state=self._last_state(), reasons=["the engine raised nothing"],
            properties=["termination_validated"],
            notes=["the spec's coordinator rejects a termination of an ID it does not know "
                   "(the design variant no-unknown-check accepts it)"])
        self._refused(lambda: self.engine.notify_termination(rid), (UnknownRequestError,), accepted,
                      f"a termination notice for {rid}", f"the rejected termination of {rid}", "termination_validated")
        return True

    def _op_refuse(self, call: str, kind: str, k: int) -> bool:
        if kind not in REFUSALS.get(call, ()):
            return False
        rid = self._bogus(kind, k)
        if rid is None:
            return False
        self.rules.append(f"refuse({call} of request {rid}, {kind})")
        # A request that is not blocked has no wait to give up: expire's guard (can_expire) refuses it.
        prop = "expired_never_blocked" if call in EXPIRIES else None
        phase = self.engine.scheduler.requests[rid].phase.value if rid in self.engine.scheduler.requests else kind
        accepted = lambda: Diagnosis(  # noqa: E731 -- built only if the engine accepts (describing costs)
            "effect", f"{call}(request {rid}) of a {phase} request was accepted", last_state=self._last_state(),
            reasons=["the engine raised nothing"], properties=[prop] if prop else [],
            notes=[f"a client's {call} of a request that " + ("is not blocked" if kind == "unblocked"
                   else "is not live") + " must be refused with nothing changed"])
        method = {"expire": self.engine.expire, "hold": self.engine.hold, "fault": self.engine.inject_fault}[call]
        self._refused(lambda: method(rid), (UnknownRequestError, EngineError), accepted, f"{call} of {rid}",
                      f"the refused {call} of {rid}", prop)
        return True

    def _bogus(self, kind: str, k: int) -> int | None:
        """The request a bogus call names: the ``k``-th live or terminated one of ``kind``, or an ID never
        submitted (``unknown``)."""
        if kind == "unknown":
            return len(self.engine.scheduler.requests) + abs(int(k)) % 6
        if kind == "unblocked":
            blocked = set(self.live("blocked"))
            ids = [r for r in self.live("any") if r not in blocked]
            return ids[k % len(ids)] if ids else None
        return self._pick(kind, k)

    def _refused(self, call: Any, refusals: tuple, accepted: Any, what: str, refused: str,
                 prop: str | None) -> None:
        """``call`` must raise one of ``refusals`` and leave the engine's state as it was; ``accepted()``
        gives the diagnosis when it raises nothing."""
        before = self.engine.snapshot()
        try:
            call()
        except refusals:
            pass
        except ConformanceError:
            raise
        except Exception as error:
            raise ConformanceError(Diagnosis("error", f"the engine raised {type(error).__name__} on {what}: {error}",
                                             last_state=self._last_state()))
        else:
            raise ConformanceError(accepted())
        if self.engine.snapshot() != before:
            raise ConformanceError(Diagnosis("error", f"{refused} changed the engine's state",
                                             last_state=self._last_state(), properties=[prop] if prop else [],
                                             reasons=["engine.snapshot() differs before and after"]))

    # --- the end ----------------------------------------------------------------------------------------
    def drain(self) -> None:
        """Resume held requests and step until every request terminated; raises ConformanceError."""
        try:
            for rid in self.live("held"):
                self.engine.resume(rid)
            for _ in range(MAX_DRAIN_STEPS):
                if not self.engine.has_unfinished():
                    break
                self.rules.append("step()  [drain]")
                with self._watched("a drain step"):
                    self._step()
                self._guard("the state check", lambda: self.monitor.check("after draining"))
            else:
                raise ConformanceError(Diagnosis("stuck", f"requests are still live after {MAX_DRAIN_STEPS} drain steps",
                                                 last_state=self._last_state(), properties=["eventually_terminates"]))
            self._guard("the engine's own invariants", self.engine.check_invariants)
        except ConformanceError as error:
            self.diagnosis = self.diagnosis or error.diagnosis
            raise ConformanceError(self.diagnosis) from None

    def outcome(self) -> RunOutcome:
        """The run so far as a :class:`RunOutcome`."""
        self.features["pins"] = self.engine.counters["num_pinned_pages"]
        return RunOutcome(Program(self.setup, tuple(self.ops)), self.diagnosis, list(self.rules),
                          list(self.monitor.validator.actions), self.steps, len(self.engine.events.events),
                          dict(self.features), self.monitor.spec)

    # --- plumbing ---------------------------------------------------------------------------------------
    def _guard(self, what: str, fn: Any) -> Any:
        try:
            return fn()
        except ConformanceError:
            raise
        except (UnknownRequestError, EngineError, Exception) as error:  # the engine broke: the same form
            if self.monitor.failure is not None:
                raise ConformanceError(self.monitor.failure) from None
            raise ConformanceError(Diagnosis("error", f"the engine raised {type(error).__name__} during {what}: {error}",
                                             last_state=self._last_state())) from None

    def _last_state(self) -> Any:
        m = self.monitor
        return m.spec.describe(m.state) if m.spec is not None else None


def run_program(program: Program, model: str = "tiny", *, drain: bool = True) -> RunOutcome:
    """Run a whole program (then drain the engine); the outcome carries any diagnosis."""
    try:
        run = ProgramRun(program.setup, model)
    except (TypeError, ValueError) as error:  # EngineConfig refused the setup: the program is malformed
        raise ValueError(f"the program's setup is not an engine configuration: {error}") from None
    try:
        for op in program.ops:
            run.execute(op)
        if drain:
            run.drain()
    except ConformanceError:
        pass
    return run.outcome()
