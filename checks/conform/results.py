"""What a conformance campaign returns: its options, its verdict and figures, and the shrunk failing run.

For example::

    >>> r = ConformResult(ok=True, runs=3)
    >>> r.to_json()["verdict"], ConformOptions().examples
    ('conformed', 30)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.conform.diagnosis import Diagnosis


@dataclass(frozen=True)
class ConformOptions:
    """What a conformance campaign runs: model, fixed policy knobs (None: Hypothesis picks), budgets."""

    model: str = "tiny"
    release: str | None = None
    publication: str | None = None
    coordination: str | None = None
    leader_loss: str | None = None
    examples: int = 30
    seconds: float | None = None
    max_rules: int = 25
    seed: int | None = None
    shrink_seconds: float = 20.0


@dataclass
class ConformFailure:
    """The shrunk failing run: its rules in order, the diagnosis, and the program that replays it."""

    rules: list[str]
    diagnosis: Diagnosis
    program: Any = None  # a flightcheck.checks.conform.program.Program
    seed: int | None = None
    saved_to: str | None = None  # where the program was written, for `flightcheck conform --replay`

    def format(self) -> str:
        """The rules as a numbered list, then the diagnosis, then how to replay it."""
        lines = ["shrunk failing scenario:"] + [f" {n:2d}. {r}" for n, r in enumerate(self.rules, 1)]
        lines.append(self.diagnosis.format())
        if self.seed is not None:
            lines.append(f"  found by the seeded campaign, seed {self.seed}")
        if self.saved_to:
            lines.append(f"  replay it: flightcheck conform --replay {self.saved_to}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"rules": self.rules, "diagnosis": self.diagnosis.to_json(), "seed": self.seed,
                "program": self.program.to_json() if self.program is not None else None, "saved_to": self.saved_to}


@dataclass
class ConformResult:
    """A campaign's verdict and figures."""

    ok: bool
    runs: int = 0
    steps: int = 0
    events: int = 0
    rules: int = 0
    seconds: float = 0.0
    transitions: set = field(default_factory=set)
    features: dict[str, int] = field(default_factory=dict)
    failure: ConformFailure | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (the spec transitions as a count)."""
        return {"verdict": "conformed" if self.ok else "failed", "runs": self.runs, "steps": self.steps,
                "events": self.events, "rules": self.rules, "seconds": round(self.seconds, 2),
                "spec_transitions": len(self.transitions), "features": self.features,
                "failure": self.failure.to_json() if self.failure else None}
