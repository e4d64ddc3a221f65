"""A state of the relational model: per-request, per-flight, per-class and per-page slots as functions.

:data:`SCHEMA` names every component with the sorts it is indexed by and its value type. A flight is
named by its leader request, as in the finite spec, so per-flight slots are indexed by ``R`` too.

| component | sorts | value | the finite spec's slot |
|---|---|---|---|
| ``ph`` | R | int | ``ph[i]``: the phase (the spec's constants, ABSENT .. FAILED) |
| ``mem`` | R, R | bool | ``mem[i] == f + 1``: ``i`` is a member of flight ``f`` (a leader of its own) |
| ``rel`` | R | bool | ``rel[i]``: in the released set |
| ``fl`` | R | bool | ``fl[f] == OPEN`` |
| ``exp`` | R | bool | ``exp[i]``: its wait expired |
| ``via`` | R, R | bool | ``via[i] == f + 1``: ``i`` waits via flight ``f`` (prefix coordination) |
| ``idx`` | C, R | bool | ``idx[c] == f + 1``: the index sends class ``c`` to flight ``f`` |
| ``pg`` | P | int | ``pg[k]``: NOT_CACHED, RESERVED or READY |
| ``hold`` | R, P | bool | page ``k`` is at a position below ``pubd[i]``: ``i`` holds a reference on it |
| ``comp`` | R, P | bool | page ``k`` is at a position below ``done[i]``: ``i`` computed or recovered it |
| ``running`` | - | int | how many requests are in prefill or decode (a counter, see below) |
| ``g_term``, ``g_early``, ``g_dup`` | - | int, bool, bool | the ghosts the properties read |
| ``ord`` | R, R | bool | none: a ghost of the proofs (:data:`PROOF_GHOSTS`), an order in which every wait points back |

``ord`` is what makes waits acyclic provable: a strict order in which the flight a request waits via
comes before it. A newcomer goes after everyone, and a request that takes over a flight's place (a
promoted follower, the heir of a lost leader's waiters) takes that flight's place in the order. The
spec has no such slot (the drift check reads it as the depth of each request's chain of waits and
leaves it out of the successors it compares).

Not kept: ``hit`` and ``dec`` (no guard or property of the modelled design reads them but ``decode``'s,
and a decode step changes nothing else: it is a stutter step here), and ``ref``: a page's reference count is read through the relation it counts, so the
spec's ``ref[k] == 0`` is ``no request holds k`` here (the spec's ``refcounts_exact``, which needs an
exact cardinality, says the two agree; the drift check holds them equal on every reachable state).
``running`` is kept as a plain integer updated as the spec's count changes (+1 at admission, -1 when a
running request terminates); no invariant ties it to the phases, so the proofs treat it as any integer
(a sound over-approximation: no modelled property reads it).

A state holds callables: the symbolic reading's pre-state is z3 functions, a successor is Python
closures over its predecessor (so a post-state is a substitution, never new symbols), and the finite
reading's states are tables.

For example::

    >>> from flightcheck.checks.unbounded.signature import Finite
    >>> sig = Finite(2, (0, 0), (0, 0), 2)
    >>> s = initial_state(sig)
    >>> s.ph(0), s.mem(0, 1), s.g_dup, s.update(ph=lambda x: 2).ph(1)
    (0, False, False, 2)
"""

from __future__ import annotations

from typing import Any, Callable

import z3

SCHEMA: dict[str, tuple[tuple[str, ...], type]] = {
    "ph": (("R",), int), "mem": (("R", "R"), bool), "rel": (("R",), bool), "fl": (("R",), bool),
    "exp": (("R",), bool), "via": (("R", "R"), bool), "idx": (("C", "R"), bool), "pg": (("P",), int), "hold": (("R", "P"), bool),
    "comp": (("R", "P"), bool), "running": ((), int), "g_term": ((), int), "g_early": ((), bool),
    "g_dup": ((), bool), "ord": (("R", "R"), bool),
}
#: Components of the proofs alone, with no slot in the spec (see the module's docstring).
PROOF_GHOSTS = ("ord",)
FUNCTIONS = tuple(n for n, (args, _t) in SCHEMA.items() if args)
SCALARS = tuple(n for n, (args, _t) in SCHEMA.items() if not args)


class RelState:
    """Named components: ``s.ph(x)``, ``s.mem(x, f)``, ``s.g_dup``. Immutable; :meth:`update` makes a
    successor that shares every component it does not replace."""

    def __init__(self, comps: dict[str, Any]) -> None:
        missing = set(SCHEMA) - set(comps)
        assert not missing, f"a state needs {sorted(missing)}"
        self.__dict__.update(comps)
        self._names = tuple(SCHEMA)

    def update(self, **changes: Any) -> "RelState":
        """A successor: the components named replaced, the others shared."""
        unknown = set(changes) - set(SCHEMA)
        assert not unknown, f"no such components: {sorted(unknown)}"
        comps = {n: getattr(self, n) for n in SCHEMA}
        comps.update(changes)
        return RelState(comps)

    def component(self, name: str) -> Any:
        """The component called ``name`` (a callable, or a scalar value)."""
        return getattr(self, name)


def _const(value: Any) -> Callable[..., Any]:
    return lambda *args: value


def initial_state(sig: Any) -> RelState:
    """Nothing arrived, nothing cached, no flights, every ghost clear (both readings)."""
    comps: dict[str, Any] = {}
    for name, (args, typ) in SCHEMA.items():
        zero = 0 if typ is int else False
        comps[name] = _const(zero) if args else zero
    return RelState(comps)


def symbolic_state(sig: Any, tag: str) -> RelState:
    """A state of z3 functions (and constants for the scalars), named ``ph@tag`` and so on."""
    comps: dict[str, Any] = {}
    for name, (args, typ) in SCHEMA.items():
        rng = z3.IntSort() if typ is int else z3.BoolSort()
        if args:
            comps[name] = z3.Function(f"{name}@{tag}", *[sig.sorts[a] for a in args], rng)
        else:
            comps[name] = z3.Const(f"{name}@{tag}", rng)
    return RelState(comps)


def table_state(tables: dict[str, Any]) -> RelState:
    """A finite state from tables: a dict per function component (argument tuple -> value), a value
    per scalar."""
    comps: dict[str, Any] = {}
    for name, (args, _typ) in SCHEMA.items():
        t = tables[name]
        if not args:
            comps[name] = t
        elif len(args) == 1:
            comps[name] = (lambda t: lambda x: t[(x,)])(t)
        else:
            comps[name] = (lambda t: lambda x, y: t[(x, y)])(t)
    return RelState(comps)


def tabulate(sig: Any, s: RelState) -> dict[str, Any]:
    """Every component of a finite state but the proofs' ghosts, evaluated over the domains (the form the
    drift check compares states in)."""
    import itertools

    out: dict[str, Any] = {}
    for name, (args, typ) in SCHEMA.items():
        if name in PROOF_GHOSTS:
            continue
        comp = getattr(s, name)
        if not args:
            out[name] = typ(comp)
            continue
        out[name] = {tup: typ(comp(*tup)) for tup in itertools.product(*[sig.domain[a] for a in args])}
    return out
