"""The traces one workload run reads: files, the shared Mooncake traces by name, and an engine event log.

:func:`resolve_trace` turns a TRACE argument into a file (a path, or ``conversation`` / ``synthetic``,
:func:`~flightcheck.checks.workload.trace.shared_trace_path`); :func:`load_sources` reads them all, and
an event log converted to the trace schema (:func:`~flightcheck.checks.workload.trace.events_to_trace`).
Anything wrong is a :class:`~flightcheck.checks.workload.options.WorkloadError` naming the file, and for a
malformed one the line and the field.

For example::

    >>> resolve_trace("no-such-trace.jsonl")
    Traceback (most recent call last):
    ...
    flightcheck.checks.workload.options.WorkloadError: trace file 'no-such-trace.jsonl' not found (give a path, or one of conversation, synthetic)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from flightcheck.checks.inputs import InputError, printable, read_lines, shown
from flightcheck.checks.workload.options import WorkloadError
from flightcheck.checks.workload.trace import Trace, events_to_trace, load_trace, shared_trace_path, write_trace

SHARED_NAMES = ("conversation", "synthetic")


def resolve_trace(trace: str) -> Path:
    """The file a TRACE argument names: a path as given, else a shared trace by name."""
    path = Path(trace)
    if os.path.isdir(path):  # os.path's tests answer False for a name too long, where Path's raise
        raise WorkloadError(f"{printable(trace)}: is a directory, not a trace file")
    if os.path.lexists(path):
        return path  # a file, or something that is not one: the strict reader says which
    if trace in SHARED_NAMES:
        shared = shared_trace_path(trace)
        if shared.is_file():
            return shared
        raise WorkloadError(f"trace {shown(trace)} not found at {shared} (FLIGHTCHECK_SHARED set to a folder without "
                            "it, or an installation without flightcheck's data/traces)")
    raise WorkloadError(f"trace file {shown(trace)} not found (give a path, or one of {', '.join(SHARED_NAMES)})")


def load_sources(traces: Sequence[str], from_events: Optional[Path] = None, *, block_tokens: int = 16,
                 convert_out: Optional[Path] = None,
                 check_events: Optional[Callable[[list[str], str], Any]] = None,
                 warn: Callable[[str], None] = lambda message: None) -> list[Trace]:
    """The traces named, then the event log ``from_events`` converted (and written to ``convert_out``).

    ``check_events(lines, source)`` reads the log by the event schema first (as ``flightcheck validate``
    does; it raises :class:`~flightcheck.checks.inputs.InputError`); ``warn`` is told when no arrival
    carries a time. At least one trace, with distinct names, or a :class:`WorkloadError`.
    """
    loaded = []
    try:
        for trace in traces:
            loaded.append(load_trace(resolve_trace(trace)))
        if from_events is not None:
            lines = read_lines(from_events, "events")  # read once, by the strict reader
            if check_events is not None:
                check_events(lines, str(from_events))
            converted = events_to_trace(lines, source=str(from_events), block_tokens=block_tokens)
            if convert_out is not None:
                write_trace(converted, convert_out)
            if converted.num_requests > 1 and all(r.timestamp_ms == 0 for r in converted.requests):
                warn(f"note: no arrive event in {from_events} carries 't'; all requests arrive at 0 ms")
            loaded.append(Trace(from_events.stem, converted.requests))
    except InputError as error:  # TraceError is one
        raise WorkloadError(str(error)) from None
    if not loaded:
        raise WorkloadError("give at least one TRACE or --from-events EVENTS.jsonl")
    names = [t.name for t in loaded]
    if len(set(names)) != len(names):
        raise WorkloadError(f"traces must have distinct file names, got {shown(names)}")
    return loaded
