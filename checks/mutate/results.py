"""What a mutation run returns: one :class:`Outcome` per mutant, and the score over them.

A mutant is *killed* when a row of the stages fails (``failed``), when its process crashes
(``crashed``) or when it runs past the per-mutant timeout (``timeout``); it *survives* when every row
passes. ``skipped`` (a class of :mod:`~flightcheck.checks.mutate.skips`) and ``equivalent`` (recorded
in the equivalence file) are not run and not scored. The score is killed / (killed + survived).

For example::

    >>> outs = [Outcome("a", "failed"), Outcome("b", "survived"), Outcome("c", "equivalent"),
    ...         Outcome("d", "timeout")]
    >>> s = score(outs)
    >>> s.killed, s.survived, s.equivalent, round(s.score, 3)
    (2, 1, 1, 0.667)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

KILLED = ("failed", "crashed", "timeout")
STATUSES = KILLED + ("survived", "skipped", "equivalent")


@dataclass
class Kill:
    """A failed row of a killed mutant: which row, the properties its diagnosis names, the run's length."""

    stage: str
    item: str
    detail: str
    properties: list[str] = field(default_factory=list)
    run_length: int | None = None    # rules in the shrunk failing run, when the row has one
    rules: list[str] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Kill":
        """Read a failed row's evidence (``{"failure": {"rules": [...], "diagnosis": {...}}}``)."""
        failure = (row.get("evidence") or {}).get("failure") or {}
        diagnosis = failure.get("diagnosis") or {}
        rules = list(failure.get("rules") or [])
        return cls(row["stage"], row["item"], row["detail"], list(diagnosis.get("properties") or []),
                   len(rules) if "rules" in failure else None, rules)


@dataclass
class Outcome:
    """What happened to one mutant."""

    id: str
    status: str                      # one of STATUSES
    seconds: float = 0.0
    reason: str = ""                 # skip rule / equivalence reason / crash or timeout detail
    kills: list[Kill] = field(default_factory=list)
    imported: bool | None = None     # whether the stages imported the mutated module at all

    @property
    def is_killed(self) -> bool:
        """Whether a failed row, a crash or the timeout killed the mutant."""
        return self.status in KILLED

    @property
    def shortest(self) -> Kill | None:
        """The failed row with the shortest shrunk run (the one to read first)."""
        runs = [k for k in self.kills if k.run_length is not None]
        return min(runs, key=lambda k: k.run_length) if runs else (self.kills[0] if self.kills else None)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Outcome":
        """Read back what :meth:`to_json` wrote (extra keys, such as the mutant's own, are ignored)."""
        kills = [Kill(**k) for k in data.get("kills", [])]
        return cls(data["id"], data["status"], data.get("seconds", 0.0), data.get("reason", ""), kills,
                   data.get("imported"))


@dataclass(frozen=True)
class Score:
    """Counts over a set of outcomes, and killed / (killed + survived)."""

    killed: int
    survived: int
    skipped: int
    equivalent: int
    by_status: dict[str, int]

    @property
    def score(self) -> float | None:
        """killed / (killed + survived); None when nothing was scored."""
        scored = self.killed + self.survived
        return self.killed / scored if scored else None


def score(outcomes: list[Outcome]) -> Score:
    """The score of ``outcomes``: equivalent and skipped mutants are left out."""
    by_status = {s: sum(o.status == s for o in outcomes) for s in STATUSES}
    return Score(sum(by_status[s] for s in KILLED), by_status["survived"], by_status["skipped"],
                 by_status["equivalent"], by_status)
