"""Which lifelines a spec action's messages run between, in a counterexample's sequence diagram.

The seed draws the protocol as a sequence diagram of the scheduler, the prefix cache, the leader and the
followers. A path of the spec is drawn the same way: one lifeline per request (``r0`` .. ``rN``), the
scheduler, the coordinator, the prefix cache, and the page pool where the scenario models memory. Each
action of :data:`~flightcheck.spec.actions.ACTION_NAMES` maps to one or more :class:`Message` in
:data:`ACTION_MESSAGES`; ``REQUEST`` stands for the request the action names. A test holds the table
and the vocabulary equal, so an action added to the spec fails until it is given its lifelines here.

For example::

    >>> [(m.source, m.target) for m in messages_for("publish", has_pool=False)]
    [('request', 'cache')]
    >>> [m.target for m in messages_for("admit", has_pool=True)]
    ['request', 'pool', 'cache']
"""

from __future__ import annotations

from dataclasses import dataclass

REQUEST, SCHEDULER, COORDINATOR, CACHE, POOL = "request", "scheduler", "coordinator", "cache", "pool"

# The fixed lifelines, left to right after the requests, with the name drawn in their header.
SERVICES: tuple[tuple[str, str], ...] = (
    (SCHEDULER, "scheduler"), (COORDINATOR, "coordinator"), (CACHE, "prefix cache"), (POOL, "page pool"),
)


@dataclass(frozen=True)
class Message:
    """One arrow of an action: from ``source`` to ``target`` (the same for a self-message), with its
    verb; ``pool_only`` arrows are drawn only where the scenario has a page pool, ``no_pool`` ones only
    where it has none."""

    source: str
    target: str
    verb: str
    pool_only: bool = False
    no_pool: bool = False


ACTION_MESSAGES: dict[str, tuple[Message, ...]] = {
    "arrive": (Message(REQUEST, COORDINATOR, "arrives"),),
    "admit": (Message(SCHEDULER, REQUEST, "admit"),
              Message(SCHEDULER, POOL, "reserve its pages", pool_only=True),
              Message(REQUEST, CACHE, "look up the prefix")),
    "prefill": (Message(REQUEST, REQUEST, "prefill"),),
    "publish": (Message(REQUEST, CACHE, "publish computed pages"),),
    "release": (Message(COORDINATOR, SCHEDULER, "release the flight"),),
    "promote": (Message(COORDINATOR, REQUEST, "promote to leader"),),
    "decode": (Message(REQUEST, REQUEST, "decode a token"),),
    "finish": (Message(REQUEST, COORDINATOR, "finished: terminate"),),
    "evict": (Message(SCHEDULER, CACHE, "evict", no_pool=True),
              Message(POOL, CACHE, "evict under memory pressure", pool_only=True)),
    "abort": (Message(REQUEST, COORDINATOR, "client cancels: terminate"),),
    "notify": (Message(REQUEST, COORDINATOR, "termination notice"),),
    "expire": (Message(REQUEST, COORDINATOR, "wait runs out"),),
    "fail": (Message(REQUEST, COORDINATOR, "forward pass failed: terminate"),),
}


def messages_for(action_name: str, *, has_pool: bool) -> list[Message]:
    """The arrows of an action under a scenario with or without a page pool (KeyError naming the
    missing action when the table lacks it)."""
    try:
        table = ACTION_MESSAGES[action_name]
    except KeyError:
        raise KeyError(f"action {action_name!r} has no lifelines in checks/report/lifelines.py "
                       "ACTION_MESSAGES; add its messages there") from None
    return [m for m in table if (has_pool or not m.pool_only) and not (has_pool and m.no_pool)]


def acts_on_request(action_name: str) -> bool:
    """Whether the action's argument names a request (``evict`` names a page slot)."""
    return any(REQUEST in (m.source, m.target) for m in ACTION_MESSAGES[action_name])
