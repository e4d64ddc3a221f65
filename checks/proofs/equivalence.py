"""Refactor equivalence: two designs that nobody outside can tell apart.

Two variants over the same scenario share one action vocabulary (``spec.actions``), so "the same
external events" means: both take the *same action instance* at every step. A product machine runs
them in lockstep from their initial states, and after every step compares what the outside world
sees of a coordinator:

- which actions are enabled (an action one design can take and the other cannot distinguishes them),
- the verdict on every termination (``finish``, ``abort``, ``notify``: accepted as known, or rejected),
  and the ghost ``g_term`` that records a misjudged one,
- every request's phase (which followers are blocked, released to admission, running, terminated).

:func:`check_equivalence` searches the product breadth-first, depth 1, 2, ... (explicitly, or by BMC with z3)
so the first distinguishing sequence found is a shortest one; it is replayed concretely on both specs and
explained. When none exists up to
the depth asked, it tries to prove equivalence for every depth by induction on the product: Houdini
over candidate coupling invariants (every slot equal, "known" equal, "open flight" equal, "member of an
open flight" equal, and the observations themselves), with each design's own proved invariants assumed.
The verdict says plainly which of the two it is.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> r = check_equivalence("correct", "no-unknown-check", SCENARIOS["burst2-abort"], depth=3)
    >>> r.verdict, r.sequence
    ('different', ['notify(0)'])
    >>> r.difference
    'notify(0) is rejected by correct but accepted by no-unknown-check'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import z3

from flightcheck.checks.proofs.induction import prove
from flightcheck.checks.proofs.symbolic import IN_BOUNDS, TransitionSystem, _as_bool, checked_properties
from flightcheck.spec.expr import And
from flightcheck.spec.lemmas import lemmas_for
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import Policy, Scenario
from flightcheck.spec.state import OPEN
from flightcheck.spec.variants import get_variant

TERMINATIONS = ("finish", "abort", "notify")


@dataclass
class EquivalenceResult:
    """``verdict``: ``"proved"`` (equivalent at every depth), ``"bounded"`` (no difference up to
    ``depth``), or ``"different"`` (``sequence`` distinguishes them; ``difference`` says how)."""

    variant_a: str
    variant_b: str
    verdict: str
    depth: int
    seconds: float
    sequence: list[str] = field(default_factory=list)
    difference: str = ""
    failed_couplings: list[str] = field(default_factory=list)

    @property
    def equivalent(self) -> bool:
        """No distinguishing sequence (proved, or up to the depth checked)."""
        return self.verdict != "different"

    def summary(self) -> str:
        """One line for people."""
        a, b = self.variant_a, self.variant_b
        if self.verdict == "proved":
            return f"{a} and {b} are equivalent: no distinguishing sequence up to depth {self.depth}, and proved for every depth by induction on the product"
        if self.verdict == "bounded":
            return f"{a} and {b} are equivalent up to depth {self.depth} (not proved for every depth)"
        return f"{a} and {b} differ after {len(self.sequence)} step(s): {self.difference}"


def observe(spec: FlightSpec, state: Any, action_index: int | None = None) -> list[Any]:
    """What the outside sees of ``state``: every action's guard, every enabled termination's verdict
    (enabled and accepted), every phase and ``g_term`` (a list of bools/ints, or of z3 terms for a symbolic state)."""
    s = spec.view(state)
    out: list[Any] = [spec.guard(state, a) for a in spec.actions]
    # A verdict is observable only where the termination can happen.
    out += [And(spec.guard(state, a), spec.accepts(s, a.arg)) for a in spec.actions if a.name in TERMINATIONS]
    out += [s.ph[i] for i in range(spec.num_requests)] + [s.g_term]
    return out


def observation_names(spec: FlightSpec) -> list[str]:
    """A name for each entry of :func:`observe`."""
    names = [f"{a} enabled" for a in spec.actions]
    names += [f"{a} accepted" for a in spec.actions if a.name in TERMINATIONS]
    return names + [f"phase of r{i}" for i in range(spec.num_requests)] + ["g_term"]


def _eq(x: Any, y: Any) -> Any:
    if isinstance(x, bool) or isinstance(y, bool) or z3.is_bool(x) or z3.is_bool(y):
        return _as_bool(x) == _as_bool(y)
    return x == y


class Product:
    """Two transition systems in lockstep over one action vocabulary."""

    def __init__(self, spec_a: FlightSpec, spec_b: FlightSpec) -> None:
        if [str(a) for a in spec_a.actions] != [str(a) for a in spec_b.actions]:
            raise ValueError("the two specs do not share an action vocabulary (different scenarios?)")
        self.spec_a, self.spec_b = spec_a, spec_b
        self.a, self.b = TransitionSystem(spec_a, "a_"), TransitionSystem(spec_b, "b_")

    def same_observations(self, t: int, part: slice = slice(None)) -> z3.BoolRef:
        """observe_A(s_A@t) == observe_B(s_B@t), entry by entry (or on the entries of ``part``)."""
        oa = observe(self.spec_a, self.a.at_time(t))[part]
        ob = observe(self.spec_b, self.b.at_time(t))[part]
        return z3.And([_as_bool(_eq(x, y)) for x, y in zip(oa, ob)])

    def same_outcomes(self, t: int) -> z3.BoolRef:
        """Phases and ``g_term`` equal at step ``t`` (a difference here shows after ``t`` steps)."""
        return self.same_observations(t, slice(-(self.spec_a.num_requests + 1), None))

    def same_offers(self, t: int) -> z3.BoolRef:
        """Enabled actions and termination verdicts equal at ``t`` (a difference shows at step ``t + 1``)."""
        return self.same_observations(t, slice(0, -(self.spec_a.num_requests + 1)))

    def lockstep(self, t: int) -> z3.BoolRef:
        """trans_A(t) and trans_B(t) and act_A@t == act_B@t."""
        return z3.And(self.a.trans(t), self.b.trans(t), self.a.act(t) == self.b.act(t))

    def init(self) -> z3.BoolRef:
        """Both at their initial states."""
        return z3.And(self.a.init(0), self.b.init(0))


def check_equivalence(variant_a: str, variant_b: str, scenario: Scenario, policy: Policy | None = None,
                      depth: int = 8, prove_unbounded: bool = True, search: str = "explicit") -> EquivalenceResult:
    """A shortest distinguishing sequence up to ``depth``, then induction on the product when there is none.

    ``search`` picks how the bounded part runs: ``"explicit"`` (breadth-first over concrete product pairs,
    :mod:`flightcheck.checks.proofs.distinguish`; seconds) or ``"z3"`` (BMC on the symbolic product; the
    same lengths, minutes on the three-request variants). The induction is z3's either way."""
    if search not in ("explicit", "z3"):
        raise ValueError(f"search must be 'explicit' or 'z3', not {search!r}")
    start = time.monotonic()
    spec_a = get_variant(variant_a).build(scenario, policy)
    spec_b = get_variant(variant_b).build(scenario, policy)
    prod = Product(spec_a, spec_b)
    if search == "explicit":
        from flightcheck.checks.proofs.distinguish import shortest_difference

        found = shortest_difference(spec_a, spec_b, depth)
        if found.prefix is not None:
            return _different(variant_a, variant_b, spec_a, spec_b, found.prefix, found.length,
                              time.monotonic() - start)
    else:
        solver = z3.Solver()
        solver.add(prod.init())
        # Observations at depth 0 cover the enabled actions and verdicts of the first step.
        for t in range(depth + 1):
            if t > 0:
                solver.add(prod.lockstep(t - 1))
            # Phases after t steps first (a sequence of length t), then what step t + 1 offers.
            for differs in (z3.Not(prod.same_outcomes(t)), z3.Not(prod.same_offers(t))):
                solver.push()
                solver.add(differs)
                if solver.check() == z3.sat:
                    seq = prod.a.actions_of(solver.model(), t)
                    solver.pop()
                    return _different(variant_a, variant_b, spec_a, spec_b, seq, t, time.monotonic() - start)
                solver.pop()
    if not prove_unbounded:
        return EquivalenceResult(variant_a, variant_b, "bounded", depth, time.monotonic() - start)
    proved, failed = _prove_product(prod)
    return EquivalenceResult(variant_a, variant_b, "proved" if proved else "bounded", depth,
                             time.monotonic() - start, failed_couplings=failed)


