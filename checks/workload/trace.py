"""Request traces for the workload opportunity model: loading, validation and conversion.

A trace is a JSON-lines file with one request per line and four fields (the Mooncake FAST'25 schema):

- ``timestamp``: arrival time in milliseconds from the start of the trace (a non-negative number);
- ``input_length`` and ``output_length``: prompt and generated token counts (non-negative integers);
- ``hash_ids``: one integer per prefix block (512 tokens in the Mooncake traces). Equal ids at equal
  positions are the same reusable block.

Every line must be a JSON object with all four fields of the right type; a blank or malformed line, a
line that is not UTF-8 or an empty file raises :class:`TraceError` naming the file, the line number and
the field, by the rules every reader shares (:mod:`flightcheck.checks.inputs`). Nothing is silently skipped.
Every value is bounded before anything is built from it: a timestamp within
:data:`~flightcheck.checks.inputs.MAX_TIMESTAMP_MS`, lengths within
:data:`~flightcheck.checks.inputs.MAX_TRACE_TOKENS`, hash ids of 64 bits, at most
:data:`~flightcheck.checks.inputs.MAX_HASH_IDS` per request and
:data:`~flightcheck.checks.inputs.MAX_TRACE_BLOCKS` per trace (the block lookups the model makes). Extra fields are
allowed and ignored. Lines need not be sorted by time: :func:`load_trace` keeps file order, and the model
sorts stably, so ties keep file order.

The engine's own event log converts to this schema with :func:`events_to_trace`.

For example::

    >>> trace = parse_trace_lines(['{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}'])
    >>> trace.requests[0].hash_ids
    (7, 8)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from flightcheck.checks.inputs import (INT, MAX_HASH_IDS, MAX_INT, MAX_TIMESTAMP_MS, MAX_TRACE_BLOCKS,
                                       MAX_TRACE_TOKENS, MIN_INT, SECONDS, STR, TOKENS, InputError, check_fields,
                                       json_records, json_type, nullable, optional, parse_json, read_lines,
                                       record_lines, required, shown)

FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
# What the event-log conversion reads of an arrive event, and of a prefill or decode it counts.
_ARRIVE = {"request": required(INT), "input": required(STR), "num_tokens": required(TOKENS),
           "t": optional(nullable(SECONDS))}
_COUNTED = {"request": required(INT)}
# The engine log's actions this reader asks about, as spec/actions.py names them (checks/workload may not
# import the spec; tests/test_registries.py holds these equal to the spec's): the actions a request's
# lifecycle starts with, the forward passes that each produce an output token, and the prompt's passes,
# the last of which produces the first token.
SUBMISSIONS = frozenset({"arrive"})
TOKEN_PASSES = frozenset({"decode"})
PROMPT_PASSES = frozenset({"prefill"})


class TraceError(InputError):
    """A malformed trace or event line, naming the file, line number (1-based) and field.

    For example::

        >>> try:
        ...     parse_trace_lines(['{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": []}'], source="t.jsonl")
        ... except TraceError as error:
        ...     print(error)
        t.jsonl line 1, field 'timestamp': must be a finite number >= 0, got -1
    """

    @classmethod
    def of(cls, error: InputError) -> "TraceError":
        """The same error as a TraceError."""
        return cls(error.source, error.line_number, error.field, error.message)


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: arrival time (ms), token counts and prefix-block ids, and its source line."""

    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]
    line_number: int


@dataclass(frozen=True, slots=True)
class Trace:
    """A named, validated trace: its requests in file order."""

    name: str
    requests: tuple[TraceRequest, ...]

    @property
    def num_requests(self) -> int:
        """The number of requests."""
        return len(self.requests)

    @property
    def num_block_lookups(self) -> int:
        """The total number of prefix blocks over all requests (one lookup each per configuration)."""
        return sum(len(r.hash_ids) for r in self.requests)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_request(obj: object, source: str, line_number: int) -> TraceRequest:
    def fail(field: str | None, message: str) -> TraceError:
        return TraceError(source, line_number, field, message)

    if not isinstance(obj, dict):
        raise fail(None, f"expected a JSON object, got {type(obj).__name__}")
    for field in FIELDS:
        if field not in obj:
            raise fail(field, "missing")
    ts = obj["timestamp"]
    if not (_is_int(ts) or (isinstance(ts, float) and math.isfinite(ts))) or ts < 0:
        raise fail("timestamp", f"must be a finite number >= 0, got {shown(ts)}")
    if ts > MAX_TIMESTAMP_MS:
        raise fail("timestamp", f"must be at most {MAX_TIMESTAMP_MS:,} ms (about 31.7 years: MAX_TIMESTAMP_MS), "
                                f"got {shown(ts)}")
    for field in ("input_length", "output_length"):
        if not _is_int(obj[field]) or obj[field] < 0:
            raise fail(field, f"must be an integer >= 0, got {shown(obj[field])}")
        if obj[field] > MAX_TRACE_TOKENS:
            raise fail(field, f"must be at most {MAX_TRACE_TOKENS:,} tokens (MAX_TRACE_TOKENS), got {shown(obj[field])}")
    ids = obj["hash_ids"]
    if not isinstance(ids, list):
        raise fail("hash_ids", f"must be a list of integers, got {type(ids).__name__}")
    if len(ids) > MAX_HASH_IDS:
        raise fail("hash_ids", f"holds {len(ids):,} ids, more than the {MAX_HASH_IDS:,} a request may have "
                               "(MAX_HASH_IDS)")
    for position, value in enumerate(ids):
        if not _is_int(value):
            raise fail("hash_ids", f"position {position} must be an integer, got {shown(value)}")
        if not MIN_INT <= value <= MAX_INT:
            raise fail("hash_ids", f"position {position} must fit in 64 bits, got {shown(value)}")
    return TraceRequest(float(ts), obj["input_length"], obj["output_length"], tuple(ids), line_number)


