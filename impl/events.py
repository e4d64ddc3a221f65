"""The engine's structured event log, in the spec's action vocabulary, as JSON lines.

Each event is a dict ``{"seq": n, "action": NAME, ...fields}``; NAME is one of ``ACTIONS``. The log
keeps every event in memory (or, with ``keep=N``, the last N: a long-running server must not grow
without bound), optionally appends each one to a file as it happens, and calls any registered
listeners synchronously, so that a runtime monitor can check each event against the spec
the moment it is emitted (an exception from a listener propagates to the engine's caller).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

# The spec's action vocabulary, in the spec's order (tests/conform/test_vocabulary.py holds them equal).
ACTIONS = (
    "arrive", "admit", "prefill", "publish", "release", "promote", "decode", "finish", "evict", "abort",
    "notify", "expire", "fail",
)

# Why a flight's followers were let go: a ``release`` event's ``reason``. Named apart from the release
# *policy* (``EngineConfig.release``: "after-prefill" | "on-completion"), whose two names the first two
# reasons share: the policy says when followers may go, the reason says which point let them go.
RELEASE_AFTER_PREFILL = "after-prefill"    # the leader's prefill is done and its pages published
RELEASE_ON_COMPLETION = "on-completion"    # the leader finished
RELEASE_LEADER_ABORTED = "leader-aborted"  # the leader was cancelled before the release point
RELEASE_LEADER_FAILED = "leader-failed"    # the leader's forward pass failed before it
RELEASE_REASONS = (RELEASE_AFTER_PREFILL, RELEASE_ON_COMPLETION, RELEASE_LEADER_ABORTED, RELEASE_LEADER_FAILED)

Listener = Callable[[dict[str, Any]], None]


def input_key(token_ids: Sequence[int]) -> str:
    """A short hex key of a whole input (12 hex digits of SHA-256 over the token ids)."""
    return _digest(b"input", token_ids)[:12]


def page_key(parent_key: str | None, token_ids: Sequence[int]) -> str:
    """A page's key: its parent's key chained with its own token ids (16 hex digits of SHA-256)."""
    return _digest((parent_key or "root").encode(), token_ids)[:16]


def chain_keys(token_ids: Sequence[int], num_pages: int, page_size: int) -> list[str]:
    """The chained keys of the first ``num_pages`` full pages of ``token_ids``."""
    keys: list[str] = []
    parent: str | None = None
    for i in range(num_pages):
        parent = page_key(parent, token_ids[i * page_size:(i + 1) * page_size])
        keys.append(parent)
    return keys


def _digest(prefix: bytes, token_ids: Iterable[int]) -> str:
    h = hashlib.sha256(prefix)
    h.update(b"|")
    h.update(",".join(str(int(t)) for t in token_ids).encode())
    return h.hexdigest()


class EventLog:
    """An append-only list of events with optional JSON-lines file output and listeners."""

    def __init__(self, path: str | None = None, header: dict[str, Any] | None = None, *, keep: int | None = None) -> None:
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
            raise ValueError(f"keep must be None or an integer >= 0, got {keep!r}")
        # Why a deque only when bounded: checks/ slice the full list (events[before:]) of their engines.
        self.events: list[dict[str, Any]] | deque[dict[str, Any]] = [] if keep is None else deque(maxlen=keep)
        self.num_emitted = 0  # events ever emitted: the next ``seq``, whatever ``keep`` dropped
        self._listeners: list[Listener] = []
        self._file: IO[str] | None = open(path, "w", encoding="utf-8") if path else None
        # Why a header line: a log read later (flightcheck validate) must know the policy it ran under.
        self.header = header
        self.started = time.perf_counter()  # arrivals carry ``t``, seconds since the log started
        if self._file is not None and header is not None:
            self._file.write(json.dumps(header) + "\n")
            self._file.flush()

    def add_listener(self, listener: Listener) -> None:
        """Calls ``listener(event)`` for every event emitted from now on."""
        self._listeners.append(listener)

    def emit(self, action: str, **fields: Any) -> dict[str, Any]:
        # Why assert: an action name outside the vocabulary is a bug in the engine, not bad input.
        assert action in ACTIONS, action
        event = {"seq": self.num_emitted, "action": action, **fields}
        self.num_emitted += 1
        self.events.append(event)
        if self._file is not None:
            self._file.write(json.dumps(event) + "\n")
            self._file.flush()
        for listener in self._listeners:
            listener(event)
        return event

    def of(self, action: str) -> list[dict[str, Any]]:
        """The events of one action, in order."""
        return [e for e in self.events if e["action"] == action]

    def to_jsonl(self) -> str:
        """The header line (if any) and every event, as JSON lines."""
        head = json.dumps(self.header) + "\n" if self.header is not None else ""
        return head + "".join(json.dumps(e) + "\n" for e in self.events)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
