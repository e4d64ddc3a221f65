"""The online monitor: every event an engine emits is checked against the spec the moment it happens.

For example::

    >>> from flightcheck.impl.engine import Engine, EngineConfig
    >>> eng = Engine.tiny(EngineConfig(num_pages=16))
    >>> mon = Monitor(eng)
    >>> _ = eng.add_request([5] * 40)
    >>> _ = eng.run()
    >>> mon.failure is None, mon.validator.actions[:3]
    (True, ['arrive(0)', 'admit(0)', 'prefill(0)'])
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.policy_map import policy_of
from flightcheck.checks.conform.schema import LogChecker
from flightcheck.checks.conform.tracker import SpecTracker
from flightcheck.checks.conform.validator import TraceValidator
from flightcheck.checks.conform.witness import KVWitness
from flightcheck.checks.inputs import InputError
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import Policy, Scenario
from flightcheck.spec.state import State


class Monitor:
    """The online monitor: every event of ``engine`` is checked against the spec as it is emitted.

    A failure raises :class:`ConformanceError` out of the engine call that emitted the event and is kept
    in ``failure``. ``check`` compares the engine's state at a quiet point (between engine calls).
    """

    def __init__(self, engine: Any, policy: Policy | None = None, *, scenario: Scenario | None = None,
                 spec_class: type = FlightSpec, compare: bool = True, depth: int = 2) -> None:
        self.engine = engine
        self.witness = KVWitness.attach(engine)
        self.tracker = SpecTracker(policy or policy_of(engine.config), scenario=scenario, spec_class=spec_class,
                                   num_pages=engine.config.num_pages)
        self.validator = TraceValidator(self.tracker, engine=engine, witness=self.witness, depth=depth,
                                        compare_states=compare)
        self.failure: Diagnosis | None = None
        self.schema = LogChecker("the engine's event log")
        engine.events.add_listener(self._on_event)

    def _on_event(self, event: dict[str, Any]) -> None:
        if self.failure is not None:
            return
        try:
            self._check_schema(event)
            self.validator.feed(event)
        except ConformanceError as error:
            self.failure = error.diagnosis
            raise

    def _check_schema(self, event: dict[str, Any]) -> None:
        """The event must be one the engine's own log format allows: a log written from it is read back
        by ``validate`` and ``workload --from-events``, which refuse an event whose field has the wrong
        type (a page index as a float, a request ID as a list) as bad input."""
        try:
            self.schema.check(event, self.validator.num_events + 1)
        except InputError as error:
            raise ConformanceError(Diagnosis(
                "schema", f"the engine emitted an event its log format does not allow ({error.field or 'the event'}: "
                f"{error.message})",
                event=event, reasons=[str(error)],
                notes=["every event must fit its row of checks/conform/schema.py, as an offline log is "
                       "checked before anything reads it"])) from None

    def check(self, context: str = "") -> None:
        """Compare the engine's abstract state with the spec's now; raises ConformanceError."""
        if self.failure is not None:
            raise ConformanceError(self.failure)
        if self.tracker.spec is None:
            return
        try:
            self.validator.compare(None, None, None, context)
        except ConformanceError as error:
            self.failure = error.diagnosis
            raise

    @property
    def spec(self) -> FlightSpec | None:
        """The spec the monitor checks against (None before the first arrival)."""
        return self.tracker.spec

    @property
    def state(self) -> State | None:
        """The spec state the engine's events have led to."""
        return self.tracker.state
