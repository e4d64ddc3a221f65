"""The equivalence file: survivors a person has shown cannot change the engine's behaviour, with why.

A TOML file of ``[[equivalent]]`` tables, each an ``id`` (a mutant's stable ID, as ``flightcheck
mutate`` prints it) and a ``reason``. Listed mutants are not run and not scored; the report lists
them with their reasons, and names entries that match no generated mutant any more (stale: the code
they were about has changed, so the judgement needs a fresh look).

For example::

    >>> text = '[[equivalent]]\\nid = "impl/pages.py::PagePool.victim::swap_op::a < b => a <= b"\\nreason = "ties"\\n'
    >>> parse_equivalents(text, "eq.toml")
    {'impl/pages.py::PagePool.victim::swap_op::a < b => a <= b': 'ties'}
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from flightcheck.checks.inputs import read_text_file, shown

DEFAULT_PATH = Path(__file__).with_name("equivalent_mutants.toml")


def parse_equivalents(text: str, name: str) -> dict[str, str]:
    """ID -> reason; a ValueError naming the file and the entry for anything malformed (nesting too deep
    for the TOML parser included)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{name}: not valid TOML: {e}") from None
    except RecursionError:
        raise ValueError(f"{name}: not valid TOML here (nested too deeply)") from None
    unknown = set(data) - {"equivalent"}
    if unknown:
        raise ValueError(f"{name}: unexpected top-level key(s) {', '.join(sorted(unknown))}; expected [[equivalent]] tables")
    entries = data.get("equivalent", [])
    if not isinstance(entries, list):
        raise ValueError(f"{name}: 'equivalent' must be an array of tables ([[equivalent]])")
    out: dict[str, str] = {}
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != {"id", "reason"}:
            raise ValueError(f"{name}: entry {n} must have exactly the keys 'id' and 'reason'")
        ident, reason = entry["id"], entry["reason"]
        if not isinstance(ident, str) or not ident.strip():
            raise ValueError(f"{name}: entry {n}: 'id' must be a non-empty string")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{name}: entry {n} ({shown(ident)}): 'reason' must say why the mutant is equivalent")
        if ident in out:
            raise ValueError(f"{name}: entry {n}: {shown(ident)} is listed twice")
        out[ident] = reason.strip()
    return out


def load_equivalents(path: Path | None = None) -> dict[str, str]:
    """The equivalence file at ``path`` (default: the project's own, beside this module); {} if the
    default is absent. Read by the strict whole-file reader (a regular UTF-8 file of at most
    :data:`~flightcheck.checks.inputs.MAX_DOCUMENT_BYTES`): anything else is a ValueError
    (:class:`~flightcheck.checks.inputs.InputError`) naming the file."""
    path = DEFAULT_PATH if path is None else Path(path)
    if not os.path.lexists(path):
        if path == DEFAULT_PATH:
            return {}
        raise ValueError(f"{path}: no such equivalence file")
    return parse_equivalents(read_text_file(path, "an equivalence file (TOML)"), str(path))
