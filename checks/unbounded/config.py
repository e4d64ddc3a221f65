"""What one unbounded proof is about: the engine's policy and the environment's options.

A :class:`Config` holds the policy knobs the relational model reads (those ``spec/knobs.py`` declares
``unbounded="modelled"``, as declared there), whether prompts form a tree (classes sharing their
first pages) and which environment actions exist (client aborts, forward-pass failures, bogus
termination notices, wait expiry, background eviction). The sizes (how many requests, classes, pages;
the knobs declared ``unbounded="size"``) are *not* here: the proofs hold for all of them.

:func:`grid` lists the configurations ``prove --unbounded`` proves: every release point, publication
and leader-loss policy under exact single-flight and under prefix coordination, on prompt trees, with
every environment action on (the most permissive environment: a proof there covers every scenario
with fewer options, and flat prompts are trees whose classes share nothing), and coordination ``none``.
:func:`from_scenario` reads a finite scenario's configuration, and :func:`unmodelled` says why a
scenario or policy lies outside the model.

For example::

    >>> [c.label() for c in grid()][:2]
    ['single-flight/after-prefill/incremental release-all', 'single-flight/after-prefill/incremental promote']
"""

from __future__ import annotations

from dataclasses import dataclass

from flightcheck.spec.knobs import KNOB, KNOBS, declare
from flightcheck.spec.scenario import COORDINATIONS, LEADER_LOSSES, PUBLICATIONS, RELEASES, Policy, Scenario

#: The knobs the relational model reads: Config's policy fields.
MODELLED = [k for k in KNOBS if k.unbounded == "modelled"]


@dataclass(frozen=True)
@declare(knobs=MODELLED)
class Config:
    """A policy and an environment: the relational model's configuration (its policy fields are the
    :data:`MODELLED` knobs, as declared in ``spec/knobs.py``)."""

    aborts: bool = True
    failures: bool = True
    notifications: bool = True
    expiry: bool = True
    eviction: bool = True
    trees: bool = True

    @property
    def single_flight(self) -> bool:
        """Identical prompts are coordinated: there are flights."""
        return self.coordination != "none"

    @property
    def prefix_flights(self) -> bool:
        """A request opening a flight may also wait via a flight of another prompt sharing its first pages."""
        return self.coordination == "prefix"

    def label(self) -> str:
        """``coordination/release/publication leader-loss``, as the finite spec's policy labels read."""
        head = "/".join(getattr(self, k.name) for k in MODELLED if k.shown == "head")
        words = [getattr(self, k.name) for k in MODELLED if k.shown != "head" and k.kind is str]
        words += [k.label.format(getattr(self, k.name)) for k in MODELLED
                  if k.kind is not str and getattr(self, k.name) != k.default]
        return " ".join([head, *words, *([] if self.trees else ["flat"])])

    def environment(self) -> str:
        """The environment actions on, e.g. ``aborts, failures, notifications, expiry, eviction``."""
        on = [n for n in ("aborts", "failures", "notifications", "expiry", "eviction") if getattr(self, n)]
        return ", ".join(on) or "none"


def grid() -> list[Config]:
    """The configurations ``prove --unbounded`` proves, in a fixed order."""
    out = [Config(coordination=co, release=r, publication=p, leader_loss=ll) for co in COORDINATIONS if co != "none"
           for r in RELEASES for p in PUBLICATIONS for ll in LEADER_LOSSES]
    out.append(Config(coordination="none"))
    return out


def unmodelled(scenario: Scenario, policy: Policy | None = None) -> str | None:
    """Why a finite scenario (under a policy) lies outside the relational model, or None."""
    pol = policy or scenario.policy
    if scenario.has_pool:
        return "the page pool (free-page arithmetic, pressure-driven eviction) needs exact counts"
    if pol.chunk != 1:
        return "prefill chunks of more than one page are not modelled"
    unread = [k.name for k in KNOBS if k.unbounded is None and getattr(pol, k.name) != k.default]
    if unread:
        return f"the knob {unread[0]} is not modelled (only its default, {KNOB[unread[0]].default!r}, is)"
    return None


def from_scenario(scenario: Scenario, policy: Policy | None = None) -> Config:
    """The configuration of a finite scenario under a policy (which :func:`unmodelled` accepts)."""
    pol = policy or scenario.policy
    why = unmodelled(scenario, pol)
    if why is not None:
        raise ValueError(f"{scenario.name}: {why}")
    return Config(**{k.name: getattr(pol, k.name) for k in MODELLED}, aborts=scenario.aborts,
                  failures=scenario.failures, notifications=scenario.notifications, expiry=scenario.expiry,
                  eviction=scenario.eviction, trees=bool(scenario.prefixes))
