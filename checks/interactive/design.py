"""What the explorer explores, read from (and written back to) a URL's query.

A design is a scenario, a policy and a variant of the spec. The query names them the way the commands
do: ``scenario`` (a default or scale scenario; without it the variant's demo scenario, as ``explore
--variant`` runs it), ``variant``, one parameter per :class:`~flightcheck.spec.scenario.Policy` field
(``release``, ``publication``, ``capacity``, ...) and the environment's options (``aborts``,
``notifications``, ``eviction``: ``1`` or ``0``). An engine event log loaded into the app is named by
``log`` instead of a scenario: the spec grown from its arrivals, under its header's policy.

For example::

    >>> d = design_from_query({"variant": "early-release"}, {})
    >>> d.scenario.name, d.policy.publication, d.variant
    ('burst2', 'on-completion', 'early-release')
    >>> d.query()
    {'variant': 'early-release'}
    >>> design_from_query({"scenario": "burst9"}, {})
    Traceback (most recent call last):
    ...
    flightcheck.checks.interactive.design.BadQuery: unknown scenario 'burst9'; known: burst2, ...
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Mapping

from flightcheck.checks.inputs import shown
from flightcheck.checks.suite.defaults import variant_scenario
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS, Policy, Scenario
from flightcheck.spec.variants import VARIANTS

#: The environment's options a query may switch on or off.
OPTIONS = ("aborts", "notifications", "eviction")
#: The policy's fields, each a query parameter of its own.
POLICY_FIELDS = tuple(f.name for f in dataclasses.fields(Policy))


def knobs() -> list[dict[str, Any]]:
    """Every knob a design has, as the page's controls: each knob of :data:`~flightcheck.spec.knobs.KNOBS`
    (its query parameter, kind -- ``choice``, ``int`` or ``bool`` --, choices or lowest value, default and
    help, read from its declaration), then the environment's :data:`OPTIONS` (on/off). A knob added to the
    table becomes a control with no change here.

    For example::

        >>> [(k["name"], k["kind"]) for k in knobs()][:4]
        [('coordination', 'choice'), ('release', 'choice'), ('publication', 'choice'), ('capacity', 'int')]
        >>> knobs()[3]["low"], knobs()[3]["default"], knobs()[-1]["policy"]
        (1, 2, False)
    """
    from flightcheck.spec.knobs import KNOBS

    out = [{"name": k.name, "kind": {str: "choice", int: "int", bool: "bool"}[k.kind], "choices": list(k.choices),
            "low": k.low if k.kind is int else None, "default": k.default, "help": k.help, "policy": True}
           for k in KNOBS]
    return out + [{"name": name, "kind": "bool", "policy": False} for name in OPTIONS]


class BadQuery(ValueError):
    """A query the explorer cannot read: it names the parameter and what is wrong (an HTTP 400)."""


class UnknownLog(LookupError):
    """A ``log`` the app does not hold (e.g. after a restart): load it again (an HTTP 404)."""


@dataclass(frozen=True)
class LoadedLog:
    """An engine event log turned into a spec path: the scenario grown from its arrivals, its policy,
    the actions the validator read, and where (if anywhere) the engine departed from the spec."""

    name: str
    scenario: Scenario
    policy: Policy
    actions: tuple[str, ...]
    events: int
    departure: str | None  # the validator's diagnosis at the first event the spec refuses


@dataclass(frozen=True)
class Design:
    """A scenario, a policy and a variant: the spec whose states the explorer shows.

    The scenario keeps its own default policy (a loaded log's: its header's policy), against which
    :meth:`query` writes only the fields that differ.
    """

    scenario: Scenario
    policy: Policy
    variant: str = "correct"
    log: str | None = None  # the id of a loaded log the scenario comes from, else None (a named scenario)

    @property
    def spec(self) -> FlightSpec:
        """The variant's spec over the scenario under the policy (built once per design)."""
        return _build(self)

    def title(self) -> str:
        """One line: scenario (or log), policy and variant."""
        where = f"engine log {self.log}" if self.log else f"scenario {self.scenario.name}"
        return f"{where} · {self.policy.label()} · variant {self.variant}"

    def with_policy(self, **changes: Any) -> "Design":
        """The same design under changed policy fields (ValueError for a policy that is not one)."""
        return dataclasses.replace(self, policy=dataclasses.replace(self.policy, **changes))

    def query(self) -> dict[str, str]:
        """The query naming this design: only what differs from the defaults it is read against."""
        out: dict[str, str] = {}
        if self.log is not None:
            out["log"] = self.log
            base_scn = self.scenario
        else:
            default = variant_scenario(self.variant)
            if self.scenario.name != default.name:
                out["scenario"] = self.scenario.name
            base_scn = _named(self.scenario.name) if self.scenario.name != default.name else default
        if self.variant != "correct":
            out["variant"] = self.variant
        for name in OPTIONS:
            if getattr(self.scenario, name) != getattr(base_scn, name):
                out[name] = "1" if getattr(self.scenario, name) else "0"
        for name in POLICY_FIELDS:  # against the scenario's own policy (a log's: its header's)
            value = getattr(self.policy, name)
            if value != getattr(base_scn.policy, name):
                out[name] = str(int(value)) if isinstance(value, bool) else str(value)
        return out


