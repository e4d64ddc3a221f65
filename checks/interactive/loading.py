"""Paths from elsewhere, and one path under two policies.

- :func:`counterexample`: the shortest path on which a design breaks a property (by default the one its
  variant must violate), with the failing step marked, as ``explore --variant`` finds it;
- :func:`replay_file`: the path of a ``replay`` file (``explore --json`` output, a JSON list, or one
  action per line) with the scenario, policy and variant it names;
- :func:`engine_log`: an engine event log read by ``validate``'s rules and tracker, as a spec path on the
  scenario grown from its arrivals, with the validator's diagnosis where the engine departs;
- :func:`compare`: a path replayed under another value of any knob (the release point, publication,
  capacity, aborts...), step by step, and the first step where the two differ.

Every bad input raises :class:`~flightcheck.checks.interactive.design.BadQuery` (or an
:class:`~flightcheck.checks.inputs.InputError` naming the line and field) with what is wrong.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import Any

from flightcheck.checks.conform.eventlog import header_policy, parse_events, validate_events
from flightcheck.checks.conform.replay import parse_path as parse_path_file
from flightcheck.checks.explore.explorer import StateLimitExceeded, explore
from flightcheck.checks.inputs import InputError, shown
from flightcheck.checks.interactive.design import BadQuery, Design, LoadedLog, design_from_query, knobs
from flightcheck.checks.report.lockstep import NOT_ENABLED, lockstep_steps
from flightcheck.spec.properties import properties_for
from flightcheck.spec.variants import VARIANTS

#: The most states the explorer searches for a counterexample before it sends the user to ``explore``.
MAX_SEARCH_STATES = 300_000
#: How long an uploaded log may take to validate (an HTTP request waits for it; `validate` allows more).
LOG_SECONDS = 60.0


def counterexample(design: Design, property: str | None = None) -> dict[str, Any]:
    """The shortest path on which ``design`` violates ``property`` (default: its variant's), as
    ``{"path": [...], "mark": step, "property": name, "note": words}``; liveness paths end in their loop
    (taken once) and say so."""
    name = property or VARIANTS[design.variant].expected_violation
    if name is None:
        raise BadQuery(f"variant {design.variant} is a correct design: it violates no property; choose a variant "
                       f"that must ({', '.join(v for v in VARIANTS if VARIANTS[v].expected_violation)}) or name "
                       "a property")
    props = [p for p in properties_for(design.spec) if p.name == name]
    if not props:
        raise BadQuery(f"property {shown(name)} does not apply to {design.title()}; it has "
                       f"{', '.join(p.name for p in properties_for(design.spec))}")
    res = _explored(design, tuple(props)).result(name)
    if res.holds or res.counterexample is None:
        raise BadQuery(f"{name} holds on {design.title()}: there is no counterexample to show")
    return _found(name, res.counterexample)


def violations(design: Design) -> list[dict[str, Any]]:
    """Every property of ``design`` that it breaks, each with its shortest counterexample (as
    :func:`counterexample` gives it), in the spec's order; a ``sometimes`` property never seen is listed
    with ``"path": None`` (no path shows that something never happens). One exploration checks them all.

    For example::

        >>> from flightcheck.checks.interactive.design import design_from_query
        >>> [(v["property"], len(v["path"])) for v in violations(design_from_query({"variant": "early-release"}, {}))]
        [('single_prefill', 9), ('release_after_publication', 6)]
    """
    result = _explored(design, tuple(properties_for(design.spec)))
    out = []
    for res in result.properties:
        if res.holds:
            continue
        if res.counterexample is None:
            out.append({"property": res.name, "kind": res.kind, "story": res.story, "path": None, "mark": None,
                        "note": f"{res.name}: no reachable state shows it"})
        else:
            out.append({"kind": res.kind, "story": res.story, **_found(res.name, res.counterexample)})
    return out


@functools.lru_cache(maxsize=32)
def _explored(design: Design, props: tuple) -> Any:
    try:
        return explore(design.spec, max_states=MAX_SEARCH_STATES, properties=list(props))
    except StateLimitExceeded:
        raise BadQuery(f"{design.title()} has more than {MAX_SEARCH_STATES:,} states: search it with "
                       "`flightcheck explore`, then load its --json output here") from None


def _found(name: str, cx: Any) -> dict[str, Any]:
    path = cx.actions + [str(s.action) for s in cx.loop]
    if cx.loop:
        note = f"steps {len(cx.steps) + 1}-{len(path)} repeat forever: a request stays live and never terminates"
    elif cx.stutters:
        note = "after the last step nothing can happen: no engine step is enabled and a request is still live"
    else:
        note = f"after step {len(path)}, {name} no longer holds"
    return {"path": path, "mark": len(cx.steps), "property": name, "note": f"{name} violated: {note}"}


def replay_file(text: str, source: str = "uploaded path") -> tuple[dict[str, str], list[str]]:
    """The design query (scenario, variant, policy) a replay file names and its actions. As ``replay``
    runs it, the scenario has every environment option on (aborts, notifications, eviction)."""
    path = parse_path_file(text, source)
    query = {k: str(path.meta[k]) for k in ("scenario", "variant") if k in path.meta}
    query.update({k: str(int(v)) if isinstance(v, bool) else str(v) for k, v in path.meta.get("policy", {}).items()})
    query.update(aborts="1", notifications="1", eviction="1")
    design_from_query(query, {})  # names what is wrong before the page asks
    return query, path.actions


def engine_log(text: str, source: str = "uploaded log") -> LoadedLog:
    """An engine event log as a spec path: read and checked as ``validate`` reads it (header, schema, the
    size limits), validated against the spec, and kept with the scenario grown from its arrivals."""
    events, header = parse_events(text.removesuffix("\n").split("\n"), source)
    try:
        policy = header_policy(header)
    except (TypeError, ValueError) as error:
        raise InputError(source, 1, "policy", f"not a policy: {error}") from None
    pages = ((header or {}).get("pool") or {}).get("num_pages")
    report = validate_events(events, policy, num_pages=pages, context=(header or {}).get("context"), source=source,
                             max_seconds=LOG_SECONDS)
    if report.scenario is None:
        raise InputError(source, None, None, "no request arrives before the engine departs from the spec; "
                         "there is no path to show")
    departure = None if report.ok else report.diagnosis.format()
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    scenario = report.scenario.with_policy(**policy.__dict__)
    return LoadedLog(digest, scenario, policy, tuple(report.actions), report.num_events, departure)


def compare(design: Design, actions: list[str], field: str) -> dict[str, Any]:
    """``actions`` replayed on ``design`` and on the same design under another value of ``field`` (any knob
    of :func:`~flightcheck.checks.interactive.design.knobs`: a named choice takes the next one, on/off the
    other, a number one more): every step's changes in each, and the first step where they differ."""
    knob = next((k for k in knobs() if k["name"] == field), None)
    if knob is None:
        raise BadQuery(f"compare takes a knob ({', '.join(k['name'] for k in knobs())}); got {shown(field)}")
    this = getattr(design.policy if knob["policy"] else design.scenario, field)
    if knob["kind"] == "choice":
        other_value: Any = knob["choices"][(knob["choices"].index(this) + 1) % len(knob["choices"])]
    else:
        other_value = (not this) if knob["kind"] == "bool" else this + 1
    try:
        other = design.with_policy(**{field: other_value}) if knob["policy"] else \
            dataclasses.replace(design, scenario=design.scenario.with_options(**{field: other_value}))
        other.spec
    except ValueError as error:
        raise BadQuery(f"the design has no {field} {_word(other_value)}: {error}") from None
    rows = lockstep_steps(design.spec, other.spec, actions)
    first = next((n for n, _, a, b in rows if a != b), None)
    usable = [a for (n, a, _, b) in rows if b != NOT_ENABLED]
    return {"field": field, "this": _word(this), "other": _word(other_value),
            "steps": [{"n": n, "action": a, "this": x, "other": y} for n, a, x, y in rows],
            "first_difference": first, "other_query": other.query(), "other_path": usable}


def _word(value: Any) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)
