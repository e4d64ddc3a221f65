"""Reading input files strictly, the same way for every reader: traces, event logs, action lists.

Every reader of a line-oriented file (a request trace, an engine event log, a list of actions to
replay) goes through :func:`read_lines` and :func:`json_records`, so the rules are one:

- the file is UTF-8; a line that is not names its line and column;
- every line holds one record; the newline that ends the last line is fine, any other blank line
  (empty or only spaces) is an error naming its line: nothing is skipped silently;
- an empty file is an error (the reader says what it expected);
- a JSON line that does not parse, or parses to something that is not an object, names its line.

Fields are checked against :class:`Kind` s (an integer >= 0, a string, a list of such, an object of
such ...), whose failures name the field (``pages[1].key``), what was expected and what was found.
Every failure is an :class:`InputError` (a ``ValueError``) whose message reads
``FILE line N, field 'F': what is wrong`` so the command line can print it and exit 2.

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
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class InputError(ValueError):
    """Bad input: the message names the source (a file), the line (1-based), the field, and what is wrong.

    ``line_number`` and ``field`` are None where they do not apply (an empty file, a whole line).
    """

    def __init__(self, source: str, line_number: int | None, field: str | None, message: str) -> None:
        self.source = source
        self.line_number = line_number
        self.field = field
        self.message = message
        where = str(source) + (f" line {line_number}" if line_number is not None else "")
        super().__init__(f"{where}{f', field {field!r}' if field else ''}: {message}")


def read_lines(path: str | os.PathLike[str], what: str = "records") -> list[str]:
    """The lines of a text file (without their newlines), UTF-8 checked line by line.

    Raises :class:`InputError` for a missing file, a directory or other non-regular file, an unreadable
    file or a line that is not UTF-8 (naming the line and the column of the first bad byte).
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(str(p), None, None, f"is a directory, not a file of {what}")
    if p.exists() and not p.is_file():  # a FIFO or a device: reading it could block or never end
        raise InputError(str(p), None, None, f"is not a regular file (expected a file of {what})")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(str(p), None, None, "no such file") from None
    except OSError as error:
        raise InputError(str(p), None, None, f"cannot be read ({error.strerror or error})") from None
    return decode_lines(data, str(p))


def decode_lines(data: bytes, source: str) -> list[str]:
    """``data`` split at newlines and decoded as UTF-8; a bad byte names its line and column."""
    lines = data.split(b"\n")
    out = []
    for number, raw in enumerate(lines, 1):
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise InputError(source, number, None, f"not UTF-8 text (byte 0x{raw[error.start]:02x} at column "
                                                   f"{error.start + 1}); the file must be UTF-8") from None
    return out


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


def parse_json(text: str, source: str, line_number: int | None) -> Any:
    """``json.loads`` whose every failure (syntax, oversized numbers, deep nesting) is an :class:`InputError`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        line = line_number if line_number is not None else error.lineno
        raise InputError(source, line, None, f"not valid JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:
        raise InputError(source, line_number, None, "not valid JSON here (nested too deeply)") from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise InputError(source, line_number, None, f"not valid JSON here ({error})") from None


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


@dataclass(frozen=True)
class Kind:
    """What a field's value must be: ``expected`` in words, ``test`` the check, ``inner`` for containers.

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
    text = json.dumps(value) if isinstance(value, (list, dict)) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


INT = Kind("an integer", _is_int)
COUNT = Kind("an integer >= 0", lambda v: _is_int(v) and v >= 0)
POSITIVE = Kind("an integer >= 1", lambda v: _is_int(v) and v >= 1)
STR = Kind("a string", lambda v: isinstance(v, str))
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
SECONDS = Kind("a finite number >= 0", lambda v: (_is_int(v) or isinstance(v, float)) and math.isfinite(v) and v >= 0)


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
                return str(name), f"unknown (known: {', '.join(fields)})"
    return None


def _plural(expected: str) -> str:
    # "an integer >= 0" -> "integers >= 0"; "an object" -> "objects"
    words = expected.split(" ", 1)
    if words[0] in ("a", "an") and len(words) == 2:
        head, _, rest = words[1].partition(" ")
        return f"{head}s{(' ' + rest) if rest else ''}"
    return expected