@functools.lru_cache(maxsize=64)
def _build(design: Design) -> FlightSpec:
    return VARIANTS[design.variant].spec_class(design.scenario, design.policy)


def _named(name: str) -> Scenario:
    return {**SCENARIOS, **SCALE_SCENARIOS}[name]


def design_from_query(query: Mapping[str, str], logs: Mapping[str, LoadedLog]) -> Design:
    """The design a query names; :class:`BadQuery` naming the first parameter that is wrong, or
    :class:`UnknownLog` for a log the app does not hold."""
    variant = query.get("variant") or "correct"
    if variant not in VARIANTS:
        raise BadQuery(f"unknown variant {shown(variant)}; known: {', '.join(VARIANTS)}")
    if query.get("log"):
        if query.get("scenario"):
            raise BadQuery("give either scenario or log, not both")
        log = logs.get(query["log"])
        if log is None:
            raise UnknownLog(f"no engine log {shown(query['log'])} is loaded in this explorer (logs live as long "
                             "as the app; load the file again)")
        scenario, policy = log.scenario, log.policy
    elif query.get("scenario"):
        known = {**SCENARIOS, **SCALE_SCENARIOS}
        if query["scenario"] not in known:
            raise BadQuery(f"unknown scenario {shown(query['scenario'])}; known: {', '.join(known)}")
        scenario = known[query["scenario"]]
        policy = scenario.policy
    else:
        scenario = variant_scenario(variant)
        policy = scenario.policy
    options = {}
    for name in OPTIONS:
        if name in query:
            options[name] = _flag(name, query[name])
    if options:
        scenario = scenario.with_options(**options)
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(Policy):
        if field.name not in query:
            continue
        raw = query[field.name]
        if field.type in (int, "int"):
            if not raw.isdecimal() or len(raw) > 3:
                raise BadQuery(f"{field.name} must be a small whole number; got {shown(raw)}")
            changes[field.name] = int(raw)
        elif field.type in (bool, "bool"):
            changes[field.name] = _flag(field.name, raw)
        else:
            changes[field.name] = raw
    try:
        policy = dataclasses.replace(policy, **changes)
    except ValueError as error:
        raise BadQuery(f"not a policy: {error}") from None
    design = Design(scenario, policy, variant, query.get("log") or None)
    try:
        design.spec
    except ValueError as error:  # e.g. coordination on a scenario whose prefix caching is off
        raise BadQuery(f"not a design: {error}") from None
    return design


def _flag(name: str, raw: str) -> bool:
    if raw not in ("0", "1"):
        raise BadQuery(f"{name} must be 1 or 0; got {shown(raw)}")
    return raw == "1"
