"""The spec's action vocabulary: names, who takes them, and :class:`Action` instances.

The engine's event log speaks exactly these names, in this order (impl/events.py; a test holds the two
equal). The engine's own steps (``ENGINE_ACTIONS``) are the ones weak fairness applies to; the
environment's (``ENVIRONMENT_ACTIONS``: arrivals, client cancels, bogus termination notices, a follower's
wait running out, a failing forward pass) may happen or not.

For example::

    >>> parse_action("release(1)")
    Action(name='release', arg=1)
    >>> Action("evict", 0).is_engine, Action("expire", 2).is_engine
    (True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ACTION_NAMES = ("arrive", "admit", "prefill", "publish", "release", "promote", "decode", "finish", "evict",
                "abort", "notify", "expire", "fail")
ENGINE_ACTIONS = frozenset({"admit", "prefill", "publish", "release", "promote", "decode", "finish", "evict"})
PROGRESS_ACTIONS = ENGINE_ACTIONS
ENVIRONMENT_ACTIONS = frozenset({"arrive", "abort", "notify", "expire", "fail"})
TERMINATIONS = ("finish", "abort", "fail")

# Named facts about the actions, one role each, so that code outside the spec asks "is this a submission?"
# rather than comparing a name with a literal: a new action joins the facts that describe it, here, once
# (tests/test_registries.py holds every fact to spec action names, and the roles to a partition of them).

# The actions a request's lifecycle starts with: the environment submits a request under a fresh index
# (the engine's event carries its role, template, token count and arrival time ``t``).
SUBMISSIONS = frozenset({"arrive"})
# The engine's step that takes a waiting request into the running batch: its pages are allocated, and a
# prefix-cache hit is recovered there.
ADMISSIONS = frozenset({"admit"})
# The forward passes over a request's prompt, a chunk of ``num_units`` at a time; the pass of the last
# chunk produces the request's first output token (its event says ``first_token``).
PROMPT_PASSES = frozenset({"prefill"})
# The forward passes that each produce one output token (their event carries the ``token``).
TOKEN_PASSES = frozenset({"decode"})
# The engine's forward passes on a request (a pass may first evict cached pages to make room).
FORWARD_PASSES = PROMPT_PASSES | TOKEN_PASSES
# The engine's step that publishes a request's computed pages to the prefix cache.
CACHE_PUBLICATIONS = frozenset({"publish"})
# The engine's step that lets a flight's followers go: its argument is the flight, named after its
# leader (the engine's command takes the flight's ID).
FOLLOWER_RELEASES = frozenset({"release"})
# The hand-over of a lost leader's flight to a follower (leader loss "promote"): the engine takes it only
# inside the call that loses the leader, and the flight keeps its engine ID under its new leader's name.
HANDOVERS = frozenset({"promote"})
# The actions on a flight as a whole, whose argument names the flight after its (current or new) leader:
# while a lost leader's flight is pending, nothing else may happen.
FLIGHT_ACTIONS = FOLLOWER_RELEASES | HANDOVERS
# The engine's own termination of a request (at its output limit, or a stop): its event has a reason.
COMPLETIONS = frozenset({"finish"})
# The actions whose argument is a page slot, not a request: evicting a cached page, which the engine does
# only under memory pressure.
SLOT_ACTIONS = frozenset({"evict"})
# The actions whose argument the engine chooses itself (the request it admits, the page it evicts): its
# command for one takes no argument.
CHOSEN_BY_ENGINE = ADMISSIONS | SLOT_ACTIONS
# A client's cancel of a live request (a termination the environment takes).
CANCELS = frozenset({"abort"})
# The termination notices for a request that is not live: the action whose argument may be an ID never
# submitted (index N, the number of requests); the spec refuses every one.
NOTICES = frozenset({"notify"})
# A blocked follower's wait running out (it goes on as a waiting request of its own).
EXPIRIES = frozenset({"expire"})
# A request's forward pass failing (non-finite logits): a termination the environment causes.
PASS_FAILURES = frozenset({"fail"})
# The roles above that no other one contains: each spec action has exactly one.
ROLES = (SUBMISSIONS, ADMISSIONS, PROMPT_PASSES, TOKEN_PASSES, CACHE_PUBLICATIONS, FOLLOWER_RELEASES, HANDOVERS,
         COMPLETIONS, SLOT_ACTIONS, CANCELS, NOTICES, EXPIRIES, PASS_FAILURES)

_ACTION_RE = re.compile(r"^\s*([a-z]+)\((\d+)\)\s*$")


@dataclass(frozen=True, order=True)
class Action:
    """One action instance: a name from :data:`ACTION_NAMES` and its argument.

    The argument is a request index (a flight is named by its current leader's index; ``notify(N)`` is
    the never-submitted ID) or, for ``evict``, a page slot.
    """

    name: str
    arg: int

    def __str__(self) -> str:
        return f"{self.name}({self.arg})"

    @property
    def is_engine(self) -> bool:
        """True for the engine's own steps, to which weak fairness applies."""
        return self.name in ENGINE_ACTIONS


def parse_action(text: str) -> Action:
    """``"admit(0)"`` -> ``Action("admit", 0)``, with a clear error for anything else."""
    m = _ACTION_RE.match(text)
    if not m or m.group(1) not in ACTION_NAMES:
        raise ValueError(f"not an action: {text!r}; expected NAME(INDEX) with NAME one of {', '.join(ACTION_NAMES)}")
    return Action(m.group(1), int(m.group(2)))
