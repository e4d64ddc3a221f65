"""The abstraction function: a finite spec state read as a structure of the relational model.

:func:`signature_of` gives the finite signature of a scenario (its requests, classes and page slots;
a page's path order is its slot order), :func:`abstract` maps one state of
:class:`~flightcheck.spec.model.FlightSpec` to a :class:`~flightcheck.checks.unbounded.state.RelState`
over it. Counts become sets (``pubd[i]`` pages held, ``done[i]`` pages computed: the shareable pages
below that position), ``mem[i] == f + 1`` becomes ``mem(i, f)``, and the reference counts, ``hit``,
``dec`` and ``via`` are dropped (see :mod:`flightcheck.checks.unbounded.state`).

For example::

    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> s = spec.apply(spec.initial(), spec.actions[0])
    >>> a = abstract(spec, s)
    >>> a.ph(0), a.mem(0, 0), a.fl(0), a.idx(0, 0)
    (2, True, True, True)
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.unbounded.signature import Finite
from flightcheck.checks.unbounded.state import RelState, table_state
from flightcheck.spec.pool import is_running
from flightcheck.spec.state import DRAINING, OPEN


def signature_of(spec: Any) -> Finite:
    """The finite signature of ``spec``'s scenario: its requests, class slots and page slots."""
    lay = spec.layout
    page_class = [c for c, _p in lay.page_slots]
    return Finite(lay.num_requests, lay.req_class, page_class, spec.policy.capacity, len(lay.classes))


def abstract(spec: Any, state: Any) -> RelState:
    """The relational structure of one finite state (see the module's docstring)."""
    lay, s = spec.layout, spec.view(state)
    n, nc, npg = lay.num_requests, len(lay.classes), len(lay.page_slots)
    pos = [p for _c, p in lay.page_slots]
    pclass = [c for c, _p in lay.page_slots]
    for f in range(n):
        if s.fl[f] == DRAINING:
            raise ValueError("a draining flight has no reading in the relational model (the final design's)")
        if s.via[f] != 0:
            raise ValueError("waiting via another flight (prefix coordination) is not modelled")
    mine = lambda x, k: pclass[k] == lay.req_class[x]  # noqa: E731
    tables: dict[str, Any] = {
        "ph": {(x,): s.ph[x] for x in range(n)},
        "mem": {(x, f): s.mem[x] == f + 1 for x in range(n) for f in range(n)},
        "rel": {(x,): s.rel[x] == 1 for x in range(n)},
        "fl": {(f,): s.fl[f] == OPEN for f in range(n)},
        "exp": {(x,): s.exp[x] == 1 for x in range(n)},
        "idx": {(c, f): s.idx[c] == f + 1 for c in range(nc) for f in range(n)},
        "pg": {(k,): s.pg[k] for k in range(npg)},
        "hold": {(x, k): mine(x, k) and pos[k] < s.pubd[x] for x in range(n) for k in range(npg)},
        "comp": {(x, k): mine(x, k) and pos[k] < s.done[x] for x in range(n) for k in range(npg)},
        "running": sum(1 for x in range(n) if is_running(s, x)),
        "g_term": s.g_term, "g_early": s.g_early == 1, "g_dup": s.g_dup == 1,
    }
    return table_state(tables)
