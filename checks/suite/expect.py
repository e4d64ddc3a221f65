"""What ``flightcheck check`` expects: every figure it pins, recorded once, compared every run.

A verdict that only says "no property failed" misses a change that breaks nothing it checks: a spec edit
that grows a scenario's graph, a proof that drops from "proved" to "bounded", a variant caught by a
longer path, an engine whose corpus runs take other steps. So each stage records its figures here
(``checks/suite/expectations.json``): state counts per scenario and policy, each variant's violated
property and path length, each proof's verdicts and ``k``, each equivalence verdict, the workload
counts, and each safety property's fingerprint (:mod:`flightcheck.checks.explore.fingerprint`). A run that gives another figure fails its row and says what changed; after a change that is
meant, ``flightcheck check --record`` writes the new figures (review the diff like any other).

The file is trusted only as far as it is checked, so:

- it is read strictly (:func:`load`): a regular file of at most :data:`MAX_BYTES`, JSON, and every
  section and figure of the shape :func:`schema` gives; anything else is an :class:`ExpectationsError`
  (bad input, exit 2) naming the section and the item;
- a figure that a run produces and the file lacks fails its row ("not recorded"): a lost file or a lost
  section never turns every comparison into a silent pass;
- recording merges (:meth:`Expectations.merged`): the figures of what ran replace the recorded ones,
  every other figure is kept byte for byte; a section is replaced whole (dropping items no longer
  produced) only when its stage ran in full;
- the file is replaced atomically, so an interrupted recording leaves the old one.

For example::

    >>> book = Expectations({"explore": {"burst2": 52}}, strict=True)
    >>> book.compare("explore", "burst2", 52), book.compare("explore", "burst2", 54)
    (None, 'was 52, now 54')
    >>> book.compare("explore", "burst3", 160)
    'not recorded (now 160); after review, record it with flightcheck check --record'
    >>> Expectations().compare("explore", "burst3", 160) is None  # a recording run compares with nothing
    True
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from flightcheck.checks.inputs import InputError

EXPECTATIONS_PATH = Path(__file__).with_name("expectations.json")
MAX_BYTES = 16 * 2**20  # today's file is about 150 KB; a file far larger is not one check wrote


def is_count(v: Any) -> bool:
    """An integer >= 0 (not a bool)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def is_text(v: Any) -> bool:
    """A string."""
    return isinstance(v, str)