def _different(name_a: str, name_b: str, spec_a: FlightSpec, spec_b: FlightSpec, prefix: list[str],
               t: int, seconds: float) -> EquivalenceResult:
    """Replay the prefix on both specs concretely and name the first observation that differs.

    The difference is in the observations of the state after the prefix: an action enabled in one
    design only, a termination verdict, or a phase. The distinguishing sequence is the prefix plus the
    action that tells them apart (for a phase, the prefix's last action already did).
    """
    from flightcheck.checks.proofs.bmc import SymbolicMismatch
    from flightcheck.checks.explore.counterexample import Counterexample

    sa = Counterexample.from_actions(spec_a, prefix).final_state(spec_a)
    sb = Counterexample.from_actions(spec_b, prefix).final_state(spec_b)
    names = observation_names(spec_a)
    tail = spec_a.num_requests + 1  # phases and g_term: reported first, as the search asks them first
    entries = list(zip(names, observe(spec_a, sa), observe(spec_b, sb)))
    for name, x, y in entries[-tail:] + entries[:-tail]:
        if x != y:
            break
    else:
        raise SymbolicMismatch(f"z3 says {prefix} distinguishes {name_a} and {name_b}, the concrete replay does not")
    if name.startswith("phase") or name == "g_term":
        seq, what = prefix, f"after {prefix[-1] if prefix else 'the start'}, {name} is {x} in {name_a} but {y} in {name_b}"
    else:
        act, kind = name.split(" ")
        seq = prefix + [act]
        if kind == "enabled":
            what = f"{act} is {'enabled' if x else 'disabled'} in {name_a} but {'enabled' if y else 'disabled'} in {name_b}"
        else:
            what = f"{act} is {'accepted' if x else 'rejected'} by {name_a} but {'accepted' if y else 'rejected'} by {name_b}"
    # (an "accepted" entry is "enabled and accepted"; the enabled entries come first, so a verdict
    # difference is reported only where both designs can take the termination)
    return EquivalenceResult(name_a, name_b, "different", len(seq), seconds, seq, what)


