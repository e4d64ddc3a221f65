"""Reading input files strictly, the same way for every reader: traces, event logs, action lists.

Every reader of a line-oriented file (a request trace, an engine event log, a list of actions to
replay) goes through :func:`read_lines` and :func:`json_records`, so the rules are one:

- the file is UTF-8; a line that is not names its line and column;
- every line holds one record; the newline that ends the last line is fine, any other blank line
  (empty or only spaces) is an error naming its line: nothing is skipped silently;
- an empty file is an error (the reader says what it expected);
- a JSON line that does not parse, or parses to something that is not an object, names its line.

Every file is read by one strict reader (:func:`read_file_bytes`): a regular file only (a FIFO, a
device or a directory is refused before a byte is read: it could block or never end), no larger than
its limit; whole-file documents (a program, a ``results.json``, an equivalence file) go through
:func:`read_text_file` and :func:`read_json_file`. JSON nests at most :data:`MAX_JSON_DEPTH` levels.
Every number a reader takes is bounded before anything is allocated from it: the limits are the
``MAX_*`` constants below, each with why it has its value.

Fields are checked against :class:`Kind` s (an integer >= 0, a string, a list of such, an object of
such ...), whose failures name the field (``pages[1].key``), what was expected and what was found.
Every failure is an :class:`InputError` (a ``ValueError``) whose message reads
``FILE line N, field 'F': what is wrong`` so the command line can print it and exit 2. A message
quotes an input value through :func:`shown` (at most :data:`MAX_SHOWN_CHARS` characters, escaped), and
:func:`printable` makes any text safe to print (a lone surrogate from a JSON ``"\\ud800"`` is escaped).

For example::

    >>> json_records(['{"a": 1}', ''], "t.jsonl", "records")
    [(1, {'a': 1})]
    >>> try:
    ...     json_records(['{"a": 1}', '', '{"a": 2}'], "t.jsonl", "records")
    ... except InputError as error:
    ...     print(error)
    t.jsonl line 2: blank line (every line must hold one record; only the last line may end with a newline)
    >>> COUNT.problem(-1), list_of(COUNT).problem([0, "x"])
    (('', 'must be an integer >= 0, got -1'), ('[1]', "must be an integer >= 0, got 'x'"))
    >>> shown("x" * 100, 20)
    "'xxxxxxxxxxxxxxxxxxx... (102 characters)"
    >>> printable(json.loads('"a\\\\ud800"'))
    'a\\\\ud800'
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# --- limits: every bound a reader applies, in one place, each with why it has its value -------------
KIB, MIB = 1 << 10, 1 << 20
# An integer of 64 bits: request, flight and page IDs, hash ids, seeds, counts. Every ID flightcheck or
# the engine writes is far smaller; a larger one is not an ID but a typo (or an attack on float()).
MAX_INT = (1 << 63) - 1
MIN_INT = -(1 << 63)
# The deepest JSON flightcheck writes nests 9 levels (the corpus: entries, programs, setup, templates,
# tokens), results.json 6; Python's own parser stops near 1,000 with a RecursionError, and so would
# anything walking the value.
MAX_JSON_DEPTH = 32
# A line of a trace or an event log: a trace request of MAX_HASH_IDS ids of 19 digits is about 1.4 MB;
# an arrive event with the page keys of MAX_REQUEST_TOKENS tokens about 20 KB. 2 MiB holds either.
MAX_LINE_BYTES = 2 * MIB
# A line-oriented file (trace, event log, action list): read whole and parsed into Python objects at
# about ten times its size, so 64 MiB stays under 1 GB of memory; the shipped traces are 1 and 3 MB.
MAX_LINES_FILE_BYTES = 64 * MIB
# The lines of such a file: an event is about 100 bytes, so a full 64 MiB log has about 670,000 lines, a
# trace request 100 to 2,000; a file of 20 million tiny lines would make 40 million objects first.
MAX_FILE_LINES = 2_000_000
# A whole-file JSON or TOML document (a conformance program, results.json, an equivalence file): a
# full mutation run's results.json (754 mutants with diffs) is about 2 MB, a program a few KB.
MAX_DOCUMENT_BYTES = 32 * MIB
# A request's tokens in an event log (prompt, max_tokens) and an engine's context: twice the longest
# context of the models the engine runs (SmolLM2 8,192; tiny 2,048). The spec the validator grows has a
# page slot per 16 tokens, checked after every event: at this size an event takes about 30 ms, at
# 131,072 tokens seconds.
MAX_REQUEST_TOKENS = 1 << 14
# An event log's requests, and the time to validate it offline: the validator rebuilds the spec at
# every arrival and checks every safety property after every event, at a cost that grows with the
# requests arrived and their pages (linear in them since checks/conform/fastcheck.py: a 230-request,
# 4,635-event server log validates in 9-20 s here, where the properties' general forms took 380 s);
# no cost model is exact, so `validate` also stops after MAX_VALIDATION_SECONDS.
MAX_LOG_REQUESTS = 256
MAX_VALIDATION_SECONDS = 300.0
# A trace request's input_length / output_length: 64 times the 262,144-token contexts of today's
# longest-context models; the shipped traces' longest request has 191,378. The model only counts them.
MAX_TRACE_TOKENS = 1 << 24
# One trace request's hash_ids: MAX_TRACE_TOKENS in blocks of 256 tokens (Mooncake's are 512); the
# shipped traces' longest request has 374.
MAX_HASH_IDS = MAX_TRACE_TOKENS // 256
# All hash ids of one trace (one block lookup each, per configuration): the model spends about 8 us
# and 300 bytes on each, so 4,194,304 is about 35 s and 1.2 GB per configuration; the shipped
# conversation trace has 288,500.
MAX_TRACE_BLOCKS = 1 << 22
# A time in seconds since a log started (an event's "t"): about 31.7 years, far beyond any run, and a
# float still resolves a microsecond there (the runner checks arrival times to the microsecond).
MAX_SECONDS = 10**9
# A trace timestamp in milliseconds: the same span as MAX_SECONDS.
MAX_TIMESTAMP_MS = MAX_SECONDS * 1000
# A conformance program (conform --replay): generated ones have at most 28 operations and the corpus'
# longest 29 operations and 42 steps; the monitor checks every step (5 to 20 ms each on the tiny model,
# growing with the requests arrived), so 2,000 operations, 1,000 steps (and the runner's 300 drain
# steps) and 64 arrivals (Hypothesis campaigns stop at 6; the spec grows with each) are a run of
# seconds to a minute, not hours.
MAX_PROGRAM_OPS = 2000
MAX_PROGRAM_STEPS = 1000
MAX_PROGRAM_ARRIVALS = 64
# A counterexample path to replay: the explorer's are at most a few dozen actions (the longest of the
# design variants is 10); each action is one engine call under the monitor.
MAX_PATH_ACTIONS = 1000
# A program's request templates: generated ones have at most 5 (the largest scenario's requests: 4);
# each arrival grows the spec the monitor checks every event against.
MAX_TEMPLATES = 64
# The engine's KV pool in a program (config num_pages and the counts compared with it): default 512,
# the corpus' largest 22. A SmolLM2 page is 1.5 MB of float32 K/V (30 layers, 3 heads of 64), so the
# pool's memory is bounded by MAX_KV_POOL_BYTES as well, per model.
MAX_ENGINE_PAGES = 4096
MAX_KV_POOL_BYTES = 2 * (1 << 30)
# A sampling temperature: 0 is greedy; a positive one divides the logits, so near 0 they overflow (the
# engine refuses below 1e-6), and 100 is far past any useful value (OpenAI's API stops at 2). The same
# range as the engine's SamplingParams, so that a program's arrival is never refused by the engine.
MIN_TEMPERATURE = 1e-6
MAX_TEMPERATURE = 100.0
# A label or other free text of a program: shown in one line of a report.
MAX_LABEL_CHARS = 200
# Worker processes a workload sweep forks (--workers): more than the cores of any machine it runs on.
MAX_WORKERS = 64
# How much of an input value a message quotes, and how long a message may grow in all.
MAX_SHOWN_CHARS = 80
MAX_MESSAGE_CHARS = 2000
# A reason or note of a diagnosis of a log (a sentence that may quote the log's values).
MAX_REASON_CHARS = 500


# --- printing what came from outside -------------------------------------------------------------------
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` safe to print anywhere: lone surrogates (a JSON ``"\\ud800"``) and control characters
    other than newline and tab are escaped (``\\ud800``, ``\\x1b``), so no print can fail or steer a
    terminal."""
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii")
                            if ord(m.group()) < 0xD800 else f"\\u{ord(m.group()):04x}", text)


