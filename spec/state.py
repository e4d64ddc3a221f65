"""The spec's state: a flat, hashable tuple of small integers with a named layout.

A state is a plain ``tuple`` of ints, so it hashes, compares and sorts cheaply and deterministically.
:class:`Layout` names its slots for one scenario (per request, per flight, per class, per page, and
the ghost variables that properties read), gives each slot its range, and wraps a value sequence in a
:class:`View` for reading (``s.ph[i]``) or an :class:`Edit` for building a successor. The same layout
wraps a list of z3 terms, which is how the z3 checks read the spec symbolically.

Phases of a request (``ph``): ``ABSENT`` (not arrived), ``BLOCKED`` (a follower waiting for its flight's
release; it holds no pages), ``WAITING`` (queued for admission; a released follower holds references on
the pages its leader held, its *pins*), ``PREFILL``, ``DECODE``, and the three ends: ``FINISHED``,
``ABORTED`` (a client cancel) and ``FAILED`` (its forward pass failed).

Per request, ``via`` names (``f + 1``) the other prompt's flight whose shared pages a flight leader
waits for under prefix coordination (0: none), and ``seq`` (only in a scenario where prefix coordination
can meet a tie: see ``Layout.has_via_ties``) is its arrival rank, by which the engine breaks that tie. Per request, ``pubd`` counts the shareable pages of its prompt it holds references on, from the front:
its pins while it waits, its hits and the pages it published while it runs, and, for a flight leader
that has just terminated, the pages it still holds until its flight is released or handed on.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> lay = Layout(SCENARIOS["burst2"])
    >>> s = lay.view(lay.initial())
    >>> s.ph[0] == ABSENT and s.idx[0] == 0
    True
"""

from __future__ import annotations

from typing import Any, Sequence

from flightcheck.spec.scenario import Policy, Scenario

ABSENT, BLOCKED, WAITING, PREFILL, DECODE, FINISHED, ABORTED, FAILED = range(8)
PHASE_NAMES = ("absent", "blocked", "waiting", "prefill", "decode", "finished", "aborted", "failed")
LIVE_PHASES = (BLOCKED, WAITING, PREFILL, DECODE)

# Flight slot values (one slot per request: a flight is named by the request that opened it).
CLOSED, OPEN, DRAINING = 0, 1, 2
# Page slot values.
NOT_CACHED, RESERVED, READY = 0, 1, 2
PAGE_NAMES = ("-", "reserved", "ready")
# Ghost ``g_term`` values: how a termination was misjudged (0 = never).
TERM_OK, TERM_LEGIT_REJECTED, TERM_BOGUS_ACCEPTED = 0, 1, 2

State = tuple  # a concrete state is a plain tuple of ints


class _Slice:
    __slots__ = ("vals", "off")

    def __init__(self, vals: Sequence[Any], off: int) -> None:
        self.vals, self.off = vals, off

    def __getitem__(self, i: int) -> Any:
        return self.vals[self.off + i]

    def __setitem__(self, i: int, x: Any) -> None:
        self.vals[self.off + i] = x


class View:
    """Read access to a state's slots by name: ``s.ph[i]``, ``s.pg[k]``, ``s.g_term``."""

    def __init__(self, layout: "Layout", vals: Sequence[Any]) -> None:
        self.layout = layout
        self.vals = vals

    def __getattr__(self, name: str) -> Any:
        # Fields are bound lazily: a guard reads only a few, and views are made for every state.
        try:
            off, size, _lo, _hi = self.layout.fields[name]
        except KeyError:
            raise AttributeError(f"a state has no field {name!r}") from None
        value = self.vals[off] if size == 0 else _Slice(self.vals, off)
        self.__dict__[name] = value
        return value

    def edit(self) -> "Edit":
        """A mutable copy from which a successor state is built."""
        return Edit(self.layout, list(self.vals))


class Edit(View):
    """A successor under construction; :meth:`build` freezes it into a state."""

    def set(self, name: str, x: Any) -> None:
        """Set a scalar slot (the ghosts), e.g. ``e.set("g_dup", 1)``."""
        off, size, _lo, _hi = self.layout.fields[name]
        assert size == 0, f"{name} is an array; index it instead"
        self.vals[off] = x

    def build(self) -> Any:
        """The new state: a tuple for concrete values, the list itself for symbolic ones."""
        return tuple(self.vals) if type(self.vals[0]) is int else self.vals


def _common(a: list[int], b: list[int]):
    for x, y in zip(a, b):
        if x != y:
            return
        yield x


