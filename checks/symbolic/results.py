"""What a check reports per action: the bound, the states covered, the verdict, the time, a counterexample.

A verdict is ``verified`` (every state in the bound was checked and the action's obligations held at
each), ``counterexample`` (one failed; the :class:`Counterexample` says where) or ``unfinished`` (the
enumeration or CrossHair stopped before covering the bound: never reported as verified).

For example::

    >>> r = ActionResult("admit", "N=2,M=6", "exhaustive", states=10, commands=4, events=4, verdict="verified",
    ...                  seconds=0.01)
    >>> r.line()
    'admit      N=2,M=6  exhaustive   states 10  commands 4  events 4  verified  0.01 s'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.symbolic.harness import Command
from flightcheck.checks.symbolic.obligations import Finding

VERDICTS = ("verified", "counterexample", "unfinished")


@dataclass
class Counterexample:
    """A failed obligation at a concrete engine state: the configuration, the engine commands from the
    empty engine to the state, the finding (its command is the one that failed, or None for a
    spec-enabled action the engine's guard refuses), the conformance program standing for the path
    (JSON for ``flightcheck conform --replay``) and, once replayed, what the replay found."""

    config: str
    path: list[Command]
    finding: Finding
    program: dict[str, Any] | None = None
    replay: str | None = None

    def format(self) -> str:
        """The configuration, the path, the finding."""
        steps = ", ".join(map(str, self.path)) or "(the empty engine)"
        replay = f"\nreplayed as a conformance program: {self.replay}" if self.replay else ""
        return f"[{self.config}] after {steps}:\n{self.finding.format()}{replay}"


@dataclass
class ActionResult:
    """One spec action's row: its name, the bound, the strategy (``exhaustive`` or ``crosshair``), the
    states at which its obligations were checked, the engine commands of it run and compared, the events
    of it checked (also inside other commands: an eviction in a prefill, a promotion in an abort), the
    verdict, the seconds its obligations took, and the first counterexample."""

    action: str
    bound: str
    method: str
    states: int = 0
    commands: int = 0
    events: int = 0
    verdict: str = "unfinished"
    seconds: float = 0.0
    counterexample: Counterexample | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """Whether every state in the bound was covered and the obligations held."""
        return self.verdict == "verified"

    def line(self) -> str:
        """One line for a table."""
        return (f"{self.action:10s} {self.bound:8s} {self.method:12s} states {self.states}  commands {self.commands}  "
                f"events {self.events}  {self.verdict}  {self.seconds:.2f} s")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        out = {k: v for k, v in self.__dict__.items() if k != "counterexample"}
        ce = self.counterexample
        if ce is not None:
            out["counterexample"] = {"config": ce.config, "path": [str(c) for c in ce.path],
                                     "finding": ce.finding.format(), "diff": ce.finding.diff,
                                     "properties": ce.finding.properties, "program": ce.program, "replay": ce.replay}
        return out
