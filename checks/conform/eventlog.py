"""Event logs offline: reading a JSON-lines log (with its policy header) and validating it against the spec.

For example::

    >>> from flightcheck.spec.scenario import Policy
    >>> report = validate_events([{"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0,
    ...                            "input": "ab", "num_tokens": 40}], Policy())
    >>> report.ok, report.actions
    (True, ['arrive(0)'])
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace
from typing import Any, Iterable

from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.schema import LogChecker, check_header, is_header
from flightcheck.checks.conform.tracker import SpecTracker
from flightcheck.checks.conform.validator import TraceValidator
from flightcheck.checks.inputs import (MAX_LOG_REQUESTS, MAX_REASON_CHARS, MAX_SHOWN_CHARS, InputError, json_records,
                                       printable, read_lines, shorten)
from flightcheck.spec.actions import SUBMISSIONS, TOKEN_PASSES
from flightcheck.spec.describe import describe
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import Policy, Scenario


@dataclass
class ValidationReport:
    """The verdict of an offline validation: events checked, the spec actions, any diagnosis, and the
    scenario the validator grew from the log's arrivals (None before the first), on which the actions
    are a run of the spec."""

    ok: bool
    num_events: int
    actions: list[str]
    diagnosis: Diagnosis | None
    final_state: dict[str, Any] | None
    scenario: Scenario | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"verdict": "ok" if self.ok else "mismatch", "events": self.num_events, "actions": self.actions,
                "diagnosis": self.diagnosis.to_json() if self.diagnosis else None, "final_state": self.final_state}


def read_events(path: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Events of a JSON-lines log and its optional header (a first line with a "policy" object).

    Read by the rules every reader shares (:mod:`flightcheck.checks.inputs`: a regular file within its
    size limit, UTF-8, no blank line but the final newline, lines within their limit, one JSON object
    per line) and checked against the event schema (:mod:`flightcheck.checks.conform.schema`). Raises
    :class:`~flightcheck.checks.inputs.InputError` naming the file, the line and the field; a file
    without events (empty, or only a header) is one too.
    """
    return parse_events(read_lines(path, "events"), str(path))


