"""The design's knobs, each declared once: name, type, allowed values, default, help, and its two meanings.

Every knob of :class:`~flightcheck.spec.scenario.Policy` is one :class:`Knob` in :data:`KNOBS`. The table
is what the rest of flightcheck reads about a knob's *declaration*: ``Policy``'s fields, their checks and
its label; the command-line options of every command that builds a design
(``checks/cli/policy_options.py``); the event log header's schema (``checks/conform/schema.py``); the
spec-to-engine mapping (``checks/conform/policy_map.py``, through :attr:`Knob.engine`); the all-sizes
model's configuration (``checks/unbounded/config.py``, through :attr:`Knob.unbounded`); and the browser
explorer's knob controls (``/api/choices``). What a knob *does* stays where it acts: the spec's guards
and updates read ``policy.leader_loss`` as before, the engine reads its own ``EngineConfig``.

Adding a knob is one more entry here (docs/architecture.md, "Adding things", says what else follows).

For example::

    >>> KNOB["leader_loss"].choices, KNOB["leader_loss"].default, KNOB["leader_loss"].engine
    (('release-all', 'promote'), 'release-all', 'leader_loss')
    >>> KNOB["capacity"].check(0)
    'capacity must be >= 1, got 0'
    >>> KNOB["capacity"].engine
    'max_running'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# How a knob's value appears in Policy.label(): "head" joins the value into ``a/b/c``, "always" shows
# ``label`` formatted with the value, "changed" shows it only when the value is not the default (and the
# knob applies: see Knob.needs).
Shown = Literal["head", "always", "changed"]


@dataclass(frozen=True)
class Knob:
    """One knob of the design's policy, declared once.

    ``kind`` is ``str`` (one of ``choices``), ``int`` (at least ``low``) or ``bool``. ``help`` is the
    one-line help of its command-line option, ``meaning`` what it does in the spec, ``engine`` the name of
    the engine option (``EngineConfig``'s field, and ``serve``'s flag) that holds the same value.
    ``shown``/``label`` say how :meth:`~flightcheck.spec.scenario.Policy.label` shows it; ``needs`` names
    another knob's value without which it changes nothing (so the label leaves it out); ``low_reason``
    words a value below ``low``. ``unbounded`` says how the all-sizes model treats it: ``"modelled"`` (a
    field of its configuration), ``"size"`` (the proofs hold for every value) or None (not modelled: a
    design with another value than the default lies outside the model).

    For example::

        >>> KNOB["chunk"].check(0), KNOB["chunk"].check(2)
        ('chunk must be >= 1 page, got 0', None)
        >>> KNOB["release"].check("later")
        "unknown release 'later'; expected one of after-prefill, on-completion"
    """

    name: str
    kind: type
    default: Any
    help: str
    meaning: str
    engine: str
    choices: tuple[str, ...] = ()
    low: int = 1
    low_reason: str = ""
    shown: Shown = "changed"
    label: str = "{}"
    needs: tuple[str, Any] | None = None
    unbounded: str | None = None

    @property
    def annotation(self) -> Any:
        """The type a ``Policy`` field of this knob is declared with (a ``Literal`` of the choices)."""
        return Literal[self.choices] if self.kind is str else self.kind

    @property
    def option(self) -> str:
        """The command-line option, e.g. ``--leader-loss``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> str | None:
        """Why ``value`` is not a value of this knob, or None when it is."""
        if self.kind is str and value not in self.choices:
            return f"unknown {self.name} {value!r}; expected one of {', '.join(self.choices)}"
        if self.kind is int and value < self.low:
            return f"{self.name} must be >= {self.low}{self.low_reason}, got {value}"
        return None

    def applies(self, values: dict[str, Any]) -> bool:
        """Whether the knob changes anything given the other knobs' ``values`` (see ``needs``)."""
        return self.needs is None or values[self.needs[0]] == self.needs[1]


