"""Event logs offline: reading a JSON-lines log (with its policy header) and validating it against the spec.

For example::

    >>> from flightcheck.spec.scenario import Policy
    >>> report = validate_events([{"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0,
    ...                            "input": "ab", "num_tokens": 40}], Policy())
    >>> report.ok, report.actions
    (True, ['arrive(0)'])
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.tracker import SpecTracker
from flightcheck.checks.conform.validator import TraceValidator
from flightcheck.spec.describe import describe
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import Policy, Scenario


@dataclass
class ValidationReport:
    """The verdict of an offline validation: events checked, the spec actions, and any diagnosis."""

    ok: bool
    num_events: int
    actions: list[str]
    diagnosis: Diagnosis | None
    final_state: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"verdict": "ok" if self.ok else "mismatch", "events": self.num_events, "actions": self.actions,
                "diagnosis": self.diagnosis.to_json() if self.diagnosis else None, "final_state": self.final_state}


def read_events(path: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Events of a JSON-lines log and an optional header (a first line with a "policy" object).

    Raises ValueError naming the line of anything that is not an event.
    """
    events, header = [], None
    with open(path, encoding="utf-8") as fh:
        for num, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{num}: not JSON ({error.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{num}: expected a JSON object, got {type(obj).__name__}")
            if "policy" in obj and "action" not in obj and not events:
                header = obj
                continue
            if "action" not in obj:
                raise ValueError(f"{path}:{num}: an event needs an \"action\" field")
            events.append(obj)
    return events, header


_REQUIRED = {"arrive": ("request", "input", "num_tokens"), "admit": ("request",), "prefill": ("request",),
             "publish": ("request", "pages"), "release": ("flight",), "decode": ("request",),
             "finish": ("request",), "abort": ("request", "phase"), "notify": ("request",),
             "evict": ("key",)}


def validate_events(events: Iterable[dict[str, Any]], policy: Policy, *, scenario: Scenario | None = None,
                    spec_class: type = FlightSpec) -> ValidationReport:
    """Validate a whole event log offline (no engine state: guards, details and properties).

    The decode bound of each request is its ``max_tokens - 1`` when the arrive event carries
    ``max_tokens``, else the number of decode events it has in the log.
    """
    events = list(events)
    decodes: dict[int, int] = {}
    for ev in events:
        if ev.get("action") == "decode":
            decodes[ev.get("request")] = decodes.get(ev.get("request"), 0) + 1
    tracker = SpecTracker(policy, scenario=scenario, spec_class=spec_class)
    validator = TraceValidator(tracker)
    for num, ev in enumerate(events, 1):
        name = ev.get("action")
        missing = [f for f in _REQUIRED.get(name, ()) if f not in ev]
        if name not in _REQUIRED or missing:
            d = Diagnosis("payload", f"event {num}: " + (f"unknown action {name!r}" if name not in _REQUIRED
                                                         else f"{name} event lacks {', '.join(missing)}"), ev)
            return ValidationReport(False, num - 1, validator.actions, d, None)
        if name == "arrive":
            ev = dict(ev, num_decode=ev["max_tokens"] - 1 if "max_tokens" in ev else decodes.get(ev["request"], 0))
        try:
            validator.feed(ev)
        except ConformanceError as error:
            return ValidationReport(False, num, validator.actions, error.diagnosis, None)
    final = describe(tracker.spec, tracker.state) if tracker.spec is not None else None
    return ValidationReport(True, len(events), validator.actions, None, final)