def parse_events(lines: Iterable[str], source: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """:func:`read_events` of lines already read (``flightcheck workload --from-events`` reads the file
    once and converts the same lines)."""
    events, header, checker = [], None, LogChecker(source)
    # Every line's JSON first, then the schema (a syntax error anywhere is named before a field); bounded
    # by the readers' limits on the file's bytes and lines.
    for num, obj in json_records(lines, source, "an engine event log: JSON lines of events"):
        if is_header(obj):
            if num != 1:
                raise InputError(source, num, "policy", "a header line (a policy and no action) may only be "
                                 "the first line")
            check_header(obj, source, num)
            header = obj
            continue
        checker.check(obj, num)
        events.append(obj)
    if not events:
        raise InputError(source, None, None, "holds no events, only the header line")
    return events, header


def validate_events(events: Iterable[dict[str, Any]], policy: Policy, *, num_pages: int | None = None,
                    context: int | None = None, scenario: Scenario | None = None,
                    spec_class: type = FlightSpec, source: str = "event log",
                    max_seconds: float | None = None) -> ValidationReport:
    """Validate a whole event log offline (no engine state: guards, details and properties).

    ``num_pages`` (the header's pool) models the engine's memory exactly; without it (an older log) the
    cache may lose unreferenced pages at any time. The decode bound of each request is its
    ``max_tokens - 1`` (cut at the ``context``) when the arrive event carries ``max_tokens``, else the
    number of decode events it has in the log. Every event is checked against
    the schema before the spec sees any: a malformed one raises
    :class:`~flightcheck.checks.inputs.InputError` naming the event's number (``event 3, field
    'num_tokens': ...``); the report is about well-formed logs only.

    Bounded: a log of more than :data:`~flightcheck.checks.inputs.MAX_LOG_REQUESTS` requests is an
    :class:`~flightcheck.checks.inputs.InputError` (naming ``source``) before any is checked, and so is
    one whose validation runs past ``max_seconds`` (None: no limit), naming the event it reached.
    """
    events, checker = list(events), LogChecker("event log")
    for num, ev in enumerate(events, 1):  # the schema first: the validator never sees a malformed event
        checker.check(ev, None, f"event {num}")
    arrivals = sum(ev["action"] in SUBMISSIONS for ev in events)
    if arrivals > MAX_LOG_REQUESTS:
        raise InputError(source, None, None, f"holds {arrivals:,} requests, more than the {MAX_LOG_REQUESTS} a log "
                         "validated offline may hold (the validator grows the spec with every request and checks "
                         "every property after every event); validate a shorter run")
    started = time.monotonic()
    decodes: dict[int, int] = {}
    for ev in events:
        if ev["action"] in TOKEN_PASSES:
            decodes[ev["request"]] = decodes.get(ev["request"], 0) + 1
    options = {} if num_pages is not None or scenario is not None else {"eviction": True}
    tracker = SpecTracker(policy, scenario=scenario, spec_class=spec_class, num_pages=num_pages, options=options)
    validator = TraceValidator(tracker)
    for num, ev in enumerate(events, 1):
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            raise InputError(source, None, None, f"too large to validate offline: {max_seconds:.0f} s passed at "
                             f"event {num} of {len(events):,} (the cost of an event grows with the requests arrived "
                             "and their pages); validate a shorter run")
        name = ev["action"]
        if name in SUBMISSIONS:
            bound = ev["max_tokens"] - 1 if "max_tokens" in ev else decodes.get(ev["request"], 0)
            if context is not None:
                bound = min(bound, context - ev["num_tokens"])
            ev = dict(ev, num_decode=bound)
        try:
            validator.feed(ev)
        except ConformanceError as error:
            grown = tracker.spec.scenario if tracker.spec is not None else None
            return ValidationReport(False, num, validator.actions, bounded(error.diagnosis), None, grown)
    final = describe(tracker.spec, tracker.state) if tracker.spec is not None else None
    return ValidationReport(True, len(events), validator.actions, None, final,
                            tracker.spec.scenario if tracker.spec is not None else None)


def header_policy(header: dict[str, Any] | None, overrides: dict[str, Any] | None = None) -> Policy:
    """The engine's policy a log was written under: its header's knobs that the spec's Policy takes (the
    header may carry others), then ``overrides`` (None values ignored), with the engine's defaults for
    running capacity (8) and the prefill budget (32 pages). Raises TypeError or ValueError for a set of
    knobs that is not a policy."""
    known = {f.name for f in fields(Policy)}
    base = {k: v for k, v in (header or {}).get("policy", {}).items() if k in known}
    base.update({k: v for k, v in (overrides or {}).items() if v is not None})
    base.setdefault("capacity", 8)
    base.setdefault("chunk", 32)
    return Policy(**base)



def bounded(diagnosis: Diagnosis) -> Diagnosis:
    """``diagnosis`` safe to print however long or odd the log's values: every text escaped
    (:func:`~flightcheck.checks.inputs.printable`) and cut (a reason to
    :data:`~flightcheck.checks.inputs.MAX_REASON_CHARS`, a
    string of the event to :data:`~flightcheck.checks.inputs.MAX_SHOWN_CHARS`)."""
    def cut(text: str, limit: int = MAX_REASON_CHARS) -> str:
        return printable(shorten(text, limit))

    def value(v: Any) -> Any:
        if isinstance(v, str):
            return cut(v, MAX_SHOWN_CHARS)
        if isinstance(v, list):
            return [value(x) for x in v[:MAX_SHOWN_CHARS]] + ([f"... ({len(v):,} items)"] if len(v) > MAX_SHOWN_CHARS else [])
        if isinstance(v, dict):
            return {cut(str(k), MAX_SHOWN_CHARS): value(x) for k, x in v.items()}
        return v

    event = None if diagnosis.event is None else value(diagnosis.event)
    return replace(diagnosis, summary=cut(diagnosis.summary), event=event,
                   reasons=[cut(r) for r in diagnosis.reasons], notes=[cut(n) for n in diagnosis.notes],
                   action=None if diagnosis.action is None else cut(diagnosis.action))
