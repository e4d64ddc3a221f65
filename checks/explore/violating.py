"""The states of an explored graph where a property is violated (what a variant's picture marks).

The explorer keeps only the first, shortest violation of each property; a picture that teaches a bug
marks every state where it is violated. :func:`violating_states` finds them on the graph: for an
invariant, every state where its predicate fails; for ``no_deadlock``, every state with a live request
and no engine step enabled; for a liveness property, the states of its counterexample's loop (or the
state where it stutters), mapped onto the graph's symmetry representatives.

For example::

    >>> from flightcheck.spec.variants import VARIANTS
    >>> from flightcheck.checks.explore.explorer import explore
    >>> result = explore(VARIANTS["stranded-followers"].demo_spec())
    >>> len(violating_states(result, "no_deadlock")) > 0
    True
"""

from __future__ import annotations

from typing import Any

from flightcheck.spec.properties import get_property


def violating_states(result: Any, name: str) -> set[Any]:
    """Every state of ``result.graph`` where the property ``name`` is violated (empty when it holds)."""
    spec, graph = result.spec, result.graph
    prop = get_property(name)
    if prop.kind == "always":
        return {s for s in graph if not prop.holds(spec, s)}
    if prop.kind == "deadlock_free":
        out = set()
        for s in graph:
            view = spec.view(s)
            live = any(spec.is_live(view, i) for i in range(spec.num_requests))
            if live and not any(spec.is_progress(a) for a in spec.enabled(s)):
                out.add(s)
        return out
    if prop.kind == "eventually":
        cx = result.result(name).counterexample
        if cx is None:
            return set()
        sym = spec.symmetry() if result.stats.symmetry else None
        canon = (lambda s: sym.canonical(s)[0]) if sym else (lambda s: s)
        steps = cx.loop or cx.steps[-1:]
        return {canon(step.state) for step in steps}
    return set()
