"""Symmetry reduction: requests with identical descriptions are interchangeable.

Two states that differ only by a renaming of interchangeable requests (same class, same pages, same
decode bound) have the same future up to that renaming, so the explorer keeps one representative per
orbit. :class:`Symmetry` renames a state by sorting each group of interchangeable requests by a local
key, carrying the references between requests (flight membership, index entries, flight slots) along.
The representative is always in the state's orbit (sound), and every state of an orbit gets the same
one (among requests that tie on their keys and are linked by flight membership, those another slot
names are tried in every order, and the rest take the names left in the order of their rows).

Actions are renamed with the same permutation, so a path found on representatives is turned back into
a concrete, replayable path (see :meth:`Symmetry.rename_action`).

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> sym = Symmetry(spec)
    >>> a = spec.apply(spec.initial(), Action("arrive", 0))
    >>> b = spec.apply(spec.initial(), Action("arrive", 1))
    >>> sym.canonical(a)[0] == sym.canonical(b)[0]
    True
"""

from __future__ import annotations

import itertools

from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.state import State


class Symmetry:
    """Canonical renaming of a spec's states over its groups of interchangeable requests.

    Everything it needs comes from the layout: the fields indexed by request are permuted, and the
    values of the fields that name a request (``layout.names_request``) are renamed; a field added to
    the layout with the right kind is reduced correctly with no change here.
    """

    def __init__(self, spec: FlightSpec) -> None:
        self.spec = spec
        lay = spec.layout
        groups: dict[object, list[int]] = {}
        for i, r in enumerate(spec.scenario.requests):
            groups.setdefault(r, []).append(i)
        self.groups = [g for g in groups.values() if len(g) > 1]
        self.n = spec.num_requests
        per_request = lay.fields_of("request")
        refs = lay.names_request
        # The sort key: a request's own slots, then its role in each naming field (none, itself, other).
        self.key_offsets = [lay.fields[f][0] for f in per_request if f not in refs]
        self.role_offsets = [lay.fields[f][0] for f in per_request if f in refs]
        # Fields not indexed by request whose every slot names a request (e.g. the index).
        self.named_slots = [off + k for f in refs if lay.kinds[f] != "request"
                            for off, size in [lay.fields[f][:2]] for k in range(max(size, 1))]

    @property
    def is_trivial(self) -> bool:
        """True when no two requests are interchangeable."""
        return not self.groups

    def canonical(self, state: State) -> tuple[State, tuple[int, ...]]:
        """The representative of ``state`` and the renaming ``perm`` (old index -> new index).

        Requests of a group are ordered by a key (their own slots, then their role in each naming field:
        none, themselves, another request, and that request's own key); where requests still tie and a
        naming field links them, the smallest renamed state over every order of the tied requests is
        kept, so the representative is the same for every state of an orbit. Only the orders of the
        tied requests that some slot names are tried (k! orders of a flight's k followers would be):
        the others take the names left, sorted by their renamed rows, which is that minimum.
        """
        if not self.groups:
            return state, tuple(range(self.n))
        keys, roles = self.key_offsets, self.role_offsets
        n = self.n
        base = []
        for i in range(n):
            own = tuple(state[o + i] for o in keys)
            base.append(own + tuple(0 if state[o + i] == 0 else (1 if state[o + i] == i + 1 else 2) for o in roles))
        linked = set()
        for o in roles:
            for i in range(n):
                v = state[o + i]
                if v != 0 and v != i + 1:
                    linked.add(i)
                    linked.add(v - 1)
        for k in self.named_slots:
            if state[k]:
                linked.add(state[k] - 1)

        def key(i: int) -> tuple:
            if i not in linked:
                return (base[i], ())
            return (base[i], tuple(base[state[o + i] - 1] if state[o + i] not in (0, i + 1) else () for o in roles))

        perm = list(range(n))
        ties: list[tuple[list[int], list[int]]] = []  # (new names, old requests) of linked requests that tie
        for group in self.groups:
            ordered = sorted(group, key=key, reverse=True)  # the most advanced request is named first
            for new, old in zip(group, ordered):
                perm[old] = new
            start = 0
            for end in range(1, len(ordered) + 1):
                if end == len(ordered) or key(ordered[end]) != key(ordered[start]):
                    block = ordered[start:end]
                    if len(block) > 1 and any(i in linked for i in block):
                        ties.append((group[start:end], block))
                    start = end
        if not ties:
            return self.rename(state, perm), tuple(perm)
        # Only a tied request that some slot names needs its name tried: the others (a flight's
        # followers, say) are named by nothing, so their names show only in their own rows, and for each
        # naming of the named ones the smallest state gives them the names left, in the order of their
        # renamed rows (the state is stored field by field, so sorted rows give the smallest columns).
        # The minimum is the one found by trying every order of the whole block, at a fraction of k!.
        named = set()
        for o in roles:
            for i in range(n):
                v = state[o + i]
                if v != 0 and v != i + 1:
                    named.add(v - 1)
        for k in self.named_slots:
            if state[k]:
                named.add(state[k] - 1)
        plans = []  # per tie: (new names, the named requests, the unnamed ones)
        for names, block in ties:
            plans.append((names, [i for i in block if i in named], [i for i in block if i not in named]))
        order = sorted(roles)
        best = None
        for choice in itertools.product(*[itertools.permutations(names, len(rs)) for names, rs, _us in plans]):
            trial = list(perm)
            for (_names, rs, _us), picked in zip(plans, choice):
                for old, new in zip(rs, picked):
                    trial[old] = new
            for (names, _rs, us), picked in zip(plans, choice):
                if not us:
                    continue
                left = sorted(set(names) - set(picked))

                def row(i: int, trial: list[int] = trial) -> tuple[int, ...]:
                    vals = (state[o + i] for o in order)  # a self-reference reads the same at any name
                    return tuple(0 if v == 0 else (-1 if v == i + 1 else trial[v - 1] + 1) for v in vals)

                for new, old in zip(left, sorted(us, key=row)):
                    trial[old] = new
            renamed = self.rename(state, trial)
            if best is None or renamed < best[0]:
                best = (renamed, tuple(trial))
        return best

    def rename(self, state: State, perm: list[int] | tuple[int, ...]) -> State:
        """``state`` with request ``i`` renamed ``perm[i]`` everywhere it is named."""
        out = list(state)
        for i in range(self.n):
            j = perm[i]
            for o in self.key_offsets:
                out[o + j] = state[o + i]
            for o in self.role_offsets:
                v = state[o + i]
                out[o + j] = 0 if v == 0 else perm[v - 1] + 1
        for k in self.named_slots:
            v = state[k]
            out[k] = 0 if v == 0 else perm[v - 1] + 1
        return tuple(out)

    def rename_action(self, action: Action, perm: tuple[int, ...]) -> Action:
        """``action`` as seen after renaming by ``perm`` (pages and the phantom ID keep their names)."""
        if action.name == "evict" or action.arg >= self.n:
            return action
        return Action(action.name, perm[action.arg])

    @staticmethod
    def inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
        """The inverse renaming."""
        inv = [0] * len(perm)
        for old, new in enumerate(perm):
            inv[new] = old
        return tuple(inv)