def _couplings(prod: Product) -> list[tuple[str, Any]]:
    """Candidate relations between the two states at step ``t`` (functions of t)."""
    sa, sb = prod.spec_a, prod.spec_b
    names = sa.layout.slot_names()
    out: list[tuple[str, Any]] = [("same observations", prod.same_observations)]
    for j, name in enumerate(names):
        out.append((f"{name} equal", lambda t, j=j: prod.a.at_time(t)[j] == prod.b.at_time(t)[j]))
    n = sa.num_requests
    for i in range(n):
        out.append((f"r{i} known in both or neither", lambda t, i=i: _as_bool(_eq(
            sa.is_known(sa.view(prod.a.at_time(t)), i), sb.is_known(sb.view(prod.b.at_time(t)), i)))))
        out.append((f"f{i} open in both or neither", lambda t, i=i: (
            prod.a.at_time(t)[sa.layout.fields["fl"][0] + i] == OPEN) == (prod.b.at_time(t)[sb.layout.fields["fl"][0] + i] == OPEN)))
        for f in range(n):
            def member_of_open(spec, ts, t, i=i, f=f):
                v = spec.view(ts.at_time(t))
                return z3.And(v.mem[i] == f + 1, v.fl[f] == OPEN)
            out.append((f"r{i} in open f{f} in both or neither", lambda t, m=member_of_open: (
                m(sa, prod.a, t) == m(sb, prod.b, t))))
    return out


def _prove_product(prod: Product) -> tuple[bool, list[str]]:
    """Houdini (k=1) over the coupling candidates, each side's proved invariants assumed."""
    assumed = []
    for spec, ts in ((prod.spec_a, prod.a), (prod.spec_b, prod.b)):
        report = prove(spec, depth=1, max_k=2)
        invariants = {p.name: p for p in checked_properties(spec)} | {x.name: x for x in lemmas_for(spec)}
        invariants[IN_BOUNDS.name] = IN_BOUNDS
        for r in report.results + report.lemmas:
            if r.status == "proved":
                assumed += [ts.holds(invariants[r.property], t) for t in (0, 1)]
    base = z3.Solver()
    base.add(prod.init())
    solver = z3.Solver()
    solver.add(prod.lockstep(0), *assumed)
    current = [(name, fn) for name, fn in _couplings(prod) if base.check(z3.Not(fn(0))) == z3.unsat]
    failed = [name for name, _ in _couplings(prod) if name not in {c[0] for c in current}]
    changed = True
    while changed:
        changed = False
        solver.push()
        solver.add(*[fn(0) for _name, fn in current])
        for c in list(current):
            if solver.check(z3.Not(c[1](1))) != z3.unsat:
                current.remove(c)
                failed.append(c[0])
                changed = True
                break
        solver.pop()
    return any(name == "same observations" for name, _ in current), failed
