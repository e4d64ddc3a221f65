"""The spec's action vocabulary: names, who takes them, and :class:`Action` instances.

The engine's event log speaks exactly these names, in this order (impl/events.py; a test holds the two
equal). The engine's own steps (``ENGINE_ACTIONS``) are the ones weak fairness applies to; the
environment's (``ENVIRONMENT_ACTIONS``: arrivals, client cancels, bogus termination notices, a follower's
wait running out, a failing forward pass) may happen or not.

For example::

    >>> parse_action("release(1)")
    Action(name='release', arg=1)
    >>> Action("evict", 0).is_engine, Action("expire", 2).is_engine
    (True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ACTION_NAMES = ("arrive", "admit", "prefill", "publish", "release", "promote", "decode", "finish", "evict",
                "abort", "notify", "expire", "fail")
ENGINE_ACTIONS = frozenset({"admit", "prefill", "publish", "release", "promote", "decode", "finish", "evict"})
PROGRESS_ACTIONS = ENGINE_ACTIONS
ENVIRONMENT_ACTIONS = frozenset({"arrive", "abort", "notify", "expire", "fail"})
TERMINATIONS = ("finish", "abort", "fail")

_ACTION_RE = re.compile(r"^\s*([a-z]+)\((\d+)\)\s*$")


@dataclass(frozen=True, order=True)
class Action:
    """One action instance: a name from :data:`ACTION_NAMES` and its argument.

    The argument is a request index (a flight is named by its current leader's index; ``notify(N)`` is
    the never-submitted ID) or, for ``evict``, a page slot.
    """

    name: str
    arg: int

    def __str__(self) -> str:
        return f"{self.name}({self.arg})"

    @property
    def is_engine(self) -> bool:
        """True for the engine's own steps, to which weak fairness applies."""
        return self.name in ENGINE_ACTIONS


def parse_action(text: str) -> Action:
    """``"admit(0)"`` -> ``Action("admit", 0)``, with a clear error for anything else."""
    m = _ACTION_RE.match(text)
    if not m or m.group(1) not in ACTION_NAMES:
        raise ValueError(f"not an action: {text!r}; expected NAME(INDEX) with NAME one of {', '.join(ACTION_NAMES)}")
    return Action(m.group(1), int(m.group(2)))
