"""Event logs offline: reading a JSON-lines log (with its policy header) and validating it against the spec.

For example::

    >>> from flightcheck.spec.scenario import Policy
    >>> report = validate_events([{"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0,
    ...                            "input": "ab", "num_tokens": 40}], Policy())
    >>> report.ok, report.actions
    (True, ['arrive(0)'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.schema import LogChecker, check_header, is_header
from flightcheck.checks.conform.tracker import SpecTracker
from flightcheck.checks.conform.validator import TraceValidator
from flightcheck.checks.inputs import InputError, json_records, read_lines
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
    """Events of a JSON-lines log and its optional header (a first line with a "policy" object).

    Read by the rules every reader shares (:mod:`flightcheck.checks.inputs`: UTF-8, no blank line but
    the final newline, one JSON object per line) and checked against the event schema
    (:mod:`flightcheck.checks.conform.schema`). Raises :class:`~flightcheck.checks.inputs.InputError`
    naming the file, the line and the field; a file without events (empty, or only a header) is one too.
    """
    events, header, checker = [], None, LogChecker(str(path))
    for num, obj in json_records(read_lines(path, "events"), str(path), "an engine event log: JSON lines of events"):
        if is_header(obj):
            if num != 1:
                raise InputError(str(path), num, "policy", "a header line (a policy and no action) may only be "
                                 "the first line")
            check_header(obj, str(path), num)
            header = obj
            continue
        checker.check(obj, num)
        events.append(obj)
    if not events:
        raise InputError(str(path), None, None, "holds no events, only the header line")
    return events, header


def validate_events(events: Iterable[dict[str, Any]], policy: Policy, *, num_pages: int | None = None,
                    context: int | None = None, scenario: Scenario | None = None,
                    spec_class: type = FlightSpec) -> ValidationReport:
    """Validate a whole event log offline (no engine state: guards, details and properties).

    ``num_pages`` (the header's pool) models the engine's memory exactly; without it (an older log) the
    cache may lose unreferenced pages at any time. The decode bound of each request is its
    ``max_tokens - 1`` (cut at the ``context``) when the arrive event carries ``max_tokens``, else the
    number of decode events it has in the log. Every event is checked against
    the schema before the spec sees any: a malformed one raises
    :class:`~flightcheck.checks.inputs.InputError` naming the event's number (``event 3, field
    'num_tokens': ...``); the report is about well-formed logs only.
    """
    events, checker = list(events), LogChecker("event log")
    for num, ev in enumerate(events, 1):  # the schema first: the validator never sees a malformed event
        checker.check(ev, None, f"event {num}")
    decodes: dict[int, int] = {}
    for ev in events:
        if ev["action"] == "decode":
            decodes[ev["request"]] = decodes.get(ev["request"], 0) + 1
    options = {} if num_pages is not None or scenario is not None else {"eviction": True}
    tracker = SpecTracker(policy, scenario=scenario, spec_class=spec_class, num_pages=num_pages, options=options)
    validator = TraceValidator(tracker)
    for num, ev in enumerate(events, 1):
        name = ev["action"]
        if name == "arrive":
            bound = ev["max_tokens"] - 1 if "max_tokens" in ev else decodes.get(ev["request"], 0)
            if context is not None:
                bound = min(bound, context - ev["num_tokens"])
            ev = dict(ev, num_decode=bound)
        try:
            validator.feed(ev)
        except ConformanceError as error:
            return ValidationReport(False, num, validator.actions, error.diagnosis, None)
    final = describe(tracker.spec, tracker.state) if tracker.spec is not None else None
    return ValidationReport(True, len(events), validator.actions, None, final)
