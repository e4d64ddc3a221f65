"""What ``flightcheck check`` expects: every figure it pins, recorded once, compared every run.

A verdict that only says "no property failed" misses a change that breaks nothing it checks: a spec edit
that grows a scenario's graph, a proof that drops from "proved" to "bounded", a variant caught by a
longer path, an engine whose corpus runs take other steps. So each stage records its figures here
(``checks/cli/expectations.json``): state counts per scenario and policy, each variant's violated
property and path length, each proof's verdicts and ``k``, each equivalence verdict, the corpus's
covered edges. A run that gives another figure fails its row and says what changed; after a change
that is meant, ``flightcheck check --record`` writes the new figures (review the diff like any other).

For example::

    >>> book = Expectations({"explore": {"burst2": 52}})
    >>> book.compare("explore", "burst2", 52), book.compare("explore", "burst2", 54)
    (None, 'was 52, now 54')
    >>> book.compare("explore", "burst3", 160) is None
    True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXPECTATIONS_PATH = Path(__file__).with_name("expectations.json")


class Expectations:
    """The recorded figures, and the ones this run saw (to write back with ``--record``)."""

    def __init__(self, recorded: dict[str, dict[str, Any]] | None = None) -> None:
        self.recorded = recorded or {}
        self.seen: dict[str, dict[str, Any]] = {}

    @classmethod
    def load(cls, path: Path = EXPECTATIONS_PATH) -> "Expectations":
        """The recorded figures (none when the file is absent)."""
        return cls(json.loads(path.read_text()) if path.is_file() else {})

    def compare(self, stage: str, item: str, value: Any) -> str | None:
        """Note ``value``; None when it is what was recorded (or nothing was), else what changed."""
        value = json.loads(json.dumps(value))  # tuples and lists compare alike once recorded
        self.seen.setdefault(stage, {})[item] = value
        want = self.recorded.get(stage, {}).get(item)
        if want is None or want == value:
            return None
        return f"was {_text(want)}, now {_text(value)}"

    def has(self, stage: str, item: str) -> bool:
        """Whether a figure is recorded for ``item``."""
        return item in self.recorded.get(stage, {})

    def save(self, path: Path = EXPECTATIONS_PATH) -> Path:
        """Write this run's figures over the recorded ones (stages not run this time are kept)."""
        merged = {**self.recorded, **self.seen}
        path.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
        return path


def _text(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, (int, str)) else str(value)