KNOBS: list[Knob] = [
    Knob("coordination", str, "single-flight", choices=("single-flight", "prefix", "none"), shown="head",
         help="Which requests wait for another's flight.",
         meaning="none: every request computes what the cache lacks; single-flight: identical prompts wait for one "
                 "leader; prefix: single-flight, and a request that opens a flight waits via another open flight "
                 "sharing at least min_shared_pages shareable pages with its prompt, for those pages only",
         engine="coordination", unbounded="modelled"),
    Knob("release", str, "after-prefill", choices=("after-prefill", "on-completion"), shown="head",
         help="When a flight's followers are released.",
         meaning="after-prefill: once the leader's prefill is done and its shareable pages are published; "
                 "on-completion: once the leader finished",
         engine="release", unbounded="modelled"),
    Knob("publication", str, "incremental", choices=("incremental", "on-completion"), shown="head",
         help="When completed prompt pages enter the cache.",
         meaning="incremental: after every forward pass; on-completion: when the request finishes",
         engine="publication", unbounded="modelled"),
    Knob("capacity", int, 2, shown="always", label="cap={}", help="Running capacity.",
         meaning="the most requests in prefill or decode at once", engine="max_running", unbounded="size"),
    Knob("chunk", int, 1, low_reason=" page", shown="always", label="chunk={}", help="Prefill chunk in pages.",
         meaning="the pages of prompt one forward pass prefills for a request", engine="prefill_chunk_pages",
         unbounded="size"),
    Knob("leader_loss", str, "release-all", choices=("release-all", "promote"),
         help="What a flight does when its leader is lost.",
         meaning="when a flight's leader aborts or fails before its release point, release-all releases every "
                 "follower to compute what is not cached; promote makes the first waiting follower the flight's "
                 "new leader, and the others keep waiting",
         engine="leader_loss", unbounded="modelled"),
    Knob("prefix_caching", bool, True, label="no-cache",
         help="Prefix caching on or off (off needs --coordination none).",
         meaning="off: nothing is looked up in or published to the cache", engine="prefix_caching",
         unbounded="modelled"),
    Knob("min_shared_pages", int, 1, label="min-shared={}", needs=("coordination", "prefix"),
         help="Prefix coordination: the least overlap, in shareable pages, a request waits via another prompt's "
              "flight for.",
         meaning="under prefix coordination, the fewest shared pages worth waiting for", engine="min_shared_pages",
         unbounded="size"),
]

#: The knobs by name.
KNOB: dict[str, Knob] = {k.name: k for k in KNOBS}


def choices(name: str) -> tuple[str, ...]:
    """The allowed values of a string knob, e.g. ``choices("release")``."""
    return KNOB[name].choices


def declare(cls: type | None = None, *, knobs: list[Knob] | None = None) -> Any:
    """Give the class (before ``@dataclass``) one field per knob of ``knobs`` (every knob by default), typed
    and defaulted from :data:`KNOBS`, ahead of the class's own fields."""
    def add(cls: type) -> type:
        chosen = KNOBS if knobs is None else knobs
        cls.__annotations__ = {**{k.name: k.annotation for k in chosen}, **cls.__dict__.get("__annotations__", {})}
        for k in chosen:
            setattr(cls, k.name, k.default)
        return cls
    return add if cls is None else add(cls)


def check_all(values: dict[str, Any]) -> None:
    """Raise ValueError naming the first knob whose value is not one of its values."""
    for k in KNOBS:
        why = k.check(values[k.name])
        if why is not None:
            raise ValueError(why)


def label(values: dict[str, Any]) -> str:
    """The policy's short label, e.g. ``single-flight/after-prefill/incremental cap=2 chunk=1 promote``."""
    head = "/".join(str(values[k.name]) for k in KNOBS if k.shown == "head")
    rest = [k.label.format(values[k.name]) for k in KNOBS if k.shown == "always" or
            (k.shown == "changed" and values[k.name] != k.default and k.applies(values))]
    return " ".join([head, *rest])