def shorten(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut to about ``limit`` characters, saying how long it was: ``abc... (1,000,000 characters)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """An input value as a message quotes it: its JSON or Python text, escaped, cut to ``limit``
    characters (the one helper every message that quotes a value goes through)."""
    if isinstance(value, (list, dict)):
        text, size = "", f"an array of {len(value):,} items" if isinstance(value, list) else f"an object of {len(value):,} keys"
        try:
            for chunk in json.JSONEncoder(default=repr).iterencode(value):
                text += chunk
                if len(text) > limit:
                    return printable(f"{text[:limit]}... ({size})")
        except (RecursionError, ValueError):
            return size
        return printable(text)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"  # str() could be refused
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__}"
    return printable(shorten(text, limit))


class InputError(ValueError):
    """Bad input: the message names the source (a file), the line (1-based), the field, and what is wrong.

    ``line_number`` and ``field`` are None where they do not apply (an empty file, a whole line). The
    message is made printable and cut to :data:`MAX_MESSAGE_CHARS` (a value quoted whole by mistake
    cannot flood a terminal).
    """

    def __init__(self, source: str, line_number: int | None, field: str | None, message: str) -> None:
        self.source = source
        self.line_number = line_number
        self.field = None if field is None else printable(shorten(str(field), MAX_SHOWN_CHARS))
        self.message = printable(shorten(message, MAX_MESSAGE_CHARS))
        where = printable(str(source)) + (f" line {line_number}" if line_number is not None else "")
        super().__init__(f"{where}{f', field {self.field!r}' if self.field else ''}: {self.message}")


