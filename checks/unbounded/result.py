"""What an unbounded proof says: a verdict per invariant, and counterexamples to induction as small states.

A :class:`Verdict` is ``proved`` (initiation and consecution over every action hold for every size,
with the lemmas its queries used, read from unsat cores), ``cti`` (a query was satisfiable: the
:class:`Cti` is z3's model, a few requests, classes and pages, re-run through the model's finite
reading), ``vacuous`` (proved, but of nothing: the axioms contradict each other, or no state of the
invariant meets the property's antecedent) or ``unknown`` (a query timed out: never reported as
proved). :class:`NonVacuity` holds the evidence that a proof is about something: the axioms satisfiable
together, and a :class:`Witness` per action (a state of the invariant enabling it) and per antecedent.
A :class:`ConfigReport` holds one configuration's verdicts; an :class:`UnboundedReport` the whole run.

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
class Witness:
    """A small state of the invariant (under the axioms) where action ``subject`` is enabled (``kind``
    ``action``, ``instance`` its argument: ``release(r0)``) or property ``subject``'s antecedent holds
    (``antecedent``, ``instance`` the antecedent's text); ``status`` ``vacuous`` when z3 proved there is
    none, ``unknown`` when it gave up. ``confirmed``: the model's finite reading of the state agrees."""

    kind: str  # "action" | "antecedent"
    subject: str
    status: str  # "witnessed" | "vacuous" | "unknown"
    instance: str = ""
    sizes: dict[str, int] = field(default_factory=dict)
    state: dict[str, Any] | None = None
    confirmed: bool = True
    reason: str = ""

    def failure(self) -> str:
        """What a ``vacuous`` witness says is wrong with the proof."""
        if self.kind == "action":
            return f"action {self.subject} is enabled in no state of the invariant (it can never fire)"
        return f"{self.subject}: its antecedent, {self.instance}, holds in no state of the invariant"


@dataclass
class NonVacuity:
    """Why one configuration's proof is not vacuous: the axioms are satisfiable together (``axioms``:
    ``satisfiable``, ``unsatisfiable`` with ``core`` the axioms responsible, or ``unknown``), the initial
    state satisfies them and every candidate (``initial``: that structure's sizes; ``initial_status``
    ``unsatisfiable`` with the ``core`` when it does not), and every action and antecedent has a witness."""

    axioms: str = "satisfiable"
    core: list[str] = field(default_factory=list)
    initial_status: str = "satisfiable"
    initial: dict[str, int] = field(default_factory=dict)
    actions: list[Witness] = field(default_factory=list)
    antecedents: list[Witness] = field(default_factory=list)

    def failures(self) -> list[str]:
        """One line per vacuous part: the axioms responsible, each action that never fires, each
        antecedent never met (empty: the proof is about something)."""
        out = []
        if self.axioms == "unsatisfiable":
            out.append(f"the axioms are unsatisfiable together: {', '.join(self.core)}")
        elif self.initial_status == "unsatisfiable":
            out.append(f"no initial state satisfies the axioms and the invariant: {', '.join(self.core)}")
        return out + [w.failure() for w in self.actions + self.antecedents if w.status == "vacuous"]

    def unknown(self) -> list[str]:
        """The parts z3 gave up on (shown, not a failure)."""
        out = ["axioms"] if self.axioms == "unknown" else []
        out += ["initial state"] if self.initial_status == "unknown" else []
        out += [w.subject if w.kind == "action" else f"{w.subject}'s antecedent"
                for w in self.actions + self.antecedents if w.status == "unknown"]
        return out


@dataclass
class Verdict:
    """One invariant's verdict under one configuration."""

    name: str
    kind: str  # "property" | "lemma"
    status: str  # "proved" | "cti" | "vacuous" | "unknown"
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
        if self.status == "vacuous":
            return f"{self.name}: vacuous ({self.reason})"
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
    nonvacuity: NonVacuity = field(default_factory=NonVacuity)

    @property
    def vacuous(self) -> list[str]:
        """The actions enabled in no state of the invariant."""
        return [w.subject for w in self.nonvacuity.actions if w.status == "vacuous"]

    @property
    def vacuity_failures(self) -> list[str]:
        """Each vacuous part of the proof (see :meth:`NonVacuity.failures`)."""
        return self.nonvacuity.failures()

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
        """A property's status over every configuration: ``cti`` if any has one, else ``vacuous`` if any
        proof of it is vacuous, else ``unknown`` if any timed out, else ``proved``."""
        got = {c.verdict(name).status for c in self.configs if name in {v.name for v in c.verdicts}}
        return next((s for s in ("cti", "vacuous", "unknown") if s in got), "proved")

    @property
    def ok(self) -> bool:
        """Every modelled property proved under every configuration, and no proof vacuous (every
        configuration's axioms satisfiable, each action and antecedent witnessed)."""
        return all(self.status(n) == "proved" for n in self.property_names()) and \
            not any(c.vacuity_failures for c in self.configs)