def parse_trace_lines(lines: Iterable[str], source: str = "<trace>", name: str | None = None) -> Trace:
    """Parse JSON lines into a :class:`Trace`; raise :class:`TraceError` on the first bad line.

    A trailing newline at the end of the file is fine; any blank line between records is an error, and so
    is a trace without requests.
    """
    requests, blocks = [], 0
    try:
        numbered = record_lines(lines, source, "a trace: JSON lines of requests")
    except InputError as error:
        raise TraceError.of(error) from None
    for line_number, line in numbered:  # one line at a time: the bounds stop a huge trace before it is all parsed
        try:
            obj = parse_json(line, source, line_number)
        except InputError as error:
            raise TraceError.of(error) from None
        if not isinstance(obj, dict):
            raise TraceError(source, line_number, None, f"expected a JSON object, got {json_type(obj)}")
        request = _parse_request(obj, source, line_number)
        blocks += len(request.hash_ids)
        if blocks > MAX_TRACE_BLOCKS:
            raise TraceError(source, line_number, "hash_ids", f"the trace's hash ids add up to more than "
                             f"{MAX_TRACE_BLOCKS:,} here (MAX_TRACE_BLOCKS: the block lookups the model makes)")
        requests.append(request)
    return Trace(name if name is not None else source, tuple(requests))


def load_trace(path: str | os.PathLike[str]) -> Trace:
    """Read and validate a trace file; its name is the file stem (``conversation_trace`` ...)."""
    p = Path(path)
    try:
        lines = read_lines(p, "requests")
    except InputError as error:
        raise TraceError.of(error) from None
    return parse_trace_lines(lines, source=str(p), name=p.stem)


def repo_root() -> Path:
    """The repository root (the folder above ``checks/``)."""
    return Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """The shared data folder: ``$FLIGHTCHECK_SHARED`` if set, else ``../shared`` beside the repository root."""
    override = os.environ.get("FLIGHTCHECK_SHARED")
    return Path(override) if override else repo_root().parent / "shared"


def bundled_traces_dir() -> Path:
    """The traces shipped with flightcheck (``data/traces`` in the repository, ``flightcheck/data/traces``
    once installed): the two Mooncake traces, their provenance, checksums and license."""
    import flightcheck.data

    return Path(flightcheck.data.__file__).resolve().parent / "traces"


def shared_trace_path(name: str) -> Path:
    """The path of a named trace, e.g. ``shared_trace_path("conversation")`` -> ``.../traces/conversation_trace.jsonl``.

    ``$FLIGHTCHECK_SHARED/traces`` when that variable is set (an override); otherwise the copy shipped with
    flightcheck; and only if that copy is missing (an installation without its data), ``../shared/traces``
    beside the repository root.
    """
    file = f"{name}_trace.jsonl"
    if os.environ.get("FLIGHTCHECK_SHARED"):
        return shared_dir() / "traces" / file
    bundled = bundled_traces_dir() / file
    return bundled if bundled.is_file() else shared_dir() / "traces" / file


