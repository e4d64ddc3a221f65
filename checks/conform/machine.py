"""The Hypothesis state machine that drives the real engine in lockstep with the spec.

Each run (one Hypothesis example) draws an engine setup (policy, leader-loss policy, prefix caching,
capacity, prefill budget, pool size, wait bound, prompt classes of every shape, prompts sharing a prefix, and
templates), then
rules that each draw one client operation of :mod:`flightcheck.checks.conform.program` and execute it
on a :class:`~flightcheck.checks.conform.runner.ProgramRun` (the engine under its online monitor):

- ``arrive``: a template arrives with drawn sampling settings;
- ``step``: the engine takes one to three steps;
- ``client``: one of the run's enabled client-side operations (swarm testing): abort, a bogus
  termination notice, hold/resume, a follower's wait expiring, a forward pass failing.

Every operation is recorded before it runs, so the failing run is a replayable program whatever broke
(an arrival, a step, the drain). At the end the engine is drained; a failure found there is a failure
like any other: it is kept in the campaign's result even when Hypothesis discards the example.
``hypothesis.target`` steers runs towards deep states: followers released, leaders lost, full
capacity, evictions, promotions, expiries.

The machine is a module-level class, as Hypothesis's own examples are written; a campaign makes a small
subclass (:func:`campaign_machine`) whose class attributes carry its options and its result.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from flightcheck.checks.conform.diagnosis import ConformanceError
from flightcheck.checks.conform.generate import OPTIONAL
from flightcheck.checks.conform.program import KINDS, NOTICE_OPS, PICKING_OPS, REFUSALS, Setup, Template
from flightcheck.checks.conform.prompts import lifetime_pages, tree_shapes
from flightcheck.checks.conform.results import ConformFailure, ConformOptions, ConformResult
from flightcheck.checks.conform.runner import ProgramRun
from flightcheck.spec.scenario import LEADER_LOSSES, PUBLICATIONS, RELEASES

MAX_ARRIVALS = 6
TARGETS = ("followers_released", "leaders_lost_in_prefill", "capacity_full", "evictions", "promotions", "expiries")


class EngineConformance(RuleBasedStateMachine):
    """The real engine in lockstep with the spec; ``options`` and ``result`` are set per campaign."""

    options: ConformOptions = ConformOptions()
    result: ConformResult = ConformResult(ok=True)

    def __init__(self) -> None:
        super().__init__()
        self.run: ProgramRun | None = None
        self.enabled: tuple[str, ...] = ()

    # --- set-up ---------------------------------------------------------------------------------------
    @initialize(data=st.data())
    def setup(self, data: Any) -> None:
        """Draw the setup and the swarm; build the engine and its monitor."""
        o = self.options
        d = data.draw
        coordination = o.coordination or d(st.sampled_from(("single-flight", "prefix", "prefix", "none")), "coordination")
        caching = coordination != "none" or d(st.booleans(), "prefix caching off") is False
        capacity = d(st.integers(1, 3), "capacity")
        prompts = tree_shapes(lambda a, b: d(st.integers(a, b)), lambda seq: d(st.sampled_from(seq)),
                              d(st.integers(1, 3), "classes"))
        templates = []
        for t in range(d(st.integers(1, 4), "templates")):
            c = t % len(prompts)
            tokens = tuple(prompts[c])
            templates.append(Template(tokens, d(st.integers(1, 4), f"max_tokens{t}"), f"P{c}:{len(tokens)}"))
        lifetime = max(lifetime_pages(len(t.tokens), t.max_tokens) for t in templates)
        config = {
            "coordination": coordination,
            "release": o.release or d(st.sampled_from(RELEASES), "release"),
            "publication": o.publication or d(st.sampled_from(PUBLICATIONS), "publication"),
            "leader_loss": o.leader_loss or d(st.sampled_from(LEADER_LOSSES), "leader loss"),
            "prefix_caching": caching, "max_running": capacity,
            "prefill_chunk_pages": d(st.sampled_from((1, 2, 64)), "chunk"),
            "num_pages": d(st.integers(lifetime, lifetime * capacity + 3), "num_pages"),
            "follower_wait_bound": d(st.sampled_from((None, 1, 3)), "wait bound"),
            "min_shared_pages": d(st.sampled_from((1, 2)), "min shared pages"),
        }
        # Swarm testing: each run switches a random subset of the optional kinds off.
        self.enabled = tuple(k for k in OPTIONAL if not d(st.booleans(), f"swarm: {k} off"))
        eos = d(st.one_of(st.none(), st.integers(0, len(templates) - 1)), "EOS: a template's first token")
        stop = d(st.one_of(st.none(), st.integers(0, len(templates) - 1)), "stop string: a template's first token twice")
        self.run = ProgramRun(Setup(config, tuple(templates), eos_template=eos, stop_template=stop), o.model)
        self.result.runs += 1

    # --- rules ----------------------------------------------------------------------------------------
    @precondition(lambda self: self.run is not None and len(self.run.engine.scheduler.requests) < MAX_ARRIVALS)
    @rule(data=st.data())
    def arrive(self, data: Any) -> None:
        """A template arrives with drawn sampling settings."""
        t = data.draw(st.integers(0, len(self.run.setup.templates) - 1), "template")
        self._execute(("arrive", t, data.draw(st.sampled_from((0.0, 0.8)), "temperature"),
                       data.draw(st.integers(0, 3), "seed")))

    @precondition(lambda self: self.run is not None)
    @rule(num=st.integers(1, 3))
    def step(self, num: int) -> None:
        """The engine takes ``num`` steps; a step that does nothing while requests are live is a deadlock."""
        self._execute(("step", num))

    @precondition(lambda self: self.run is not None and bool(self.enabled))
    @rule(data=st.data())
    def client(self, data: Any) -> None:
        """One of the run's enabled client-side operations."""
        name = data.draw(st.sampled_from(self.enabled), "client operation")
        k = data.draw(st.integers(0, 3), "which")
        if name in PICKING_OPS:
            op = (name, data.draw(st.sampled_from(KINDS), "kind"), k)
        elif name in NOTICE_OPS:
            op = (name, data.draw(st.sampled_from(("unknown", "terminated")), "notify kind"), k)
        else:
            op = (name, k)
        if name == "hold" and self.run.live("held") and data.draw(st.booleans(), "resume instead"):
            op = ("resume", k)
        self._execute(op)

    @precondition(lambda self: self.run is not None)
    @rule(data=st.data())
    def refuse(self, data: Any) -> None:
        """A client call the engine must refuse with nothing changed (an expiry of a request that is not
        blocked, a test hook on a terminated request or an unknown ID)."""
        call = data.draw(st.sampled_from(tuple(REFUSALS)), "call")
        self._execute(("refuse", call, data.draw(st.sampled_from(REFUSALS[call]), "of"),
                       data.draw(st.integers(0, 3), "which")))

    def _execute(self, op: tuple) -> None:
        try:
            self.run.execute(op)
        except ConformanceError:
            self._record()
            raise

    def _record(self) -> None:
        out = self.run.outcome()
        if self.result.failure is None:
            self.result.features["runs_to_first_failure"] = self.result.runs
        self.result.failure = ConformFailure(out.rules, out.diagnosis, out.program)
        self.result.ok = False

    # --- the end --------------------------------------------------------------------------------------
    def teardown(self) -> None:
        """Drain the engine (every request must terminate), then record the run's figures."""
        if self.run is None:
            return
        try:
            if self.run.diagnosis is None:
                self.run.drain()
        except ConformanceError:
            self._record()  # kept even if Hypothesis discards an example that ran out of data here
            raise
        finally:
            out = self.run.outcome()
            self.result.steps += out.steps
            self.result.events += out.events
            self.result.rules += len(out.rules)
            for k, v in out.features.items():
                self.result.features[k] = self.result.features.get(k, 0) + v
            if out.ok and out.spec is not None:
                from flightcheck.checks.conform.campaign import transitions_of
                self.result.transitions |= transitions_of(out.spec, out.actions)
            if currently_in_test_context():
                for key in TARGETS:
                    target(float(out.features.get(key, 0)), label=key.replace("_", " "))


def campaign_machine(options: ConformOptions, result: ConformResult) -> type:
    """The machine of one campaign: a subclass carrying its options and the result it fills."""
    return type("EngineConformanceCampaign", (EngineConformance,), {"options": options, "result": result})
