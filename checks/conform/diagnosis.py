"""What a conformance failure says: :class:`Diagnosis` (kind, event, reasons, properties at stake) and
:class:`ConformanceError`, the exception every conformance check raises with one.

For example::

    >>> d = Diagnosis("disabled", "admit(1) is not enabled in the spec", reasons=["r1 is blocked, not waiting"],
    ...               properties=["follower_waits_for_release"])
    >>> print(d.format())
    [disabled] admit(1) is not enabled in the spec
      - r1 is blocked, not waiting
      property at stake: follower_waits_for_release
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class ConformanceError(AssertionError):
    """The engine did something the spec does not allow; ``diagnosis`` says what and where."""

    def __init__(self, diagnosis: "Diagnosis") -> None:
        super().__init__(diagnosis.format())
        self.diagnosis = diagnosis


@dataclass
class Diagnosis:
    """What went wrong, in terms a person can act on.

    ``kind``: ``disabled`` (the event's action is not enabled in the spec), ``payload`` (its details
    disagree with the spec), ``state`` (the engine's abstract state differs from the spec's), ``property``
    (a safety property fails), ``stuck`` (the engine makes no progress with live requests),
    ``termination`` (a termination verdict differs), ``step`` (a step broke a rule of the step loop the
    runner counts: the prefill budget, the wait bound, a token from a failed pass, the step counters),
    ``order`` (an event is missing, repeated, or arrives out of time order), ``effect`` (a client call returned without doing what it says), ``due`` (a call returned with a
    publication, a flight's settlement or a finish at the output limit left undone), ``output`` (a finished
    or aborted request's tokens are not the model's answer to its own sequence, computed uncached), ``schema``
    (the engine emitted an event its own log format does not allow: a field of the wrong type), ``error`` (the engine raised, or
    changed state on an error). ``properties`` names the spec properties at stake, ``notes`` says how each was found.
    """

    kind: str
    summary: str
    event: dict[str, Any] | None = None
    action: str | None = None
    last_state: dict[str, Any] | None = None
    reasons: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def format(self) -> str:
        """A readable multi-line report."""
        lines = [f"[{self.kind}] {self.summary}"]
        if self.event is not None:
            lines.append(f"  event: {json.dumps(self.event)}" + (f"  (spec action {self.action})" if self.action else ""))
        lines += [f"  - {r}" for r in self.reasons]
        if self.properties:
            lines.append(f"  property at stake: {', '.join(self.properties)}")
        lines += [f"    {n}" for n in self.notes]
        if self.last_state is not None:
            lines.append(f"  last matching spec state: {json.dumps(self.last_state)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"kind": self.kind, "summary": self.summary, "event": self.event, "action": self.action,
                "reasons": self.reasons, "properties": self.properties, "notes": self.notes,
                "last_state": self.last_state}