class Layout:
    """Names, offsets and ranges of every slot of a scenario's states."""

    def __init__(self, scenario: Scenario, policy: Policy | None = None) -> None:
        self.scenario = scenario
        policy = policy or scenario.policy  # the spec's own, where it overrides the scenario's
        reqs = scenario.requests
        n = len(reqs)
        self.num_requests = n
        self.classes = scenario.classes
        self.class_slot = {c: k for k, c in enumerate(self.classes)}
        self.req_class = tuple(self.class_slot[r.cls] for r in reqs)
        # Page slots: the shareable pages of each class, in order; a page a class shares with its parent
        # in the prompt tree is the parent's slot. ``page_slots[k]`` names a slot by the first class that
        # has it; ``class_pages[c]`` lists class c's slots; ``page_children[k]`` the slots that follow k
        # in some class (the tree's edges: eviction takes leaves first).
        self.page_slots: list[tuple[int, int]] = []
        self.class_pages: list[list[int]] = []
        self.num_shareable: list[int] = []
        for c in self.classes:
            h = scenario.class_request(c).num_shareable
            parent = scenario.parent_of(c)
            inherited = self.class_pages[self.class_slot[parent[0]]][:parent[1]] if parent else []
            mine = list(inherited)
            for p in range(len(inherited), h):
                mine.append(len(self.page_slots))
                self.page_slots.append((self.class_slot[c], p))
            self.class_pages.append(mine)
            self.num_shareable.append(h)
        self.page_children: list[tuple[int, ...]] = [()] * len(self.page_slots)
        for mine in self.class_pages:
            for a, b in zip(mine, mine[1:]):
                if b not in self.page_children[a]:
                    self.page_children[a] = self.page_children[a] + (b,)
        # shared[c][d]: how many shareable pages classes c and d have in common, from the front.
        self.shared = [[sum(1 for _ in _common(a, b)) for b in self.class_pages] for a in self.class_pages]
        num_pages = len(self.page_slots)
        # Prefix coordination breaks a tie between two flights (or two waiters) sharing equally many pages
        # with a request by arrival, which only a scenario with such a tie needs to remember.
        m = policy.min_shared_pages
        sh = self.shared
        self.has_via_ties = policy.coordination == "prefix" and any(
            sh[c][d] == sh[c][e] >= m for c in range(len(sh)) for d in range(len(sh)) for e in range(d + 1, len(sh))
            if c not in (d, e))
        self.fields: dict[str, tuple[int, int, list[int], list[int]]] = {}
        # What each field is indexed by ("request", "class", "page" or "scalar"), and the fields whose
        # values name a request (0 for none, i + 1 for request i): symmetry reduction renames both.
        self.kinds: dict[str, str] = {}
        self.names_request: frozenset[str] = frozenset({"mem", "idx", "via"})
        off = 0

        def add(name: str, kind: str, size: int, lo: list[int], hi: list[int]) -> None:
            nonlocal off
            self.fields[name] = (off, size, lo, hi)
            self.kinds[name] = kind
            off += max(size, 1)

        nc = len(self.classes)
        add("ph", "request", n, [0] * n, [FAILED] * n)
        add("hit", "request", n, [0] * n, [self.num_shareable[k] for k in self.req_class])
        add("done", "request", n, [0] * n, [r.num_units for r in reqs])
        add("pubd", "request", n, [0] * n, [self.num_shareable[k] for k in self.req_class])
        add("dec", "request", n, [0] * n, [r.num_decode for r in reqs])
        add("mem", "request", n, [0] * n, [n] * n)
        add("rel", "request", n, [0] * n, [1] * n)
        add("fl", "request", n, [0] * n, [DRAINING] * n)
        add("exp", "request", n, [0] * n, [1] * n)  # its wait expired (sticky: kept after it terminates)
        add("via", "request", n, [0] * n, [n] * n)  # the flight (f + 1) whose shared pages it waits for
        if self.has_via_ties:
            add("seq", "request", n, [0] * n, [n] * n)  # its arrival rank (1: first; 0: not arrived)
        add("idx", "class", nc, [0] * nc, [n] * nc)
        add("pg", "page", num_pages, [0] * num_pages, [READY] * num_pages)
        add("ref", "page", num_pages, [0] * num_pages, [n] * num_pages)
        add("g_term", "scalar", 0, [0], [TERM_BOGUS_ACCEPTED])
        add("g_early", "scalar", 0, [0], [1])
        add("g_dup", "scalar", 0, [0], [1])
        self.size = off

    def fields_of(self, kind: str) -> list[str]:
        """The names of the fields indexed by ``kind`` ("request", "class", "page", "scalar"), in order."""
        return [name for name, k in self.kinds.items() if k == kind]

    def initial(self) -> State:
        """The initial state: nothing arrived, nothing cached, no flights."""
        return (0,) * self.size

    def view(self, vals: Sequence[Any]) -> View:
        """Read access to a state (or to a list of z3 terms)."""
        return View(self, vals)

    def page(self, cls_slot: int, p: int) -> int:
        """The page slot of page ``p`` of class slot ``cls_slot``."""
        return self.class_pages[cls_slot][p]

    def slot_names(self) -> list[str]:
        """A readable name for every slot, in order (``ph[0]``, ..., ``g_dup``)."""
        names = [""] * self.size
        for name, (off, size, _lo, _hi) in self.fields.items():
            if size == 0:
                names[off] = name
            for i in range(size):
                names[off + i] = f"{name}[{i}]"
        return names

    def bounds(self) -> list[tuple[int, int]]:
        """The (low, high) range of every slot, in order, for symbolic encodings."""
        out = [(0, 0)] * self.size
        for _name, (off, size, lo, hi) in self.fields.items():
            for i in range(max(size, 1)):
                out[off + i] = (lo[i], hi[i])
        return out
