"""The spec side of a run: engine request IDs named as spec requests, the scenario grown from arrivals.

:class:`SpecTracker` turns engine request IDs into spec request indices (arrival order) and builds the
:class:`~flightcheck.spec.scenario.Scenario` from the arrivals (class by input key, pages and tail from
``num_tokens``, the decode bound from ``max_tokens``, the prompt tree from the shareable pages' chained
keys: a new prompt's parent is the earlier one it shares the most pages with), growing the spec as requests arrive (or checking
them against a fixed scenario, so that states land on that scenario's explored graph).

For example::

    >>> from flightcheck.spec.scenario import Policy
    >>> tr = SpecTracker(Policy())
    >>> tr.arrive(7, "in-a", 40, 1), tr.arrive(9, "in-a", 40, 1), tr.spec.scenario.requests[1].cls
    (0, 1, 0)
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.conform.witness import chain_tags
from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.impl.pages import PAGE_SIZE
from flightcheck.spec.model import Action, FlightSpec
from flightcheck.spec.actions import FLIGHT_ACTIONS, NOTICES, SLOT_ACTIONS, SUBMISSIONS
from flightcheck.spec.scenario import Policy, Request, Scenario
from flightcheck.spec.state import ABSENT, State


class SpecTracker:
    """The spec side of a run: the scenario built from arrivals, the spec over it, and its current state.

    With ``scenario`` given, arrivals must match it request by request (used by coverage and replay, so
    that states land on that scenario's explored graph); otherwise the scenario grows with every arrival
    and the state is lifted into the larger layout (each field's old slots are a prefix of the new ones).
    """

    def __init__(self, policy: Policy, *, scenario: Scenario | None = None, spec_class: type = FlightSpec,
                 num_pages: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.policy = policy
        self.spec_class = spec_class
        # What the environment may do around an engine: cancel, send bogus terminations, let a follower's
        # wait run out, make a forward pass fail. The engine's own pool (when known) is modelled exactly.
        self.options = {"aborts": True, "notifications": True, "expiry": True, "failures": True}
        if scenario is None:
            self.options["num_pages"] = num_pages
        self.options.update(options or {})
        self.fixed = scenario
        self.flight_id_of: dict[int, int] = {}  # spec flight slot (its current leader) -> engine flight id
        self.requests: list[Request] = []
        self.index_of: dict[int, int] = {}
        self.engine_of: dict[int, int] = {}
        self.class_of_input: dict[str, int] = {}
        self.class_of_tokens: dict[tuple[int, ...], int] = {}
        self.class_tokens: dict[int, tuple[int, ...]] = {}
        self.class_keys: dict[int, dict[int, str]] = {}
        self.key_slot: dict[str, tuple[int, int]] = {}
        self.prefixes: list[tuple[int, int, int]] = []  # the prompt tree grown from page keys
        self._tags: dict[int, list[int]] = {}
        self._sharers_of: tuple[Any, dict[tuple[int, int], list[int]]] = (None, {})
        self._page_keys: tuple[Any, dict[tuple[int, int], str | None]] = (None, {})
        self.last_action: Action | None = None
        self.next_index: int | None = None  # a fixed scenario's index for the next arrival (replay)
        if scenario is not None:
            self.spec = spec_class(scenario.with_options(**self.options), policy)
        else:
            self.spec = None
        self.state: State | None = self.spec.initial() if self.spec is not None else None

    # --- naming ------------------------------------------------------------------------------------
    def cls_slot(self, i: int) -> int:
        """Class slot of spec request ``i``."""
        return self.spec.layout.req_class[i]

    def _sharers(self, c: int, p: int) -> list[int]:
        """Class slots whose page ``p`` is class ``c``'s (the prompt tree's shared pages), ``c`` first."""
        lay = self.spec.layout if self.spec is not None else None
        if lay is None or c >= len(lay.class_pages) or p >= len(lay.class_pages[c]):
            return [c]
        if self._sharers_of[0] is not lay:  # static per layout; the monitor asks for every page slot at every event
            self._sharers_of = (lay, {})
        known = self._sharers_of[1].get((c, p))
        if known is None:
            k = lay.class_pages[c][p]
            known = self._sharers_of[1][c, p] = [c] + [d for d, pages in enumerate(lay.class_pages)
                                                      if d != c and p < len(pages) and pages[p] == k]
        return known

    def page_key(self, c: int, p: int) -> str | None:
        """The chained key of page ``p`` of class slot ``c``, when known (from any prompt that shares it:
        a shared parent may be named after a class none of whose requests has arrived yet)."""
        lay = self.spec.layout if self.spec is not None else None
        if self._page_keys[0] is not lay or lay is None:  # known keys change only in learn_keys, which resets this
            self._page_keys = (lay, {})
        known = self._page_keys[1]
        if (c, p) not in known:
            known[c, p] = next((self.class_keys[d][p] for d in self._sharers(c, p) if p in self.class_keys.get(d, {})),
                               None)
        return known[c, p]

    def page_tags(self, c: int, p: int, size: int = PAGE_SIZE) -> list[int]:
        """The KV chain tags page ``p`` of class slot ``c`` must carry once computed."""
        d = next((d for d in self._sharers(c, p) if d in self.class_tokens), c)
        if d not in self._tags:
            self._tags[d] = chain_tags(self.class_tokens[d])
        return self._tags[d][p * size:(p + 1) * size]

    def learn_keys(self, c: int, keys: dict[int, str]) -> None:
        """Record page keys of class slot ``c`` (from the engine's request or a publish event)."""
        mine = self.class_keys.setdefault(c, {})
        self._page_keys = (None, {})
        for p, key in keys.items():
            mine[p] = key
            self.key_slot[key] = (c, p)

    # --- arrivals ----------------------------------------------------------------------------------
    def arrive(self, engine_id: int, input_key: str, num_tokens: int, num_decode: int,
               token_ids: tuple[int, ...] | None = None, page_keys: list[str] | None = None) -> int:
        """Name a new arrival: its spec index (growing the spec unless the scenario is fixed)."""
        if engine_id in self.index_of:
            raise ConformanceError(Diagnosis("payload", f"request {engine_id} arrived twice"))
        i = len(self.engine_of)
        if self.fixed is not None and self.next_index is not None:
            i, self.next_index = self.next_index, None
        if token_ids is not None:
            known, same = self.class_of_input.get(input_key), self.class_of_tokens.get(tuple(token_ids))
            if known is not None and self.class_tokens.get(known) != tuple(token_ids):
                raise ConformanceError(Diagnosis("payload", f"request {engine_id}'s input key {input_key} is another "
                                                 "prompt's: different prompts would share a flight",
                                                 properties=["one_flight_per_input"]))
            if same is not None and known is None:
                raise ConformanceError(Diagnosis("payload", f"request {engine_id}'s prompt arrived before under another "
                                                 f"input key than {input_key}: identical prompts would not share a flight",
                                                 properties=["one_flight_per_input"]))
        num_pages, tail = divmod(num_tokens, PAGE_SIZE)
        has_tail = tail != 0
        if self.fixed is not None:
            if i >= self.fixed.num_requests:
                raise ConformanceError(Diagnosis("payload", f"request {engine_id} is arrival {i + 1}, but scenario "
                                                 f"{self.fixed.name} has only {self.fixed.num_requests} requests"))
            want = self.fixed.requests[i]
            c = self.fixed.classes.index(want.cls)
            known = self.class_of_input.get(input_key)
            if (known is not None and known != c) or (known is None and c in self.class_of_input.values()) \
                    or (num_pages, has_tail) != (want.num_pages, want.has_tail) or num_decode > want.num_decode:
                raise ConformanceError(Diagnosis("payload", f"arrival {i} (engine request {engine_id}, {num_tokens} "
                                                 f"tokens) does not match request r{i} of scenario {self.fixed.name}"))
        else:
            c = self.class_of_input.get(input_key, len(self.class_of_input))
            if c == len(self.class_of_input) and page_keys:
                parent = self._parent(page_keys)
                if parent is not None:
                    self.prefixes.append((c, *parent))
            try:
                self.requests.append(Request(cls=c, num_pages=num_pages, has_tail=has_tail, num_decode=num_decode,
                                             tail_tokens=tail if has_tail else Request.tail_tokens))
                old_spec, old_state = self.spec, self.state
                scn = Scenario("trace", tuple(self.requests), policy=self.policy, prefixes=tuple(self.prefixes),
                               **self.options)
            except ValueError as error:  # a shape no engine run should have (e.g. more pages than the pool)
                raise ConformanceError(Diagnosis("payload", f"request {engine_id} ({num_tokens} tokens, {num_decode} "
                                                 f"decode steps) cannot arrive: {error}")) from None
            self.spec = self.spec_class(scn, self.policy)
            self.state = lift_state(old_spec, old_state, self.spec)
        self.class_of_input[input_key] = c
        self.index_of[engine_id] = i
        self.engine_of[i] = engine_id
        if token_ids is not None:
            self.class_of_tokens[tuple(token_ids)] = c
            self.class_tokens[c] = tuple(token_ids)
        if page_keys is not None:
            self.learn_keys(c, dict(enumerate(page_keys)))
        return i

    def _parent(self, page_keys: list[str]) -> tuple[int, int] | None:
        """A new prompt's place in the prompt tree: the earlier class whose shareable pages' chained keys
        it shares the longest run of from the front (the first such class on a tie), and how many."""
        best: tuple[int, int] | None = None
        for d, keys in self.class_keys.items():
            n = 0
            while n < len(page_keys) and keys.get(n) == page_keys[n]:
                n += 1
            if n and (best is None or n > best[1]):
                best = (d, n)
        return best

    def observe_arrival(self, event: dict[str, Any], engine: Any) -> None:
        """Register an engine ``arrive`` event (tokens, keys, decode bound read from the engine) and apply it."""
        if event["action"] not in SUBMISSIONS:
            return
        req = engine.scheduler.requests[event["request"]]
        i = self.arrive(event["request"], event["input"], event["num_tokens"], req.max_positions - req.num_tokens,
                        req.token_ids, req.page_keys)
        self.apply_arrival(i)

    def apply_arrival(self, i: int) -> None:
        """Take spec action ``arrive(i)`` and note the engine flight a new leader opens."""
        self.last_action = Action("arrive", i)
        self.state = self.spec.apply(self.state, self.last_action)
        s = self.spec.view(self.state)
        if s.mem[i] == i + 1:
            self.flight_id_of[i] = self.engine_of[i]

    def flight_id(self, f: int) -> int | None:
        """The engine's ID of the flight the spec names after its current leader ``f``."""
        return self.flight_id_of.get(f)

    def action_of(self, event: dict[str, Any]) -> Action:
        """The spec action an (already-arrived) engine event stands for."""
        name = event["action"]
        if name in FLIGHT_ACTIONS:  # a flight is named after its (new) leader
            return Action(name, self._index(event["leader"], event))
        if name in SLOT_ACTIONS:
            slot = self.key_slot.get(event["key"])
            if slot is None:
                raise ConformanceError(Diagnosis("payload", f"evicted key {event['key']} was never published", event))
            return Action(name, self.spec.layout.page(*slot))
        if name in NOTICES:
            i = self.index_of.get(event["request"])
            return Action(name, self.spec.num_requests if i is None else i)
        return Action(name, self._index(event["request"], event))

    def _index(self, engine_id: int, event: dict[str, Any]) -> int:
        i = self.index_of.get(engine_id)
        if i is None:
            raise ConformanceError(Diagnosis("payload", f"event names request {engine_id}, which never arrived", event))
        return i


def lift_state(old_spec: FlightSpec | None, old_state: State | None, new_spec: FlightSpec) -> State:
    """``old_state`` of ``old_spec`` in the layout of the grown ``new_spec`` (each field's old slots are a
    prefix of its new ones; the new slots are the initial state's). A scenario grows one arrival at a
    time, so its indices follow arrival: where the grown layout first keeps arrival ranks (``seq``, once
    prefix coordination can meet a tie), request ``i`` that has arrived is the ``i + 1``-th."""
    new = list(new_spec.initial())
    if old_spec is None:
        return tuple(new)
    for name, (off, size, _lo, _hi) in old_spec.layout.fields.items():
        noff = new_spec.layout.fields[name][0]
        for j in range(max(size, 1)):
            new[noff + j] = old_state[off + j]
    if new_spec.layout.has_via_ties and not old_spec.layout.has_via_ties:
        ph, seq = old_spec.layout.fields["ph"][0], new_spec.layout.fields["seq"][0]
        for i in range(old_spec.num_requests):
            new[seq + i] = i + 1 if old_state[ph + i] != ABSENT else 0
    return tuple(new)
