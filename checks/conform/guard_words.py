"""Why a guard is false, named by the conjunct that is false: words for
:func:`~flightcheck.spec.conjuncts.false_conjuncts`.

:func:`~flightcheck.checks.conform.explain.explain_guard` speaks the correct design's guards in
hand-written words; a variant that rewrites a guard (``stranded-followers``' release) falls outside them.
Here every false conjunct gets words from its own source and the state: a request's phase against the
one the conjunct needs, a flight that waits for its release, a full batch, a spec method's own
docstring, else the conjunct's text with the request, flight or page it is about filled in.

For example::

    >>> from flightcheck.spec.model import Action, FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> guard_words(spec, spec.initial(), Action("admit", 1))
    ['r1 is absent, needs waiting (admit: s.ph[i] == WAITING)']
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from flightcheck.spec.conjuncts import Conjunct, false_conjuncts
from flightcheck.spec.state import PHASE_NAMES, View

_FLIGHT_WORDS = ("closed", "open", "draining")
_PHASE_TEST = re.compile(r"^s\.ph\[(\w+)\] (==|!=|>=|<=) ([A-Z]+)$")
_CALL = re.compile(r"^(Not\()?(?:self|pool)\.(\w+)\(([^()]*)\)\)?$")


def guard_words(spec: Any, state: Any, action: Any) -> list[str]:
    """One line per false conjunct of ``action``'s guard in ``state``: what is false, in words, and the
    conjunct it reads (``admit: s.ph[i] == WAITING``)."""
    s = spec.view(state)
    return [f"{_words(spec, s, c)} ({_guard_name(c)}: {c.label})" for c in false_conjuncts(spec, state, action)]


def _guard_name(c: Conjunct) -> str:
    return c.method.removeprefix("g_")


def _words(spec: Any, s: View, c: Conjunct) -> str:
    phase = _PHASE_TEST.match(c.label)
    if phase and phase.group(1) in c.args:
        who = c.args[phase.group(1)]
        need = phase.group(3).lower()
        now = PHASE_NAMES[s.ph[who]]
        return f"r{who} is {now}, needs {need}" if phase.group(2) == "==" else f"r{who} is {now}"
    if c.label == "self.calm(s)":
        pending = [f for f in range(spec.num_requests) if spec.is_orphaned(s, f)]
        return "not calm: " + ", ".join(f"flight f{f} awaits its release or hand-over (its leader r{f} is "
                                         f"{PHASE_NAMES[s.ph[f]]})" for f in pending)
    if c.label == "self.num_running(s) < self.policy.capacity":
        return f"capacity full: {spec.num_running(s)} of {spec.policy.capacity} running"
    if c.label == "s.fl[f] == OPEN" and "f" in c.args:
        return f"flight f{c.args['f']} is {_FLIGHT_WORDS[s.fl[c.args['f']]]}, not open"
    call = _CALL.match(c.label)
    filled = _filled(c.label, c.args)
    if call and call.group(2) in ("is_live", "is_terminated", "leads_open_flight", "is_running") and c.args:
        who = next(iter(c.args.values()))
        doc = _filled(_doc(spec, call.group(2)), c.args)
        return f"r{who} is {PHASE_NAMES[s.ph[who]]}: {'' if call.group(1) else 'not '}{doc}"
    if call:
        doc = _filled(_doc(spec, call.group(2)), c.args)
        return f"{filled} is false: {doc or 'see the spec'}" + _phases(spec, s, c)
    if c.definition:
        return f"{filled} is false, where {filled} = {_filled(c.definition, c.args)}" + _phases(spec, s, c)
    return f"{filled} is false" + _phases(spec, s, c)


def _filled(text: str, args: dict[str, int]) -> str:
    """``text`` with each index argument replaced by its value (``s.ph[f]`` in flight 0: ``s.ph[0]``)."""
    for name, value in args.items():
        text = re.sub(rf"(?<![\w.]){name}(?!\w)", str(value), text)
    return text


def _phases(spec: Any, s: View, c: Conjunct) -> str:
    """The phases of the requests the conjunct reads, e.g. ``; r0 is aborted``."""
    who = sorted({int(n) for n in re.findall(r"s\.ph\[(\d+)\]", _filled(c.label + " " + c.definition, c.args))})
    return "".join(f"; r{w} is {PHASE_NAMES[s.ph[w]]}" for w in who if w < spec.num_requests)


def _doc(spec: Any, method: str) -> str:
    """The first sentence of a spec method's docstring, backquotes dropped, lower-cased at the start."""
    from flightcheck.spec import pool
    fn = getattr(type(spec), method, None) or getattr(pool, method, None)
    doc = inspect.getdoc(fn) if fn is not None else None
    if not doc:
        return ""
    first = doc.replace("``", "").split(". ")[0].split("\n\n")[0].replace("\n", " ").rstrip(".")
    return first[:1].lower() + first[1:]
