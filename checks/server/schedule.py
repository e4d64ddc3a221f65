"""A schedule of the server's concurrency: which actor moves at each point, chosen, recorded, replayed.

Under the controlled scheduler (:mod:`.controlled`) nothing runs on its own: at every point the
scheduler lists the actions that are enabled, in a fixed order, and a *chooser* picks one:

- ``tick``: the event loop runs the callbacks that are ready (handlers, Starlette's tasks);
- ``engine``: the engine thread's next half-turn (drain its command queue, or one step and delivery);
- ``clock``: virtual time jumps to the next timer (only when nothing else can move);
- ``c3:send``, ``c3:read``, ``c3:leave``: client 3 sends its request, reads one message of its reply,
  or goes away (closes its connection).

Choice 0 is the *default*, the first enabled action: ``tick`` before ``engine`` before the clients,
so a run of defaults is an orderly server. A schedule is the program and the names chosen; replaying it
chooses the same names, and fails with :class:`ScheduleDiverged` if one is not enabled where the
recording had it (the code under test changed, or something in it is not deterministic).

For example::

    >>> pick = FromList([2, 0, 7])
    >>> [pick(["tick", "engine", "c0:send"]) for _ in range(4)]
    [2, 0, 1, 0]
    >>> Replayer(["engine"])(["tick", "engine"])
    1
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightcheck.checks.server.program import Program, ProgramError

FORMAT = "flightcheck server schedule"


class ScheduleDiverged(RuntimeError):
    """A replayed schedule named an action that is not enabled at its point (names the step)."""


class RandomChooser:
    """Uniform among the enabled actions, from ``seed`` (the same seed, the same choices)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, enabled: list[str]) -> int:
        """The index of the action to run."""
        return self.rng.randrange(len(enabled))


class LoopFirstChooser:
    """The event loop runs until it has nothing ready, then one uniform choice among the engine and the
    clients, from ``seed``: the server's real timing, where a forward pass is long and the handlers run
    to idle while it lasts (an abort asked for mid-step reaches the engine after that step)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, enabled: list[str]) -> int:
        """The index of the action to run."""
        if enabled[0] == "tick":
            return 0
        return self.rng.randrange(len(enabled))


def actor_of(action: str) -> str:
    """Who moves in ``action``: ``loop`` (tick), ``engine``, ``clock``, or a client (``c3``)."""
    return {"tick": "loop"}.get(action, action.split(":")[0])


class PriorityChooser:
    """Probabilistic concurrency testing (PCT, Burckhardt et al. 2010), from ``seed``: every actor gets a
    random priority, the highest enabled one always moves, and at ``changes`` random points among the first
    ``horizon`` the one that moved drops to the lowest priority. Long runs of one actor (an engine that
    steps on while handlers wait, a handler that runs on while the engine holds a command) are what races
    need, and uniform choice almost never makes them."""

    def __init__(self, seed: int, changes: int = 3, horizon: int = 400) -> None:
        self.rng = random.Random(seed)
        self.priority: dict[str, float] = {}
        self.change_at = set(self.rng.sample(range(horizon), changes))
        self.step = 0
        self.lowest = 0.0

    def __call__(self, enabled: list[str]) -> int:
        """The index of the action to run."""
        for action in enabled:
            self.priority.setdefault(actor_of(action), self.rng.random() + 1.0)
        best = max(range(len(enabled)), key=lambda i: self.priority[actor_of(enabled[i])])
        if self.step in self.change_at:
            self.lowest -= 1.0
            self.priority[actor_of(enabled[best])] = self.lowest
        self.step += 1
        return best


class FromList:
    """The choices of a list of numbers (each taken modulo the number enabled), then the defaults: the
    form Hypothesis draws and shrinks (a shorter list, smaller numbers: fewer departures from order)."""

    def __init__(self, numbers: list[int]) -> None:
        self.numbers = list(numbers)
        self.used = 0

    def __call__(self, enabled: list[str]) -> int:
        """The index of the action to run."""
        if self.used >= len(self.numbers):
            return 0
        self.used += 1
        return self.numbers[self.used - 1] % len(enabled)


class Follow:
    """The recorded names in order, each skipped where it is not enabled; past their end, the defaults.
    What the shrinker runs when it drops a client: the others keep their interleaving."""

    def __init__(self, names: list[str]) -> None:
        self.names = list(reversed(names))

    def __call__(self, enabled: list[str]) -> int:
        """The index of the next recorded action that is enabled (0 when none is left)."""
        while self.names:
            name = self.names.pop()
            if name in enabled:
                return enabled.index(name)
        return 0


class Replayer:
    """The recorded names, one per point; past their end, the defaults."""

    def __init__(self, names: list[str]) -> None:
        self.names = list(names)
        self.step = 0

    def __call__(self, enabled: list[str]) -> int:
        """The index of the recorded action (:class:`ScheduleDiverged` when it is not enabled)."""
        if self.step >= len(self.names):
            return 0
        name = self.names[self.step]
        self.step += 1
        if name not in enabled:
            raise ScheduleDiverged(f"step {self.step}: the schedule runs {name!r}, but only "
                                   f"{', '.join(enabled)} can move there")
        return enabled.index(name)


@dataclass
class Schedule:
    """A program and the actions chosen for it, with the points where the choice was not the default."""

    program: Program
    actions: list[str]
    departures: list[int] = field(default_factory=list)  # indices into ``actions`` that were not choice 0
    origin: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"format": FORMAT, "origin": self.origin, "program": self.program.to_json(),
                "actions": list(self.actions), "departures": list(self.departures)}

    @classmethod
    def from_json(cls, obj: Any, source: str = "schedule") -> "Schedule":
        """The schedule of :meth:`to_json`'s form; :class:`ProgramError` naming ``source`` otherwise."""
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise ProgramError(f"{source}: not a server schedule (no \"format\": \"{FORMAT}\")")
        actions = obj.get("actions")
        if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
            raise ProgramError(f"{source}: \"actions\" must be a list of action names")
        departures = obj.get("departures") or []
        if not isinstance(departures, list) or not all(isinstance(d, int) for d in departures):
            raise ProgramError(f"{source}: \"departures\" must be a list of step numbers")
        return cls(Program.from_json(obj.get("program"), source), list(actions), list(departures),
                   str(obj.get("origin", "")))

    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        """Writes the schedule (and ``extra`` keys, for people) as JSON to ``path``; returns it."""
        path = Path(path)
        path.write_text(json.dumps({**self.to_json(), **(extra or {})}, indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Path) -> "Schedule":
        """The schedule saved at ``path`` (:class:`ProgramError` when it is not one)."""
        try:
            obj = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ProgramError(f"{path}: cannot be read as a server schedule: {error}") from None
        return cls.from_json(obj, str(path))

    def describe(self, limit: int = 40) -> str:
        """The chosen actions on one line, the departures from order marked ``*``; long runs elided."""
        marked = [("*" if i in set(self.departures) else "") + a for i, a in enumerate(self.actions)]
        if len(marked) > limit:
            last = max(self.departures, default=0)
            keep = max(limit, last + 4)
            marked = marked[:keep] + [f"... ({len(self.actions) - keep} more, in order)"]
        return " ".join(marked)


__all__ = ["FORMAT", "Follow", "FromList", "LoopFirstChooser", "PriorityChooser", "RandomChooser", "actor_of", "Replayer", "Schedule", "ScheduleDiverged"]
