"""A distinguishing sequence replayed on both designs: what each step changed in each.

``equiv`` finds the shortest sequence of action instances after which two designs look different from
outside; :func:`lockstep_steps` replays it on both specs and says, step by step, what it changed in
each (with the coordinator's verdict on terminations), or that the step is not enabled in one of them,
which is itself the difference at that step.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.variants import VARIANTS
    >>> scn = SCENARIOS["burst2-abort"]
    >>> a, b = VARIANTS["correct"].build(scn), VARIANTS["no-unknown-check"].build(scn)
    >>> lockstep_steps(a, b, ["notify(0)"])
    [(1, 'notify(0)', 'bogus notice for r0 rejected (state unchanged)', 'TERMINATION MISJUDGED; bogus notice for r0 accepted')]
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.explore.steps import step_changes
from flightcheck.spec.actions import parse_action

NOT_ENABLED = "(not enabled)"


def lockstep_steps(spec_a: Any, spec_b: Any, sequence: list[str]) -> list[tuple[int, str, str, str]]:
    """``(number, action, what it changed in A, what it changed in B)`` for every step; a design in which
    a step is not enabled says so, and takes no further step."""
    states = [spec_a.initial(), spec_b.initial()]
    alive = [True, True]
    out = []
    for n, text in enumerate(sequence, 1):
        act = parse_action(text)
        words = []
        for k, spec in enumerate((spec_a, spec_b)):
            if not alive[k] or act not in spec.actions or not spec.guard(states[k], act):
                alive[k] = False
                words.append(NOT_ENABLED)
                continue
            after = spec.apply(states[k], act)
            words.append(step_changes(spec, states[k], act, after))
            states[k] = after
        out.append((n, text, words[0], words[1]))
    return out