def events_to_trace(lines: Iterable[str], source: str = "<events>", block_tokens: int = 16) -> Trace:
    """Convert an engine event log (JSON lines) into a trace: one request per ``arrive`` event.

    - ``timestamp``: the event's ``t`` (seconds) times 1000; if no ``arrive`` event has ``t``, every request
      arrives at 0 ms (simultaneous, in log order). A log where some arrivals carry ``t`` and others do not
      is rejected.
    - ``input_length``: ``num_tokens``; ``hash_ids``: ``ceil(num_tokens / block_tokens)`` ids. The log
      carries only a key of the whole input, so requests with the same ``input`` key share all their block
      ids and different keys share none (partial prefix sharing between different inputs is not visible).
    - ``output_length``: the request's generated tokens: one for a ``prefill`` with ``first_token`` true
      plus one per ``decode`` event.

    The ids of all requests add up to at most :data:`~flightcheck.checks.inputs.MAX_TRACE_BLOCKS`
    (checked before each input's ids are made). A first line holding only a ``policy`` object (the
    engine's header) is skipped. Other events are
    read for the output count only; a line that is not a JSON object with an ``action``, an ``arrive``
    without an integer ``request``, a string ``input`` or a count ``num_tokens``, or a counted ``prefill``
    or ``decode`` without an integer ``request`` raises :class:`TraceError`, as do the readers' rules
    (:mod:`flightcheck.checks.inputs`). ``flightcheck workload --from-events`` checks the whole log against
    the event schema first, as ``flightcheck validate`` does.

    For example::

        >>> log = ['{"seq": 0, "action": "arrive", "request": 1, "input": "ab", "num_tokens": 40, "t": 0.5}']
        >>> events_to_trace(log).requests[0]
        TraceRequest(timestamp_ms=500.0, input_length=40, output_length=0, hash_ids=(0, 1, 2), line_number=1)
    """
    if block_tokens < 1:
        raise ValueError(f"block_tokens must be >= 1, got {block_tokens}")
    arrivals: list[tuple[int, int, str, int, float | None]] = []
    outputs: dict[int, int] = {}
    try:
        records = json_records(lines, source, "an engine event log: JSON lines of events")
    except InputError as error:
        raise TraceError.of(error) from None
    for line_number, event in records:
        if line_number == 1 and "policy" in event and "action" not in event:
            continue  # the engine's header line: the policy the log ran under
        if "action" not in event:
            raise TraceError(source, line_number, "action", "missing (expected an event object with an action)")
        action = event["action"]
        fields = _ARRIVE if action in SUBMISSIONS else _COUNTED if action in TOKEN_PASSES or (
            action in PROMPT_PASSES and event.get("first_token") is True) else None
        found = check_fields(event, fields) if fields is not None else None
        if found is not None:
            raise TraceError(source, line_number, found[0], found[1].replace("missing", f"missing in an {action} event"
                             if action in SUBMISSIONS else f"missing in a {action} event", 1))
        if action in SUBMISSIONS:
            arrivals.append((line_number, event["request"], event["input"], event["num_tokens"], event.get("t")))
        elif fields is not None:
            outputs[event["request"]] = outputs.get(event["request"], 0) + 1
    if not arrivals:
        raise TraceError(source, 1, "action", "the log holds no arrive events")
    has_t = [a[4] is not None for a in arrivals]
    if any(has_t) and not all(has_t):
        line_number = arrivals[has_t.index(False)][0]
        raise TraceError(source, line_number, "t", "missing while other arrive events carry it")
    next_id, blocks = 0, 0
    ids_of_input: dict[str, tuple[int, ...]] = {}
    requests = []
    for line_number, request_id, key, num_tokens, t in arrivals:
        num_blocks = -(-num_tokens // block_tokens)
        ids = ids_of_input.get(key)
        blocks += num_blocks
        if blocks > MAX_TRACE_BLOCKS:
            raise TraceError(source, line_number, "num_tokens", f"the requests' blocks of {block_tokens} tokens add "
                             f"up to more than {MAX_TRACE_BLOCKS:,} here (MAX_TRACE_BLOCKS: the block lookups the "
                             "model makes)")
        if ids is None:
            ids = tuple(range(next_id, next_id + num_blocks))
            next_id += num_blocks
            ids_of_input[key] = ids
        elif len(ids) != num_blocks:
            raise TraceError(source, line_number, "num_tokens", f"input {shown(key)} was seen with a different length")
        ts = 0.0 if t is None else float(t) * 1000.0  # t is bounded (MAX_SECONDS): float() cannot overflow
        requests.append(TraceRequest(ts, num_tokens, outputs.get(request_id, 0), ids, line_number))
    return Trace(source, tuple(requests))


def write_trace(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write a trace as JSON lines in the schema above (timestamps as integers when they are whole)."""
    with open(path, "w", encoding="utf-8") as handle:
        for r in trace.requests:
            ts = int(r.timestamp_ms) if float(r.timestamp_ms).is_integer() else r.timestamp_ms
            record = {"timestamp": ts, "input_length": r.input_length, "output_length": r.output_length, "hash_ids": list(r.hash_ids)}
            handle.write(json.dumps(record) + "\n")