def pair_of(first: Callable[[Any], bool], second: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """The test of a two-item list whose items pass ``first`` and ``second``.

    >>> pair_of(is_text, is_count)(["no_deadlock", 3]), pair_of(is_text, is_count)(["no_deadlock"])
    (True, False)
    """
    return lambda v: isinstance(v, list) and len(v) == 2 and first(v[0]) and second(v[1])


def sorted_names(v: Any) -> bool:
    """A sorted list of strings."""
    return isinstance(v, list) and all(map(is_text, v)) and v == sorted(v)


def is_text_map(v: Any) -> bool:
    """An object whose values are strings."""
    return isinstance(v, dict) and all(map(is_text, v.values()))


def is_count_map(v: Any) -> bool:
    """An object whose values are counts (:func:`is_count`)."""
    return isinstance(v, dict) and all(map(is_count, v.values()))


def is_verdict_map(v: Any) -> bool:
    """An object whose values are proved, cti or unknown."""
    return isinstance(v, dict) and all(x in ("proved", "cti", "unknown") for x in v.values())


def schema() -> dict[str, tuple[str, Callable[[Any], bool]]]:
    """Every section the file may hold, each with what one of its figures must look like (words, and a
    test): the sections each stage declares it compares (its ``Stage.expects``,
    :mod:`flightcheck.checks.suite.registry`), in the order the stages run."""
    from flightcheck.checks.suite.registry import stages

    return {section: what for stage in stages() for section, what in stage.expects.items()}


class ExpectationsError(InputError):
    """The recorded figures file is missing, unreadable or not of the schema (bad input: exit 2)."""


def load(path: Path = EXPECTATIONS_PATH, *, missing_ok: bool = False) -> dict[str, dict[str, Any]]:
    """The recorded figures at ``path``, checked against :func:`schema` (``{}`` for a missing file when
    ``missing_ok``, as when recording for the first time)."""
    source = str(path)
    try:
        if path.is_dir() or (path.exists() and not path.is_file()):
            raise ExpectationsError(source, None, None, "is not a regular file of recorded figures")
        size = path.stat().st_size if path.exists() else None
    except OSError as error:
        raise ExpectationsError(source, None, None, f"cannot be read ({error.strerror or error})") from None
    if size is None:
        if missing_ok:
            return {}
        raise ExpectationsError(source, None, None, "no such file: check compares every figure with the recorded "
                                                    "ones (record them with flightcheck check --record)")
    if size > MAX_BYTES:
        raise ExpectationsError(source, None, None, f"is {size:,} bytes; recorded figures are at most {MAX_BYTES:,}")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as error:
        raise ExpectationsError(source, None, None, f"cannot be read ({error.strerror or error})") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ExpectationsError(source, None, None, f"is not JSON text ({str(error)[:120]})") from None
    check(data, source)
    return data


def check(data: Any, source: str = "recorded figures") -> None:
    """Raise :class:`ExpectationsError` naming the first section or figure of ``data`` that is not of
    :func:`schema`."""
    if not isinstance(data, dict):
        raise ExpectationsError(source, None, None, "must be a JSON object of sections")
    known = schema()
    for section, items in data.items():
        if section not in known:
            raise ExpectationsError(source, None, section, f"unknown section; known: {', '.join(known)}")
        if not isinstance(items, dict):
            raise ExpectationsError(source, None, section, "must be an object of item -> figure")
        what, ok = known[section]
        for item, value in items.items():
            if not ok(value):
                shown = json.dumps(value)
                shown = shown if len(shown) <= 80 else shown[:80] + f"... ({len(shown)} characters)"
                raise ExpectationsError(source, None, f"{section}.{item}", f"must be {what}, got {shown}")


class Expectations:
    """The recorded figures, and the ones this run saw (to write back with ``--record``).

    ``strict`` (as :meth:`load` makes it): a figure with no recording fails its comparison. A
    recording run (:meth:`for_recording`) compares with nothing and keeps the recorded figures only
    to merge this run's into them.
    """

    def __init__(self, recorded: dict[str, dict[str, Any]] | None = None, *, strict: bool = False,
                 compare_with: dict[str, dict[str, Any]] | None = None) -> None:
        self.recorded = recorded or {}
        self.strict = strict
        self._want = self.recorded if compare_with is None else compare_with
        self.seen: dict[str, dict[str, Any]] = {}

    @classmethod
    def load(cls, path: Path = EXPECTATIONS_PATH) -> "Expectations":
        """The recorded figures at ``path`` (strict: every figure a run produces must be recorded)."""
        return cls(load(path), strict=True)

    @classmethod
    def for_recording(cls, path: Path = EXPECTATIONS_PATH) -> "Expectations":
        """For ``check --record``: nothing is compared; the figures at ``path`` (if any) are kept to merge."""
        return cls(load(path, missing_ok=True), strict=False, compare_with={})

    def compare(self, stage: str, item: str, value: Any) -> str | None:
        """Note ``value``; None when it is what was recorded, else what changed (or that nothing was
        recorded, when strict)."""
        value = json.loads(json.dumps(value))  # tuples and lists compare alike once recorded
        self.seen.setdefault(stage, {})[item] = value
        section = self._want.get(stage, {})
        if item not in section:
            if not self.strict:
                return None
            return (f"not recorded (now {_text(value)}); after review, record it with flightcheck check --record")
        want = section[item]
        return None if want == value else f"was {_text(want)}, now {_text(value)}"

    def has(self, stage: str, item: str) -> bool:
        """Whether a figure is recorded for ``item``."""
        return item in self.recorded.get(stage, {})

    def merged(self, complete: set[str] = frozenset()) -> dict[str, dict[str, Any]]:
        """The recorded figures with this run's: an item seen replaces its recording, every other item is
        kept; a section in ``complete`` (its stage ran in full) is replaced whole."""
        out = {section: dict(items) for section, items in self.recorded.items()}
        for section, items in self.seen.items():
            out[section] = dict(items) if section in complete else {**out.get(section, {}), **items}
        return out

    def dropped(self, complete: set[str] = frozenset()) -> dict[str, list[str]]:
        """Items that :meth:`merged` leaves out: recorded in a complete section and not produced any more."""
        return {s: sorted(set(self.recorded.get(s, {})) - set(items)) for s, items in self.seen.items()
                if s in complete and set(self.recorded.get(s, {})) - set(items)}

    def save(self, path: Path = EXPECTATIONS_PATH, complete: set[str] = frozenset()) -> Path:
        """Write :meth:`merged` to ``path`` atomically (a new file renamed over the old)."""
        data = self.merged(complete)
        check(data, str(path))
        write_atomically(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
        return path


def writable(path: Path) -> str | None:
    """None when ``path`` can be replaced by a recording; else why not (checked before any stage runs,
    so a read-only checkout is told at once, not after the whole job)."""
    folder = path.parent
    if not folder.is_dir():
        return f"its folder {folder} does not exist"
    if path.exists() and not path.is_file():
        return "it is not a regular file"
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "it is not writable here (a read-only checkout?)"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".expectations-", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        return f"its folder cannot be written ({error.strerror or error})"
    return None


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` by ``text``: written to a temporary file beside it, then renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".expectations-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _text(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, (int, str)) else str(value)


__all__ = ["EXPECTATIONS_PATH", "Expectations", "ExpectationsError", "check", "is_count", "is_count_map", "is_text",
           "is_text_map", "is_verdict_map", "load", "pair_of", "schema", "sorted_names", "writable", "write_atomically"]
