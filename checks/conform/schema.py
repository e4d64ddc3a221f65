"""The event-log schema: every action's fields and their kinds, in one table.

An engine event log (JSON lines) may open with a header line ``{"policy": {...}, "model": ...}``; every
other line is an event ``{"seq": n, "action": NAME, ...}``. Each event is checked against
:data:`EVENT_FIELDS` before anything else reads it (:func:`~flightcheck.checks.conform.eventlog.read_events`,
:func:`~flightcheck.checks.conform.eventlog.validate_events`, ``flightcheck validate`` and
``flightcheck workload --from-events``), so the spec validator never sees a malformed event: an unknown
action, a missing field or a field of the wrong type is bad input (exit 2), never a verdict about the
engine (exit 1). Fields an event carries beyond its row are allowed and ignored.

**Growing the vocabulary.** A new action is one more row of :data:`EVENT_FIELDS`; a new field is one
more entry in its action's row (``required`` if the validator reads it, ``optional`` otherwise); a
policy knob in the header needs nothing here (:data:`POLICY_FIELDS` is derived from ``spec/knobs.py``);
a field that must agree across events (as an input's length) is one more entry of :data:`SAME_VALUE`. Nothing else here changes:
:func:`check_event`, :class:`LogChecker` and :func:`check_header` are generic over the tables, and
``tests/conform/test_event_schema.py`` fails, naming what to add, when the engine emits an action or a
field that the table does not list.

For example::

    >>> check_event({"seq": 0, "action": "admit", "request": 3, "hit_pages": 0}, "run.jsonl", 2)
    >>> try:
    ...     check_event({"seq": 0, "action": "admit", "request": [3], "hit_pages": 0}, "run.jsonl", 2)
    ... except InputError as error:
    ...     print(error)
    run.jsonl line 2, field 'request': must be an integer, got [3]
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.inputs import (BOOL, COUNT, INT, POSITIVE, SECONDS, STR, TOKENS, Field, InputError,
                                       check_fields, Kind, list_of, nullable, one_of, optional, record, required, shown)
from flightcheck.spec.knobs import KNOBS, Knob

# A published page as the engine logs it (publish's "pages", finish's "published").
PAGE = record({"index": required(COUNT), "key": required(STR)})
REQUEST = required(INT)  # an engine request ID
# Fields every event may carry, whatever its action.
COMMON_FIELDS: dict[str, Field] = {
    "seq": optional(COUNT),
    "action": required(STR),
}

# --- the table: one row per action of the engine's vocabulary (impl/events.py ACTIONS) -------------
EVENT_FIELDS: dict[str, dict[str, Field]] = {
    "arrive": {"request": REQUEST, "role": required(STR), "flight": required(nullable(INT)), "input": required(STR),
               "num_tokens": required(TOKENS), "t": optional(SECONDS), "max_tokens": optional(TOKENS),
               "lifetime_pages": optional(TOKENS), "page_keys": optional(list_of(STR)),
               "via": optional(nullable(INT)), "shared_pages": optional(TOKENS)},
    "admit": {"request": REQUEST, "hit_pages": required(COUNT), "recovered_tokens": optional(COUNT)},
    "prefill": {"request": REQUEST, "num_units": required(COUNT), "first_token": required(BOOL),
                "first_page": optional(COUNT), "num_tokens": optional(COUNT)},
    "publish": {"request": REQUEST, "pages": required(list_of(PAGE))},
    "release": {"flight": required(INT), "followers": required(list_of(INT)), "reason": required(STR),
                "leader": required(INT), "waiters": optional(list_of(INT))},
    "promote": {"flight": required(INT), "leader": required(INT), "previous": required(INT),
                "followers": required(list_of(INT)), "via": optional(nullable(INT)),
                "shared_pages": optional(TOKENS)},
    "decode": {"request": REQUEST, "token": optional(INT)},
    "finish": {"request": REQUEST, "published": required(list_of(PAGE)), "reason": optional(STR)},
    "evict": {"key": required(STR), "page_id": optional(INT), "index": optional(COUNT)},
    "abort": {"request": REQUEST, "phase": required(STR)},
    "notify": {"request": REQUEST, "accepted": optional(BOOL), "error": optional(STR)},
    "expire": {"request": REQUEST, "flight": required(INT), "leader": required(INT), "reason": optional(STR),
               "via": optional(BOOL), "shared_pages": optional(TOKENS)},
    "fail": {"request": REQUEST, "phase": required(STR), "error": optional(STR)},
}

# --- the header line's policy: the knobs a log was run under (spec/knobs.py's table, one field each) --------
def knob_field(knob: Knob) -> Field:
    """The header field of a knob: one of its choices, a boolean, or an integer at least its lowest value."""
    if knob.kind is str:
        return optional(one_of(*knob.choices))
    if knob.kind is bool:
        return optional(BOOL)
    if knob.low in (0, 1):
        return optional(COUNT if knob.low == 0 else POSITIVE)
    return optional(Kind(f"an integer >= {knob.low}", lambda v: type(v) is int and v >= knob.low))


# The choices first, then the sizes (the knobs the all-sizes proofs hold for every value of), as the engine
# writes its header and as an unknown knob's error lists them.
POLICY_FIELDS: dict[str, Field] = {k.name: knob_field(k) for k in sorted(KNOBS, key=lambda k: k.unbounded == "size")}
POLICY = record(POLICY_FIELDS, closed=True)  # an unknown knob cannot be validated: an error, not ignored
POOL = record({"num_pages": required(POSITIVE), "page_size": optional(POSITIVE)})
HEADER_FIELDS: dict[str, Field] = {"policy": required(POLICY), "model": optional(nullable(STR)),
                                   "pool": optional(POOL), "follower_wait_bound": optional(nullable(POSITIVE)),
                                   "context": optional(nullable(TOKENS)),
                                   "max_context": optional(nullable(TOKENS)), "seed": optional(INT)}

# --- rules across events: (action, key field, field): events of that action with the same key carry
# the same value of the field (an input key names whole token ids, so one key has one length) ---------
SAME_VALUE: list[tuple[str, str, str]] = [
    ("arrive", "input", "num_tokens"),
]


def is_header(obj: dict[str, Any]) -> bool:
    """Whether a log line is a header (a "policy" and no "action") rather than an event."""
    return "policy" in obj and "action" not in obj


def check_event(event: Any, source: str, line_number: int | None) -> None:
    """Raise :class:`InputError` (naming ``source``, the line and the field) unless ``event`` fits its row."""
    if not isinstance(event, dict):
        raise InputError(source, line_number, None, f"expected an event object, got {type(event).__name__}")
    found = check_fields(event, COMMON_FIELDS)
    if found is None and event["action"] not in EVENT_FIELDS:
        found = "action", f"unknown action {shown(event['action'])} (known: {', '.join(EVENT_FIELDS)})"
    if found is None:
        found = check_fields(event, EVENT_FIELDS[event["action"]])
        if found is not None and found[1].startswith("missing"):
            found = found[0], f"missing from this {event['action']} event{found[1][len('missing'):]}"
    if found is not None:
        raise InputError(source, line_number, found[0], found[1])


class LogChecker:
    """Checks a log's events one by one: each against its row, and all together against :data:`SAME_VALUE`.

    For example::

        >>> checker = LogChecker("run.jsonl")
        >>> checker.check({"action": "arrive", "request": 0, "role": "leader", "flight": 0, "input": "k",
        ...                "num_tokens": 40}, 1)
        >>> try:
        ...     checker.check({"action": "arrive", "request": 1, "role": "follower", "flight": 0, "input": "k",
        ...                    "num_tokens": 41}, 2)
        ... except InputError as error:
        ...     print(error)
        run.jsonl line 2, field 'num_tokens': 41, where line 1 gave 40 for the same input 'k'
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.seen: dict[tuple[int, Any], tuple[Any, int | None]] = {}

    def check(self, event: Any, line_number: int | None, source: str | None = None) -> None:
        """Raise :class:`InputError` unless ``event`` fits its row and agrees with the events before it."""
        where = source or self.source
        check_event(event, where, line_number)
        for n, (action, key, field) in enumerate(SAME_VALUE):
            if event["action"] != action or key not in event or field not in event:
                continue
            first = self.seen.setdefault((n, event[key]), (event[field], line_number))
            if first[0] != event[field]:
                before = f"line {first[1]}" if first[1] is not None and source is None else "an earlier event"
                raise InputError(where, line_number, field, f"{shown(event[field])}, where {before} gave "
                                 f"{shown(first[0])} for the same {key} {shown(event[key])}")


def check_header(header: dict[str, Any], source: str, line_number: int | None) -> None:
    """Raise :class:`InputError` unless ``header`` is a header line whose policy fits :data:`POLICY_FIELDS`."""
    found = check_fields(header, HEADER_FIELDS)
    if found is not None:
        raise InputError(source, line_number, found[0], found[1] + " (the header line holds the policy)"
                         if found[0] == "policy" else found[1])