# --- reading files -------------------------------------------------------------------------------------
def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n // KIB} KiB" if n % KIB == 0 else f"{n:,} bytes"


def read_file_bytes(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; the one way every reader opens a file.

    The file is opened without blocking and checked before a byte is read: a directory, a FIFO, a
    device or a socket (reading it could block or never end) is an :class:`InputError`, and so is a
    missing or unreadable file and one larger than ``max_bytes`` (checked again while reading, should it
    grow). ``what`` names what the file should be (``"a file of events"``), for the messages.
    """
    source = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(source, flags)
    except FileNotFoundError:
        raise InputError(source, None, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(source, None, None, f"is a directory, not {what}") from None
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path
        reason = getattr(error, "strerror", None) or str(error)
        raise InputError(source, None, None, f"cannot be read ({reason})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(source, None, None, f"is a directory, not {what}")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(source, None, None, f"is not a regular file (a FIFO, a device or a socket: reading "
                                                 f"it could block or never end); expected {what}")
        too_big = InputError(source, None, None, f"is larger than {_size(max_bytes)}, the most flightcheck reads "
                                                 f"as {what}")
        if st.st_size > max_bytes:
            raise too_big
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(max_bytes + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise too_big
        return b"".join(chunks)
    except OSError as error:
        raise InputError(source, None, None, f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)


def read_lines(path: str | os.PathLike[str], what: str = "records", *, max_bytes: int = MAX_LINES_FILE_BYTES,
               max_line_bytes: int = MAX_LINE_BYTES) -> list[str]:
    """The lines of a text file (without their newlines), UTF-8 checked line by line.

    Raises :class:`InputError` for a missing file, a directory or other non-regular file, an unreadable
    file, a file over ``max_bytes`` or :data:`MAX_FILE_LINES` lines, a line over ``max_line_bytes`` or a
    line that is not UTF-8 (naming the line and the column of the first bad byte).
    """
    return decode_lines(read_file_bytes(path, f"a file of {what}", max_bytes), str(path), max_line_bytes)


def decode_lines(data: bytes, source: str, max_line_bytes: int = MAX_LINE_BYTES) -> list[str]:
    """``data`` split at newlines and decoded as UTF-8; a bad byte names its line and column, and so does
    a line longer than ``max_line_bytes``; more than :data:`MAX_FILE_LINES` lines is an error before
    any is split off."""
    if data.count(b"\n") >= MAX_FILE_LINES:
        raise InputError(source, None, None, f"holds more than {MAX_FILE_LINES:,} lines (MAX_FILE_LINES)")
    lines = data.split(b"\n")
    out = []
    for number, raw in enumerate(lines, 1):
        if len(raw) > max_line_bytes:
            raise InputError(source, number, None, f"the line is {len(raw):,} bytes long; a line may hold at most "
                                                   f"{_size(max_line_bytes)}")
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise InputError(source, number, None, f"not UTF-8 text (byte 0x{raw[error.start]:02x} at column "
                                                   f"{error.start + 1}); the file must be UTF-8") from None
    return out


def read_text_file(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """A whole file as text: a regular file of at most ``max_bytes`` (:func:`read_file_bytes`), UTF-8
    (a bad byte names its line and column); an :class:`InputError` otherwise."""
    data = read_file_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise InputError(str(path), line, None, f"not UTF-8 text (byte 0x{data[error.start]:02x} at column "
                                                f"{column}); the file must be UTF-8") from None


def read_json_file(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_DOCUMENT_BYTES,
                   max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A whole file as one JSON value (:func:`read_text_file`, then :func:`parse_json`); an empty file
    and one nested deeper than ``max_depth`` are :class:`InputError` s too."""
    text = read_text_file(path, what, max_bytes)
    if not text.strip():
        raise InputError(str(path), None, None, f"the file is empty (expected {what})")
    return parse_json(text, str(path), None, max_depth)


def record_lines(lines: Iterable[str], source: str, what: str) -> list[tuple[int, str]]:
    """The numbered lines that hold records, by the one blank-line rule (see the module docstring)."""
    raw = list(lines)
    if raw and raw[-1] == "":
        raw.pop()  # the newline that ends the last line
    numbered = []
    for number, line in enumerate(raw, 1):
        if not line.strip():
            raise InputError(source, number, None, "blank line (every line must hold one record; only the last "
                                                   "line may end with a newline)")
        numbered.append((number, line))
    if not numbered:
        raise InputError(source, None, None, f"the file is empty (expected {what})")
    return numbered


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``value`` nests (a scalar 0, ``[1]`` 1, ``{"a": [1]}`` 2), without recursion; the walk
    stops as soon as the depth passes ``limit``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if not isinstance(v, (list, dict)):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in (v.values() if isinstance(v, dict) else v)
                     if isinstance(child, (list, dict)))
    return deepest


