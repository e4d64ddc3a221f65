"""The spec of a scenario and policy, written out as a Promela model for SPIN, from the spec's own code.

:func:`to_promela` calls ``spec.guard``, ``spec.apply``, ``spec.is_live`` and every property's
``holds`` on :class:`~flightcheck.checks.promela.terms.Term` variables, one per layout slot, so the
model is printed from the very code the explorers run; nothing here names a field, an action or a
property. The model has:

- one global variable per slot (``ph_0``, ``g_term``, ...), of the smallest Promela type that holds
  its range, initialised to the spec's initial state;
- one guarded atomic step (``d_step``) per action instance: the guard, then every changed slot
  computed into a hidden temporary, then all of them assigned, so the update is simultaneous;
- each safety property as an assertion checked after every step (and once on the initial state),
  and ``no_deadlock`` as one more assertion ("a live request has an engine step enabled"), since
  SPIN's own deadlock check (invalid end states) means "no step at all", which is not the spec's
  notion: a live request with only the environment's steps left is a deadlock here;
- every loop head labelled ``end``, so SPIN reports no invalid end states.

Process structure. By default (``liveness=False``) one process runs every step: SPIN's state count
is then the explorer's plus one, the process's start before it has checked the initial state.
SPIN's weak fairness (``pan -f``) is a property of *processes* (a process enabled forever is
eventually scheduled), while the spec's is weak fairness of each *engine action*. With
``liveness=True`` every engine action instance is its own process, so the two coincide, and the
environment's actions share one process that also has an idle step, so that SPIN's fairness never
forces a client to act (an always-possible cancel would otherwise make every request terminate).
The environment's idle step is a self-loop in SPIN's graph and changes no state. That model
carries one LTL formula per request, ``eventually_terminates_i``: ``[]<> !live_i`` (the
request is not live infinitely often), to be checked with ``pan -a -f -N eventually_terminates_i``.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> text = to_promela(FlightSpec(SCENARIOS["burst2"]))
    >>> "d_step" in text and "assert(" in text and text.count(":: d_step") == 14
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.promela.terms import Term, literal
from flightcheck.spec.expr import Implies, Or
from flightcheck.spec.properties import properties_for

# Words Promela reserves; a slot named like one gets a trailing underscore.
_RESERVED = frozenset("""active assert atomic bit bool break byte chan d_step D_proctype do else empty
enabled eval false fi full goto hidden if init inline int len local ltl mtype nempty never nfull np_
od of pc_value pid print printf printm priority proctype provided run short skip timeout true typedef
unless unsigned xr xs select for in c_code c_expr c_decl c_state c_track show trace notrace""".split())


def variable_name(slot: str) -> str:
    """A layout slot name as a Promela identifier: ``ph[0]`` -> ``ph_0``."""
    name = re.sub(r"\[(\d+)\]", r"_\1", slot)
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return name + "_" if name in _RESERVED else name


def _type_for(lo: int, hi: int) -> str:
    if lo >= 0 and hi <= 1:
        return "bit"
    if lo >= 0 and hi <= 255:
        return "byte"
    if -32768 <= lo and hi <= 32767:
        return "short"
    return "int"


@dataclass
class PromelaModel:
    """The exported text and what was exported, for reading SPIN's answers back."""

    text: str
    assertions: dict[str, str] = field(default_factory=dict)  # property name -> its Promela text
    ltl: list[str] = field(default_factory=list)               # LTL formula names
    num_steps: int = 0                                          # d_step blocks (action instances kept)
    num_processes: int = 1


def export_promela(spec: Any, *, liveness: bool = False) -> PromelaModel:
    """The Promela model of ``spec`` (see the module docstring for its structure)."""
    lay = spec.layout
    names = [variable_name(s) for s in lay.slot_names()]
    if len(set(names)) != len(names):
        raise ValueError("two layout slots map to the same Promela name")
    vars_ = [Term(n) for n in names]
    view = spec.view(vars_)
    out: list[str] = [f"/* {spec.title()}",
                      "   exported by flightcheck from the spec's own code (checks/promela); do not edit. */", ""]
    decls: dict[str, list[str]] = {}
    for name, (lo, hi), init in zip(names, lay.bounds(), spec.initial()):
        decls.setdefault(_type_for(lo, hi), []).append(f"{name} = {init}")
    for typ, items in decls.items():
        for k in range(0, len(items), 8):
            out.append(f"{typ} {', '.join(items[k:k + 8])};")

    live = [spec.is_live(view, i) for i in range(spec.num_requests)]
    out.append("")
    for i, term in enumerate(live):
        out.append(f"#define live_{i} {literal(term)}")
    # Safety properties and no_deadlock, as assertions.
    model = PromelaModel("")
    checks: list[str] = []
    for p in properties_for(spec):
        if p.kind == "always":
            value = p.holds(spec, vars_)
        elif p.kind == "deadlock_free":
            progress = [spec.guard(vars_, a) for a in spec.actions if spec.is_progress(a)]
            value = Implies(Or(*live), Or(*progress))
        else:
            continue
        if value is True:
            continue
        text = literal(value)
        model.assertions[p.name] = text
        checks.append(f"    assert({text});  /* {p.name} */")
    out += ["", "inline check_properties() {"] + (checks or ["    skip"]) + ["}", ""]

    steps = []
    num_temps = 0
    for a in spec.actions:
        guard = spec.guard(vars_, a)
        if guard is False:
            continue
        new = spec.apply(vars_, a)
        changed = [(j, v) for j, (v, old) in enumerate(zip(new, vars_)) if v is not old]
        num_temps = max(num_temps, len(changed))
        body = [f"t{k} = {literal(v)}" for k, (_j, v) in enumerate(changed)]
        body += [f"{names[j]} = t{k}" for k, (j, _v) in enumerate(changed)]
        body.append("check_properties()")
        steps.append((a, f":: d_step {{ {literal(guard)} -> {'; '.join(body)} }}  /* {a} */"))
    model.num_steps = len(steps)
    if num_temps:
        out.append("hidden int " + ", ".join(f"t{k}" for k in range(num_temps)) + ";  /* simultaneous update */")
        out.append("")

    if not liveness:
        out += ["active proctype flight() {", "    d_step { check_properties() };  /* the initial state */",
                "end:", "    do"]
        out += ["    " + text for _a, text in steps]
        out += ["    od", "}"]
    else:
        env = [text for a, text in steps if not spec.is_engine(a)]
        model.num_processes = 1 + sum(spec.is_engine(a) for a, _t in steps)
        for a, text in steps:
            if spec.is_engine(a):
                out += [f"active proctype {a.name}_{a.arg}() {{", "end:", "    do", "    " + text, "    od", "}"]
        out += ["active proctype environment() {", "    d_step { check_properties() };  /* the initial state */",
                "end:", "    do"]
        out += ["    " + text for text in env]
        # An idle step, so that SPIN's weak fairness never forces the environment to act. (A bare
        # `skip` would be an "unconditional self-loop", which pan refuses.)
        out += [f"    :: ({names[0]} == {names[0]}) -> skip  /* idle */",
                "    od", "}", ""]
        for i in range(spec.num_requests):
            name = f"eventually_terminates_{i}"
            model.ltl.append(name)
            out.append(f"ltl {name} {{ [] <> (!live_{i}) }}")
    model.text = "\n".join(out) + "\n"
    return model


def to_promela(spec: Any, *, liveness: bool = False) -> str:
    """The Promela text of ``spec`` (:func:`export_promela`'s ``text``)."""
    return export_promela(spec, liveness=liveness).text
