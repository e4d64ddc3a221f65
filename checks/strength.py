"""How strong a verdict is: the one place that says which results are proofs and how each reads.

A property that passed can mean three different things, and a reader must never mistake one for the
other: it was proved for any number of requests, classes and pages (the relational model,
``prove --unbounded``); it was proved for one scenario, by k-induction (``prove``) or by visiting every
reachable state (``explore``); or no counterexample was found up to a depth, which is *not* a proof
(``prove``'s BMC when induction did not close). :class:`Strength` names each kind, and :class:`Claim`
is one row's (a strength, the depth of a bounded one, and the properties that keep it from being
stronger). ``prove``, ``prove --unbounded`` and ``check`` all read their words from here, and their
``--require-proof`` fails (exit 1) on every claim whose strength is not a proof.

For example::

    >>> Claim(Strength.BOUNDED, depth=3).words()
    'no counterexample up to depth 3 (not a proof)'
    >>> weakest([Strength.ALL_SIZES, Strength.INDUCTIVE, Strength.BOUNDED]).is_proof
    False
    >>> FROM_INDUCTION["proved"].words()
    'proved for this scenario (k-induction)'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable


class Strength(str, Enum):
    """What a verdict establishes, strongest first. The first three are proofs; the rest are not."""

    ALL_SIZES = "all-sizes"          # proved for any number of requests, classes and pages
    INDUCTIVE = "inductive"          # proved for this scenario and policy by k-induction
    EXHAUSTIVE = "exhaustive"        # proved for this scenario and policy: every reachable state visited
    BOUNDED = "bounded"              # no counterexample up to a depth: not a proof
    UNPROVED = "unproved"            # no proof: a counterexample to induction, a vacuous part, a timeout, not modelled
    VIOLATED = "violated"            # a counterexample: the property is false

    @property
    def is_proof(self) -> bool:
        """Whether a verdict of this strength proves what it is about."""
        return self in (Strength.ALL_SIZES, Strength.INDUCTIVE, Strength.EXHAUSTIVE)

    @property
    def phrase(self) -> str:
        """The words a row says (a bounded one's depth is filled in by :meth:`Claim.words`)."""
        return _PHRASES[self]

    @property
    def counted(self) -> str:
        """The words for rows of this strength in a count ("5 proved for its scenario (k-induction)")."""
        return self.phrase.replace("this scenario", "its scenario").replace("depth {depth}", "a depth")


_PHRASES = {
    Strength.ALL_SIZES: "proved for all sizes",
    Strength.INDUCTIVE: "proved for this scenario (k-induction)",
    Strength.EXHAUSTIVE: "proved for this scenario (every reachable state explored)",
    Strength.BOUNDED: "no counterexample up to depth {depth} (not a proof)",
    Strength.UNPROVED: "not proved",
    Strength.VIOLATED: "violated",
}
_SHORT = {Strength.ALL_SIZES: "all sizes", Strength.INDUCTIVE: "scenario, k-induction",
          Strength.EXHAUSTIVE: "scenario, explored", Strength.BOUNDED: "bounded to {depth}, not a proof",
          Strength.UNPROVED: "not proved", Strength.VIOLATED: "violated"}
ORDER: tuple[Strength, ...] = tuple(Strength)  # strongest first


def weakest(strengths: Iterable[Strength]) -> Strength:
    """The weakest of ``strengths`` (a row is only as strong as its weakest property); ALL_SIZES for none."""
    return max(strengths, key=ORDER.index, default=Strength.ALL_SIZES)


@dataclass(frozen=True)
class Claim:
    """What one verdict (a property's, or a whole row's) establishes: its strength, the BMC depth of a
    bounded one, why it is not proved (``reason``), and, for a row, the properties weaker than a proof
    (``weak``: name to their own claim's words)."""

    strength: Strength
    depth: int | None = None
    reason: str = ""
    weak: dict[str, str] = field(default_factory=dict)

    @property
    def is_proof(self) -> bool:
        """Whether this claim is a proof."""
        return self.strength.is_proof

    def words(self) -> str:
        """The row's own words: "proved for all sizes", "no counterexample up to depth 2 (not a proof)"..."""
        text = self.strength.phrase.format(depth="?" if self.depth is None else self.depth)
        return f"{text} ({self.reason})" if self.reason else text

    def short(self) -> str:
        """The words in a table's narrow column: "all sizes", "bounded to 2, not a proof"..."""
        return _SHORT[self.strength].format(depth="?" if self.depth is None else self.depth)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready: the strength's name, the depth, whether it is a proof, its words and the weak properties."""
        return {"strength": self.strength.value, "depth": self.depth, "proof": self.is_proof, "says": self.words(),
                "reason": self.reason, "weak": dict(self.weak)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Claim":
        """The claim :meth:`to_json` wrote."""
        return cls(Strength(obj["strength"]), obj.get("depth"), obj.get("reason") or "", dict(obj.get("weak") or {}))


def row_claim(claims: dict[str, Claim]) -> Claim:
    """A row's claim from its properties' claims: the weakest strength (at the smallest depth among the
    bounded ones), naming every property that is not proved."""
    strength = weakest(c.strength for c in claims.values())
    depths = [c.depth for c in claims.values() if c.strength is strength and c.depth is not None]
    return Claim(strength, min(depths) if depths else None,
                 weak={n: c.words() for n, c in claims.items() if not c.is_proof})


# The verdict words of each checker, read as claims (a bounded one's depth is the result's own).
FROM_INDUCTION: dict[str, Claim] = {"proved": Claim(Strength.INDUCTIVE), "bounded": Claim(Strength.BOUNDED),
                                    "violated": Claim(Strength.VIOLATED)}
FROM_UNBOUNDED: dict[str, Claim] = {"proved": Claim(Strength.ALL_SIZES),
                                    "cti": Claim(Strength.UNPROVED, reason="counterexample to induction"),
                                    "vacuous": Claim(Strength.UNPROVED, reason="vacuous"),
                                    "unknown": Claim(Strength.UNPROVED, reason="solver timeout")}
FROM_EXPLORER: dict[str, Claim] = {"holds": Claim(Strength.EXHAUSTIVE), "found": Claim(Strength.EXHAUSTIVE),
                                   "violated": Claim(Strength.VIOLATED), "never": Claim(Strength.VIOLATED)}


def induction_claim(status: str, k: int) -> Claim:
    """A ``prove`` result's claim (``status`` proved, bounded or violated; ``k`` a bounded one's BMC depth)."""
    claim = FROM_INDUCTION[status]
    return Claim(claim.strength, k) if claim.strength is Strength.BOUNDED else claim


def not_modelled_claim(why: str) -> Claim:
    """A property the relational model does not carry: not proved for all sizes, for ``why``."""
    return Claim(Strength.UNPROVED, reason=f"not modelled for all sizes: {why.split(';')[0]}")


def not_proofs(claims: dict[str, Claim]) -> list[str]:
    """One line per claim that is not a proof, for ``--require-proof``: ``name: its words``."""
    return [f"{name}: {c.words()}" for name, c in claims.items() if not c.is_proof]