def parse_json(text: str, source: str, line_number: int | None, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` whose every failure (syntax, oversized numbers, nesting deeper than ``max_depth``)
    is an :class:`InputError`."""
    too_deep = f"not valid JSON here (nested too deeply: more than {max_depth} levels)"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        line = line_number if line_number is not None else error.lineno
        raise InputError(source, line, None, f"not valid JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:
        raise InputError(source, line_number, None, too_deep) from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise InputError(source, line_number, None, f"not valid JSON here ({error})") from None
    if json_depth(value, max_depth) > max_depth:
        raise InputError(source, line_number, None, too_deep)
    return value


def json_records(lines: Iterable[str], source: str, what: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every record line; each must be one JSON object."""
    out = []
    for number, line in record_lines(lines, source, what):
        obj = parse_json(line, source, number)
        if not isinstance(obj, dict):
            raise InputError(source, number, None, f"expected a JSON object, got {json_type(obj)}")
        out.append((number, obj))
    return out


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type: ``object``, ``array``, ``string``, ``number`` ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- kinds of fields -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """What a field's value must be: ``expected`` in words, ``test`` the check, ``inner`` for containers
    and ranges (checked once ``test`` holds).

    :meth:`problem` returns None for a good value, else ``(sub-path, message)``: the sub-path is ``""``
    for the value itself, ``"[2]"`` or ``".key"`` (joined) inside lists and objects.
    """

    expected: str
    test: Callable[[Any], bool]
    inner: Callable[[Any], tuple[str, str] | None] | None = None

    def problem(self, value: Any) -> tuple[str, str] | None:
        """None if ``value`` is of this kind, else where inside it and what is wrong."""
        if not self.test(value):
            return "", f"must be {self.expected}, got {_show(value)}"
        return self.inner(value) if self.inner is not None else None


def _show(value: Any) -> str:
    return shown(value, 40)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def at_most(kind: Kind, high: int | float, why: str) -> Kind:
    """``kind`` whose values may not exceed ``high``; the message says ``why`` the limit is what it is.

    For example::

        >>> at_most(COUNT, 10, "ten fingers").problem(11)
        ('', 'must be at most 10 (ten fingers), got 11')
    """
    def inner(value: Any) -> tuple[str, str] | None:
        if value > high:
            return "", f"must be at most {high:,} ({why}), got {_show(value)}"
        return kind.inner(value) if kind.inner is not None else None
    return Kind(kind.expected, kind.test, inner)


def _int_in_64_bits(value: Any) -> tuple[str, str] | None:
    if not MIN_INT <= value <= MAX_INT:
        return "", f"must fit in 64 bits ({MIN_INT:,} to {MAX_INT:,}), got {_show(value)}"
    return None


INT = Kind("an integer", _is_int, _int_in_64_bits)
COUNT = Kind("an integer >= 0", lambda v: _is_int(v) and v >= 0, _int_in_64_bits)
POSITIVE = Kind("an integer >= 1", lambda v: _is_int(v) and v >= 1, _int_in_64_bits)
STR = Kind("a string", lambda v: isinstance(v, str))
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
SECONDS = at_most(Kind("a finite number >= 0", lambda v: _is_number(v) and v >= 0), MAX_SECONDS,
                  "about 31.7 years: MAX_SECONDS")
# A request's tokens in an event log (its prompt's num_tokens, its max_tokens, its pages).
TOKENS = at_most(POSITIVE, MAX_REQUEST_TOKENS, "the longest request flightcheck reads: MAX_REQUEST_TOKENS")


def nullable(kind: Kind) -> Kind:
    """``kind`` or JSON null."""
    return Kind(f"{kind.expected} or null", lambda v: v is None or kind.test(v),
                lambda v: None if v is None else kind.problem(v))


def one_of(*choices: str) -> Kind:
    """One of the given strings."""
    return Kind(f"one of {', '.join(choices)}", lambda v: isinstance(v, str) and v in choices)


def list_of(kind: Kind) -> Kind:
    """A JSON array whose every element is of ``kind``."""
    def inner(values: list) -> tuple[str, str] | None:
        for index, value in enumerate(values):
            found = kind.problem(value)
            if found is not None:
                return f"[{index}]{found[0]}", found[1]
        return None
    return Kind(f"an array of {_plural(kind.expected)}", lambda v: isinstance(v, list), inner)


@dataclass(frozen=True)
class Field:
    """One field of a record: its :class:`Kind` and whether a record must have it."""

    kind: Kind
    required: bool = True


def required(kind: Kind) -> Field:
    """A field every record must carry."""
    return Field(kind, True)


def optional(kind: Kind) -> Field:
    """A field a record may leave out (checked when present)."""
    return Field(kind, False)


def record(fields: Mapping[str, Field], *, closed: bool = False) -> Kind:
    """A JSON object with ``fields``; ``closed`` rejects keys the table does not list."""
    def inner(obj: dict) -> tuple[str, str] | None:
        found = check_fields(obj, fields, closed=closed)
        return None if found is None else (f".{found[0]}", found[1])
    return Kind("an object", lambda v: isinstance(v, dict), inner)


def check_fields(obj: Mapping[str, Any], fields: Mapping[str, Field], *,
                 closed: bool = False) -> tuple[str, str] | None:
    """The first problem of ``obj`` against ``fields`` as ``(field path, message)``, or None.

    Missing required fields come first (in table order), then wrong kinds, then (``closed``) unknown keys.
    """
    for name, f in fields.items():
        if f.required and name not in obj:
            return name, f"missing (expected {f.kind.expected})"
    for name, f in fields.items():
        if name in obj:
            found = f.kind.problem(obj[name])
            if found is not None:
                return name + found[0], found[1]
    if closed:
        for name in obj:
            if name not in fields:
                return shorten(str(name)), f"unknown (known: {', '.join(fields)})"
    return None


def _plural(expected: str) -> str:
    # "an integer >= 0" -> "integers >= 0"; "an object" -> "objects"
    words = expected.split(" ", 1)
    if words[0] in ("a", "an") and len(words) == 2:
        head, _, rest = words[1].partition(" ")
        return f"{head}s{(' ' + rest) if rest else ''}"
    return expected
