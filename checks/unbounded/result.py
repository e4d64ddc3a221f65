"""What an unbounded proof says: a verdict per invariant, and counterexamples to induction as small states.

A :class:`Verdict` is ``proved`` (initiation and consecution over every action hold for every size,
with the lemmas its queries used, read from unsat cores), ``cti`` (a query was satisfiable: the
:class:`Cti` is z3's model, a few requests, classes and pages, re-run through the model's finite
reading), or ``unknown`` (a query timed out: never reported as proved). A :class:`ConfigReport` holds
one configuration's verdicts; an :class:`UnboundedReport` the whole run.

For example::

    >>> Verdict("known_once", "property", "proved", 0.1, ("live_is_known",)).summary()
    'known_once: proved for all sizes (with live_is_known)'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Cti:
    """A counterexample to induction: a state where every invariant assumed holds, and the action that
    takes it to a state breaking ``invariant`` (``action`` is ``initial`` when the initial state does).

    ``before`` and ``after`` are readable descriptions (see :mod:`flightcheck.checks.unbounded.render`);
    ``sizes`` counts the requests, classes and pages of the structure."""

    invariant: str
    action: str
    before: dict[str, Any]
    after: dict[str, Any]
    sizes: dict[str, int]
    confirmed: bool = True


@dataclass
class Verdict:
    """One invariant's verdict under one configuration."""

    name: str
    kind: str  # "property" | "lemma"
    status: str  # "proved" | "cti" | "unknown"
    seconds: float
    support: tuple[str, ...] = ()
    cti: Cti | None = None
    reason: str = ""

    def summary(self) -> str:
        """One line."""
        if self.status == "proved":
            extra = f" (with {', '.join(self.support)})" if self.support else ""
            return f"{self.name}: proved for all sizes{extra}"
        if self.status == "unknown":
            return f"{self.name}: unknown ({self.reason or 'timeout'})"
        assert self.cti is not None
        return f"{self.name}: counterexample to induction under {self.cti.action}"


@dataclass
class ConfigReport:
    """The verdicts of one configuration (policy and environment) for one design."""

    config: Any
    variant: str
    verdicts: list[Verdict]
    seconds: float = 0.0
    queries: int = 0
    rounds: int = 0
    vacuous: list[str] = field(default_factory=list)

    def verdict(self, name: str) -> Verdict:
        """The verdict for the invariant called ``name``."""
        for v in self.verdicts:
            if v.name == name:
                return v
        raise KeyError(name)

    @property
    def properties(self) -> list[Verdict]:
        """The properties' verdicts."""
        return [v for v in self.verdicts if v.kind == "property"]

    @property
    def lemmas(self) -> list[Verdict]:
        """The lemmas' verdicts."""
        return [v for v in self.verdicts if v.kind == "lemma"]


@dataclass
class UnboundedReport:
    """A whole ``prove --unbounded`` run: one report per configuration, and what is not modelled."""

    variant: str
    configs: list[ConfigReport]
    not_modelled: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def property_names(self) -> list[str]:
        """Every property some configuration checked, in order."""
        seen: dict[str, None] = {}
        for c in self.configs:
            for v in c.properties:
                seen.setdefault(v.name, None)
        return list(seen)

    def status(self, name: str) -> str:
        """A property's status over every configuration: ``cti`` if any has one, else ``unknown`` if
        any timed out, else ``proved``."""
        got = {c.verdict(name).status for c in self.configs if name in {v.name for v in c.verdicts}}
        return "cti" if "cti" in got else "unknown" if "unknown" in got else "proved"

    @property
    def ok(self) -> bool:
        """Every modelled property proved under every configuration."""
        return all(self.status(n) == "proved" for n in self.property_names())
