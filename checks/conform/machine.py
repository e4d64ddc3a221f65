"""The Hypothesis state machine that drives the real engine in lockstep with the spec.

Each run (one Hypothesis example) builds a fresh engine over the tiny model (or the real SmolLM2) with
a policy and capacities Hypothesis picks, a fixed pool of request templates (prompt classes, pages,
tails, max tokens), and a random subset of the optional rule kinds (swarm testing). Rules:

- ``arrive``: a template arrives with sampling settings (temperature, seed);
- ``step``: the engine takes one step; its events are checked online by a
  :class:`~flightcheck.checks.conform.monitor.Monitor` as they are emitted;
- ``client``: one of the run's enabled client-side rules: ``abort`` (a leader, follower, waiting or
  running request is cancelled), ``notify`` (a termination for an unknown or already-terminated ID: the
  engine must raise ``UnknownRequestError`` and change nothing), ``hold``/``resume`` (the test barrier on
  a request's prefill, to force other interleavings).

After every rule the spec's safety properties are evaluated on the abstracted engine state, which must
equal the spec state reached by replaying the engine's events. At the end the engine is drained: every
request must terminate, and a step that does nothing while requests are live is a deadlock.
``hypothesis.target`` steers runs towards deep states: followers released, a leader aborted during its
prefill, full capacity, evictions.

The machine is a module-level class, as Hypothesis's own examples are written; a campaign makes a small
subclass (:func:`campaign_machine`) whose class attributes carry its options and its result.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.engines import build_engine, load_model
from flightcheck.checks.conform.monitor import Monitor
from flightcheck.checks.conform.prompts import class_tokens, lifetime_pages
from flightcheck.checks.conform.results import ConformFailure, ConformOptions, ConformResult
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.errors import UnknownRequestError
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.impl.sampling import SamplingParams
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES

OPTIONAL_RULES = ("abort", "notify", "hold")
ABORT_KINDS = ("running", "leader", "follower", "waiting")
MAX_ARRIVALS = 6


class Skip(Exception):
    """A replayed rule whose drawn choice no longer applies (the program was shortened): skip it."""


class EngineConformance(RuleBasedStateMachine):
    """The real engine in lockstep with the spec; ``options`` and ``result`` are set per campaign."""

    options: ConformOptions = ConformOptions()
    result: ConformResult = ConformResult(ok=True)

    def __init__(self) -> None:
        super().__init__()
        self.engine: Any = None
        self.monitor: Monitor | None = None
        self.rules: list[str] = []
        self.enabled: frozenset[str] = frozenset()
        self.features = {"followers_released": 0, "leader_aborted_in_prefill": 0, "capacity_full": 0,
                         "evictions": 0, "aborts": 0}
        self.steps = 0
        # The run as a program (rule name, the values it drew), replayable without Hypothesis.
        self.setup_draws: list[Any] = []
        self.program: list[tuple[str, list[Any]]] = []

    # --- plumbing -------------------------------------------------------------------------
    def _failed(self, diagnosis: Diagnosis) -> None:
        if self.result.failure is None:
            self.result.features["runs_to_first_failure"] = self.result.runs
        self.result.failure = ConformFailure(list(self.rules), diagnosis)
        self.result.program = (list(self.setup_draws), [(n, list(v)) for n, v in self.program])
        raise ConformanceError(diagnosis)

    def _draw(self, data: Any, strategy: Any, label: str, log: list[Any], options: list | None = None) -> Any:
        """Draw a value and log it; a scripted replay's value must still be one of ``options``."""
        value = data.draw(strategy, label=label)
        if options is not None and value not in options:
            raise Skip(label)
        log.append(value)
        return value

    def _guarded(self, what: str, fn: Any) -> Any:
        try:
            return fn()
        except ConformanceError as error:
            self._failed(error.diagnosis)
        except Exception as error:  # the engine itself broke: report it in the same form
            if self.monitor is not None and self.monitor.failure is not None:
                self._failed(self.monitor.failure)
            self._failed(Diagnosis("error", f"the engine raised {type(error).__name__} during {what}: {error}",
                                   last_state=self._last_state()))

    def _last_state(self) -> Any:
        from flightcheck.spec.describe import describe
        m = self.monitor
        return describe(m.spec, m.state) if m is not None and m.spec is not None else None

    def _live(self, kind: str) -> list[int]:
        sched = self.engine.scheduler
        out = []
        for rid, req in sched.requests.items():
            if not req.phase.is_live:
                continue
            flight = sched.coordinator.flights.get(req.flight_id) if req.flight_id is not None else None
            if kind == "leader" and req.role == "leader" and flight is not None and flight.is_leader_live \
                    and flight.leader_request_id == rid:
                out.append(rid)
            elif kind == "follower" and req.phase.value == "blocked":
                out.append(rid)
            elif kind == "waiting" and req.phase.value == "waiting":
                out.append(rid)
            elif kind == "running" and req.phase.value in ("prefill", "decode"):
                out.append(rid)
            elif kind == "held" and req.is_held:
                out.append(rid)
            elif kind == "holdable" and not req.is_held and req.phase.value in ("waiting", "prefill", "blocked"):
                out.append(rid)
        return out

    # --- set-up ---------------------------------------------------------------------------
    @initialize(data=st.data())
    def setup(self, data: Any) -> None:
        """Draw the policy, capacities, templates and swarm; build the engine and its monitor."""
        def d(strategy: Any, label: str) -> Any:
            return self._draw(data, strategy, label, self.setup_draws)

        release = self.options.release or d(st.sampled_from(RELEASES), label="release")
        publication = self.options.publication or d(st.sampled_from(PUBLICATIONS), label="publication")
        coordination = self.options.coordination or d(st.sampled_from(("single-flight", "single-flight", "none")),
                                              label="coordination")
        capacity = d(st.integers(1, 3), label="capacity")
        chunk = d(st.sampled_from((1, 2, 64)), label="chunk")
        num_classes = d(st.integers(1, 2), label="classes")
        shapes = [(d(st.integers(1, 3), label=f"pages{c}"), d(st.sampled_from((0, 1, 9, 15)), label=f"tail{c}"))
                  for c in range(num_classes)]
        _model, _eos, vocab = load_model(self.options.model)
        self.templates = []
        for t in range(d(st.integers(1, 3), label="templates")):
            c = t % num_classes
            pages, tail = shapes[c]
            max_tokens = d(st.integers(1, 4), label=f"max_tokens{t}")
            self.templates.append((c, class_tokens(c, PAGE_SIZE * pages + tail, vocab), max_tokens))
        lifetime = max(lifetime_pages(len(tok), mt) for _c, tok, mt in self.templates)
        num_pages = d(st.integers(lifetime, lifetime * capacity + 3), label="num_pages")
        # Swarm testing: each run switches a random subset of the optional rule kinds off (shrinking
        # switches them back on; Hypothesis also swarms over the rules themselves).
        self.enabled = frozenset(k for k in OPTIONAL_RULES if not d(st.booleans(), label=f"swarm: {k} off"))
        self.config = EngineConfig(coordination=coordination, release=release, publication=publication,
                                   max_running=capacity, prefill_chunk_pages=chunk, num_pages=num_pages)
        self.engine = build_engine(self.options.model, self.config)
        self.monitor = Monitor(self.engine)
        shapes_text = ", ".join(f"{chr(65 + c)}: {p} pages + {t} tokens" for c, (p, t) in enumerate(shapes))
        tpl_text = ", ".join(f"t{n}={chr(65 + c)}/max_tokens {mt}" for n, (c, _tok, mt) in enumerate(self.templates))
        self.rules.append(f"engine({coordination}, release {release}, publication {publication}, capacity "
                          f"{capacity}, chunk {chunk}, {num_pages} pages; classes {shapes_text}; templates "
                          f"{tpl_text}; optional rules: {', '.join(sorted(self.enabled)) or 'none'})")
        self.result.runs += 1

    # --- rules ----------------------------------------------------------------------------
    @precondition(lambda self: self.engine is not None and len(self.engine.scheduler.requests) < MAX_ARRIVALS)
    @rule(data=st.data())
    def arrive(self, data: Any) -> None:
        """A request from the template pool arrives with drawn sampling settings."""
        log: list[Any] = []
        self.program.append(("arrive", log))
        t = self._draw(data, st.integers(0, len(self.templates) - 1), "template", log)
        temperature = self._draw(data, st.sampled_from((0.0, 0.8)), "temperature", log)
        seed = self._draw(data, st.integers(0, 3), "seed", log)
        _c, tokens, max_tokens = self.templates[t]
        params = SamplingParams(temperature=temperature, seed=seed, max_tokens=max_tokens)
        rid = self._guarded("arrive", lambda: self.engine.add_request(tokens, params))
        self.rules.append(f"arrive(t{t}, temperature {temperature}, seed {seed}) -> r{rid}")

    @precondition(lambda self: self.engine is not None)
    @rule(num=st.integers(1, 3))
    def step(self, num: int) -> None:
        """The engine takes ``num`` steps; a step that does nothing while requests are live is a deadlock."""
        self.program.append(("step", [num]))
        for _ in range(num):
            self.rules.append("step()")
            self._step()

    def _step(self) -> None:
        sched = self.engine.scheduler
        before = len(self.engine.events.events)
        live = self.engine.has_unfinished()
        if len(sched.running) >= self.config.max_running and sched.waiting:
            self.features["capacity_full"] += 1
        self._guarded("step", self.engine.step)
        self.steps += 1
        new = self.engine.events.events[before:]
        for ev in new:
            if ev["action"] == "release":
                self.features["followers_released"] += len(ev["followers"])
        if live and not new and not self._live("held"):
            spec = self.monitor.spec
            pending = [str(a) for a in spec.enabled(self.monitor.state) if a.is_engine]
            self._failed(Diagnosis(
                "stuck", "the engine took a step that did nothing while requests are live",
                last_state=self._last_state(),
                reasons=[f"live: {', '.join(f'r{self.monitor.tracker.index_of[r]}' for r in self._live_ids())}",
                         "engine steps the spec still allows: " + (", ".join(pending) or "none")],
                properties=["no_deadlock"],
                notes=["no engine step happens although requests are live: they can never terminate"]))

    def _live_ids(self) -> list[int]:
        return [r for r, q in self.engine.scheduler.requests.items() if q.phase.is_live]

    @precondition(lambda self: self.engine is not None and bool(self.enabled))
    @rule(data=st.data())
    def client(self, data: Any) -> None:
        """One of the run's enabled client-side rules: abort, notify, or hold/resume."""
        log: list[Any] = []
        self.program.append(("client", log))
        options = sorted(self.enabled)
        kind = self._draw(data, st.sampled_from(options), "client rule", log, options)
        {"abort": self.abort, "notify": self.notify, "hold": self.hold}[kind](data, log)

    def abort(self, data: Any, log: list[Any]) -> None:
        """Cancel a running, leading, following or waiting request."""
        kinds = [k for k in ABORT_KINDS if self._live(k)]
        if not kinds:
            return
        kind = self._draw(data, st.sampled_from(kinds), "abort kind", log, kinds)
        ids = self._live(kind)
        rid = self._draw(data, st.sampled_from(ids), "abort id", log, ids)
        req = self.engine.scheduler.requests[rid]
        if rid in self._live("leader") and req.phase.value == "prefill":
            self.features["leader_aborted_in_prefill"] += 1
        self.rules.append(f"abort(r{rid}, a {kind} in {req.phase.value})")
        self.features["aborts"] += 1
        self._guarded("abort", lambda: self.engine.abort(rid))

    def notify(self, data: Any, log: list[Any]) -> None:
        """A termination for an unknown or terminated ID: must raise and change nothing."""
        sched = self.engine.scheduler
        dead = [r for r, q in sched.requests.items() if not q.phase.is_live]
        choices = ["unknown"] + (["terminated"] if dead else [])
        kind = self._draw(data, st.sampled_from(choices), "notify kind", log, choices)
        rid = (len(sched.requests) + self._draw(data, st.integers(0, 5), "offset", log)) if kind == "unknown" \
            else self._draw(data, st.sampled_from(dead), "dead id", log, dead)
        self.rules.append(f"notify(r{rid}, {kind})")
        before = self.engine.snapshot()
        try:
            self.engine.notify_termination(rid)
        except UnknownRequestError:
            pass
        except ConformanceError as error:
            self._failed(error.diagnosis)
        except Exception as error:
            self._failed(Diagnosis("error", f"the engine raised {type(error).__name__} on a termination "
                                   f"notice for {rid}: {error}", last_state=self._last_state()))
        else:
            self._failed(Diagnosis(
                "termination", f"a termination for {kind} ID {rid} was accepted",
                last_state=self._last_state(), reasons=["the engine raised nothing"],
                properties=["termination_validated"],
                notes=["the spec's coordinator rejects a termination of an ID it does not know "
                       "(the design variant no-unknown-check accepts it)"]))
        if self.engine.snapshot() != before:
            self._failed(Diagnosis("error", f"the rejected termination of {rid} changed the engine's state",
                                   last_state=self._last_state(), properties=["termination_validated"],
                                   reasons=["engine.snapshot() differs before and after"]))

    def hold(self, data: Any, log: list[Any]) -> None:
        """Hold a request's prefill at the barrier, or resume a held one."""
        held, holdable = self._live("held"), self._live("holdable")
        if self._draw(data, st.booleans(), "resume", log) and held:
            rid = self._draw(data, st.sampled_from(held), "resume id", log, held)
            self.engine.resume(rid)
            self.rules.append(f"resume(r{rid})")
        elif holdable:
            rid = self._draw(data, st.sampled_from(holdable), "hold id", log, holdable)
            self.engine.hold(rid)
            self.rules.append(f"hold(r{rid})")

    # --- invariants and the end -----------------------------------------------------------
    @invariant()
    def conforms(self) -> None:
        """After every rule: the abstract engine state equals the spec's and violates no property."""
        if self.monitor is not None:
            self._guarded("the state check", lambda: self.monitor.check())

    def teardown(self) -> None:
        """Drain the engine (every request must terminate), then record the run's figures."""
        if self.engine is None:
            return
        try:
            if self.result.failure is None or self.result.failure.rules != self.rules:
                for rid in self._live("held"):
                    self.engine.resume(rid)
                for _ in range(200):
                    if not self.engine.has_unfinished():
                        break
                    self.rules.append("step()  [drain]")
                    self._step()
                    self._guarded("the state check", lambda: self.monitor.check("after draining"))
                self._guarded("the engine's own invariants", self.engine.check_invariants)
        finally:
            self.features["evictions"] = self.engine.counters["num_pages_evicted"]
            self.result.steps += self.steps
            self.result.events += len(self.engine.events.events)
            self.result.rules += len(self.rules)
            for k, v in self.features.items():
                self.result.features[k] = self.result.features.get(k, 0) + v
            if self.monitor.spec is not None and self.monitor.failure is None:
                self.result.transitions |= transitions_of(self.monitor.spec, self.monitor.validator.actions)
            if currently_in_test_context():  # not in a scripted replay (minimize)
                for label, key in (("followers released", "followers_released"),
                                   ("leader aborted in prefill", "leader_aborted_in_prefill"),
                                   ("capacity full", "capacity_full"), ("evictions", "evictions")):
                    target(float(self.features[key]), label=label)


def campaign_machine(options: ConformOptions, result: ConformResult) -> type:
    """The machine of one campaign: a subclass carrying its options and the result it fills."""
    return type("EngineConformanceCampaign", (EngineConformance,), {"options": options, "result": result})


def transitions_of(spec: Any, actions: list[str]) -> set:
    """The canonical spec edges ``(scenario requests, state, action name, next state)`` a path visits."""
    from flightcheck.spec.model import parse_action

    sym = spec.symmetry()
    out, s = set(), spec.initial()
    for text in actions:
        a = parse_action(text)
        t = spec.apply(s, a)
        out.add((spec.scenario.requests, sym.canonical(s)[0], a.name, sym.canonical(t)[0]))
        s = t
    return out
