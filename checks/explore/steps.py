"""What one step of a path did, in the design's words, with the coordinator's verdict on terminations.

:meth:`FlightSpec.changes` compares two states, so it cannot tell a termination the coordinator rejected
from one that changed nothing else: a bogus notice that is rejected leaves the state unchanged, and a
legitimate ``finish`` that is rejected (the ``forget-at-release`` bug) looks like any finish. The
verdict is the coordinator's own (:meth:`FlightSpec.accepts` on the state before the step), so
:func:`termination_verdict` names it and :func:`step_changes` adds it to the changes. Counterexamples,
the ``equiv`` listing and the report's sequence diagrams all speak through :func:`step_changes`.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> spec = FlightSpec(SCENARIOS["burst2-abort"])
    >>> s0 = spec.initial()
    >>> step_changes(spec, s0, Action("notify", 2), spec.apply(s0, Action("notify", 2)))
    'bogus notice for r2 rejected (state unchanged)'
    >>> s1 = spec.apply(s0, Action("arrive", 0))
    >>> step_changes(spec, s1, Action("abort", 0), spec.apply(s1, Action("abort", 0)))
    'r0: aborted, left f0; termination of r0 accepted'
"""

from __future__ import annotations

import re
from typing import Any

from flightcheck.spec.actions import TERMINATIONS, Action

# A notice for an ID that was never submitted or has already terminated: the coordinator must reject it.
NOTICE = "notify"


def termination_verdict(spec: Any, before: Any, action: Action) -> str | None:
    """``"accepted"`` or ``"rejected"`` for a termination or a notice, as the coordinator judges it in
    ``before``; None for any other action (or a model without a coordinator)."""
    if action.name not in TERMINATIONS and action.name != NOTICE:
        return None
    accepts = getattr(spec, "accepts", None)
    if accepts is None:
        return None
    return "accepted" if bool(accepts(spec.view(before), action.arg)) else "rejected"


def is_misjudged(action: Action, verdict: str | None) -> bool:
    """A legitimate termination rejected, or a bogus notice accepted (what ``termination_validated`` forbids)."""
    if verdict is None:
        return False
    return (verdict == "accepted") == (action.name == NOTICE)


def verdict_words(action: Action, verdict: str | None) -> str:
    """``"termination of r0 accepted"``, ``"bogus notice for r2 rejected"``... ('' when no verdict)."""
    if verdict is None:
        return ""
    who = f"r{action.arg}"
    if action.name == NOTICE:
        return f"bogus notice for {who} {verdict}"
    return f"termination of {who} {verdict}" + (" as unknown" if verdict == "rejected" else "")


def step_changes(spec: Any, before: Any, action: Action, after: Any) -> str:
    """What ``action`` changed from ``before`` to ``after``, and the coordinator's verdict when it is a
    termination or a notice."""
    # ``changes`` can name a request whose only change it has no word for (a terminated leader's
    # references dropped at its flight's release): "r0: ; ..."; such an empty entry is left out.
    parts = [p for p in spec.changes(before, after).split("; ") if not re.fullmatch(r"r\d+: ?", p)]
    changed = "; ".join(parts) or "(state unchanged)"
    words = verdict_words(action, termination_verdict(spec, before, action))
    if not words:
        return changed
    if changed == "(state unchanged)":
        return f"{words} (state unchanged)"
    return f"{changed}; {words}"
