"""Server programs: an engine configuration and a script of HTTP clients, drawn from a seed, saved as JSON.

A program is everything a run needs, so the same file runs the same clients again: the engine's config,
and for each client when it starts (milliseconds from the program's start), what it sends (a streaming
or a whole completion over token ids, a malformed body), and how it behaves (reads to the end,
disconnects after k chunks, after the response's headers or before any response, half-closes its
socket, stops reading for a while). Each well-formed request carries its client's tag as its ``seed``
(``TAG_BASE + index``), so the run can find the engine request a client's request became, even for a
client that went away before the reply named it.

:func:`random_program` guarantees every program a burst of identical prompts (some of whose clients go
away), a prompt sharing a document with others, a stream that disconnects early with a ``max_tokens``
far beyond what it reads (a missed abort shows as a request that runs on), a disconnect after the
headers, a whole reply and a malformed body; half the time a rush of clients on one prompt that mostly
leave at once (aborts of blocked followers and of requests waiting for admission); then a few extra
clients of any kind.

For example::

    >>> a, b = random_program(3), random_program(3)
    >>> a == b, Program.from_json(a.to_json()) == a
    (True, True)
    >>> {"read", "disconnect-after"} <= {c.behaviour for c in a.clients}
    True
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from flightcheck.impl.pages import PAGE_SIZE as PAGE
from flightcheck.spec.scenario import LEADER_LOSSES, PUBLICATIONS, RELEASES

# A well-formed request's ``seed`` is its client's tag: the run finds the engine request by it.
TAG_BASE = 1000
KINDS = ("stream", "whole", "malformed")
BEHAVIOURS = ("read", "disconnect-after", "disconnect-after-headers", "disconnect-before-response", "half-close",
              "pause")
VOCAB = 256  # the tiny model's vocabulary

# Bodies a client may send that are not a valid completion request (each must get a 4xx, and nothing may
# reach the engine). Text, not JSON: some are not JSON at all.
MALFORMED = (
    '{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 4',
    "not json at all",
    '{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": "ten"}',
    '{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 4, "bogus": 1}',
    '{"model": "tiny", "prompt": [], "max_tokens": 4}',
    '{"model": "tiny", "prompt": [1, 2, 99999], "max_tokens": 4}',
    '[1, 2, 3]',
    '{"model": "no-such-model", "prompt": [1, 2, 3], "max_tokens": 4}',
    '{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 4, "temperature": true}',
    '{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 0}',
    '{"model": "tiny", "prompt": "text needs a tokenizer", "max_tokens": 4}',
    '{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 4, "n": 2}',
)


class ProgramError(ValueError):
    """A program file that is not a server program (names the file and what is wrong)."""


@dataclass(frozen=True)
class Client:
    """One HTTP client of a program.

    ``kind``: "stream" (server-sent events), "whole" or "malformed" (``body`` sent as it is; with
    ``truncate`` only its first bytes, under a ``Content-Length`` that promises the whole, then a close).
    ``behaviour``: "read" (to the end), "disconnect-after" (close after ``chunks`` events),
    "disconnect-after-headers", "disconnect-before-response" (close ``delay_ms`` after sending),
    "half-close" (shut the sending side after the request, keep reading), "pause" (stop reading for
    ``pause_ms`` after ``chunks`` events, or before reading anything when ``chunks`` is 0, then read to the end).
    """

    index: int
    at_ms: int
    kind: str
    behaviour: str = "read"
    prompt: tuple[int, ...] = ()
    max_tokens: int = 8
    temperature: float = 0.0
    include_usage: bool = False
    chunks: int = 0
    pause_ms: int = 0
    delay_ms: int = 0
    body: str | None = None
    truncate: bool = False
    group: str = ""  # what the prompt is ("burst A", "doc+q2", "solo"): for people reading a failure

    @property
    def tag(self) -> int:
        """The ``seed`` this client's request carries (how the run finds its engine request)."""
        return TAG_BASE + self.index

    @property
    def is_greedy(self) -> bool:
        """Whether the request is greedy (its output is fixed by its prompt)."""
        return self.temperature == 0.0

    @property
    def goes_away(self) -> bool:
        """Whether the client leaves before reading its whole reply (its request must be aborted)."""
        return self.behaviour in ("disconnect-after", "disconnect-after-headers", "disconnect-before-response",
                                  "half-close")

    def request_body(self) -> bytes:
        """The bytes of the request's body."""
        if self.kind == "malformed":
            return (self.body or "").encode()
        body: dict[str, Any] = {"model": "tiny", "prompt": list(self.prompt), "max_tokens": self.max_tokens,
                                "temperature": self.temperature, "seed": self.tag}
        if self.kind == "stream":
            body["stream"] = True
            if self.include_usage:
                body["stream_options"] = {"include_usage": True}
        return json.dumps(body).encode()

    def describe(self) -> str:
        """One line for a person: ``client 3 (stream, disconnects after 2 chunk(s), burst A, ...)``."""
        if self.kind == "malformed":
            what = f"malformed body {self.body!r:.60}" + (" (truncated, then closed)" if self.truncate else "")
            return f"client {self.index} ({what}, at {self.at_ms} ms)"
        how = {"read": "reads to the end", "disconnect-after": f"disconnects after {self.chunks} chunk(s)",
               "disconnect-after-headers": "disconnects after the headers",
               "disconnect-before-response": f"disconnects {self.delay_ms} ms after sending",
               "half-close": "half-closes after sending",
               "pause": f"stops reading for {self.pause_ms} ms after {self.chunks} chunk(s)" if self.chunks
               else f"reads nothing for {self.pause_ms} ms"}[self.behaviour]
        sampled = "" if self.is_greedy else f", temperature {self.temperature}"
        return (f"client {self.index} ({self.kind}, {how}, {self.group}, {len(self.prompt)} prompt tokens, "
                f"max_tokens {self.max_tokens}{sampled}, at {self.at_ms} ms)")


@dataclass(frozen=True)
class Program:
    """A seed's engine config and clients; ``to_json``/``from_json`` round-trip it exactly."""

    seed: int
    config: dict[str, Any]
    clients: tuple[Client, ...] = field(default_factory=tuple)
    origin: str = ""  # how it came to be: "seed 3", "seed 3, shrunk from 9 clients"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"format": "flightcheck server program", "seed": self.seed, "origin": self.origin,
                "config": dict(self.config),
                "clients": [{**asdict(c), "prompt": list(c.prompt)} for c in self.clients]}

    @classmethod
    def from_json(cls, obj: Any, source: str = "program") -> "Program":
        """The program of :meth:`to_json`'s form; :class:`ProgramError` naming ``source`` otherwise."""
        if not isinstance(obj, dict) or obj.get("format") != "flightcheck server program":
            raise ProgramError(f"{source}: not a server program (no \"format\": \"flightcheck server program\")")
        names = {f.name for f in fields(Client)}
        clients = []
        for i, c in enumerate(obj.get("clients") or []):
            if not isinstance(c, dict) or not {"index", "at_ms", "kind"} <= set(c) or set(c) - names:
                raise ProgramError(f"{source}: client {i} is not a client object (fields {sorted(names)})")
            if c["kind"] not in KINDS or c.get("behaviour", "read") not in BEHAVIOURS:
                raise ProgramError(f"{source}: client {i} has kind {c['kind']!r} / behaviour {c.get('behaviour')!r}; "
                                   f"kinds are {', '.join(KINDS)}, behaviours {', '.join(BEHAVIOURS)}")
            clients.append(Client(**{**c, "prompt": tuple(c.get("prompt") or ())}))
        if not isinstance(obj.get("seed"), int) or not isinstance(obj.get("config"), dict):
            raise ProgramError(f"{source}: needs an integer \"seed\" and a \"config\" object")
        return cls(obj["seed"], dict(obj["config"]), tuple(clients), str(obj.get("origin", "")))

    def save(self, path: Path) -> Path:
        """Writes the program as JSON to ``path``; returns it."""
        path = Path(path)
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Path) -> "Program":
        """The program saved at ``path`` (:class:`ProgramError` when it is not one)."""
        try:
            obj = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ProgramError(f"{path}: cannot be read as a server program: {error}") from None
        return cls.from_json(obj, str(path))

    def without(self, index: int) -> "Program":
        """The program with client ``index`` removed (the others keep their index, hence their tag)."""
        return Program(self.seed, self.config, tuple(c for c in self.clients if c.index != index), self.origin)

    def summary(self) -> str:
        """``9 clients (5 stream, 2 whole, 2 malformed; 3 go away) under single-flight after-prefill ...``."""
        kinds = {k: sum(c.kind == k for c in self.clients) for k in KINDS}
        away = sum(c.kind != "malformed" and c.goes_away for c in self.clients)
        cfg = self.config
        return (f"{len(self.clients)} clients ({', '.join(f'{n} {k}' for k, n in kinds.items() if n)}; {away} go away) "
                f"under {cfg['coordination']} {cfg['release']} {cfg['publication']} {cfg['leader_loss']}, "
                f"max_running {cfg['max_running']}, {cfg['num_pages']} pages")


def _tokens(rng: random.Random, n: int) -> tuple[int, ...]:
    return tuple(rng.randrange(VOCAB) for _ in range(n))


def random_program(seed: int) -> Program:
    """The program of ``seed`` (the same seed, the same program)."""
    rng = random.Random(seed)
    config = {
        "coordination": rng.choice(("single-flight", "single-flight", "prefix")),
        "release": rng.choice(RELEASES), "publication": rng.choice(PUBLICATIONS),
        "leader_loss": rng.choice(LEADER_LOSSES), "prefix_caching": True,
        "max_running": rng.choice((1, 2, 3, 4, 6)), "prefill_chunk_pages": rng.choice((1, 2, 32)),
        "num_pages": rng.choice((48, 96, 256)), "min_shared_pages": 1,
    }
    doc = _tokens(rng, rng.randint(2, 4) * PAGE + rng.randint(0, PAGE - 1))  # whole pages and a tail
    burst = _tokens(rng, rng.randint(20, 70))
    clients: list[Client] = []

    def add(**kw: Any) -> None:
        clients.append(Client(index=len(clients), **kw))

    def long_tokens() -> int:  # far beyond what a client that goes away reads: a missed abort runs on
        return rng.randint(150, 200)

    # A burst of identical prompts at one instant: readers and at least one that goes away.
    at = rng.randint(0, 150)
    size = rng.randint(3, 4)
    leaving = rng.sample(range(size), 2)  # two: when a flight forms, one of them is a follower
    for k in range(size):
        if k in leaving:
            add(at_ms=at, kind="stream", behaviour="disconnect-after", prompt=burst, max_tokens=long_tokens(),
                chunks=rng.randint(1, 3), group="burst A")
        else:
            add(at_ms=at, kind="stream", prompt=burst, max_tokens=rng.randint(4, 24),
                include_usage=rng.random() < 0.5, group="burst A")
    # Prompts that share a document (prefix sharing), one of which goes away after its headers.
    for q in range(rng.randint(1, 2)):
        add(at_ms=rng.randint(0, 400), kind=rng.choice(("stream", "whole")),
            prompt=doc + _tokens(rng, rng.randint(3, 20)), max_tokens=rng.randint(4, 24), group=f"doc+q{q}")
    add(at_ms=rng.randint(0, 400), kind="stream", behaviour="disconnect-after-headers",
        prompt=doc + _tokens(rng, rng.randint(3, 20)), max_tokens=long_tokens(), group="doc+qx")
    add(at_ms=rng.randint(0, 400), kind="stream", behaviour="disconnect-after", prompt=_tokens(rng, rng.randint(5, 40)),
        max_tokens=long_tokens(), chunks=rng.randint(1, 3), group="solo")
    add(at_ms=rng.randint(0, 400), kind="whole", prompt=_tokens(rng, rng.randint(5, 40)), max_tokens=rng.randint(4, 16),
        group="solo")
    add(at_ms=rng.randint(0, 400), kind="malformed", body=rng.choice(MALFORMED), group="malformed")
    # Half the time, a rush on one prompt of clients that mostly leave at once: their aborts land while
    # they wait for admission or block on the flight's leader.
    if rng.random() < 0.5:
        rush, at = _tokens(rng, rng.randint(30, 70)), rng.randint(0, 300)
        for _ in range(rng.randint(3, 5)):
            how = rng.choice(("disconnect-before-response", "disconnect-after-headers", "disconnect-after", "read"))
            add(at_ms=at + rng.randint(0, 20), kind=rng.choice(("stream", "whole")) if how in (
                "disconnect-before-response", "read") else "stream", behaviour=how, prompt=rush,
                max_tokens=long_tokens() if how != "read" else rng.randint(4, 16), chunks=1,
                delay_ms=rng.choice((0, 1, 5, 20)), group="rush B")
    # A few more of anything.
    for _ in range(rng.randint(1, 4)):
        choice = rng.choice(("read", "pause", "away-whole", "away-stream", "half-close", "sampled", "burst-late",
                             "truncated", "malformed"))
        prompt, group = (burst, "burst A") if rng.random() < 0.3 else (doc + _tokens(rng, rng.randint(1, 8)), "doc+qy")
        at = rng.randint(0, 500)
        if choice == "read":
            add(at_ms=at, kind="stream", prompt=prompt, max_tokens=rng.randint(4, 32), include_usage=True, group=group)
        elif choice == "pause":
            add(at_ms=at, kind="stream", behaviour="pause", prompt=prompt, max_tokens=rng.randint(8, 40),
                chunks=rng.randint(0, 3), pause_ms=rng.randint(100, 400), group=group)
        elif choice == "away-whole":
            add(at_ms=at, kind="whole", behaviour="disconnect-before-response", prompt=prompt, max_tokens=long_tokens(),
                delay_ms=rng.randint(20, 120), group=group)
        elif choice == "away-stream":
            add(at_ms=at, kind="stream", behaviour="disconnect-before-response", prompt=prompt,
                max_tokens=long_tokens(), delay_ms=rng.randint(0, 60), group=group)
        elif choice == "half-close":
            add(at_ms=at, kind="stream", behaviour="half-close", prompt=prompt, max_tokens=long_tokens(), group=group)
        elif choice == "sampled":
            add(at_ms=at, kind=rng.choice(("stream", "whole")), prompt=prompt, max_tokens=rng.randint(4, 24),
                temperature=0.8, group=group)
        elif choice == "burst-late":  # the burst's prompt again, after the burst (a cache hit or a late follower)
            add(at_ms=at, kind="stream", prompt=burst, max_tokens=rng.randint(4, 24), group="burst A")
        elif choice == "truncated":
            add(at_ms=at, kind="malformed", body='{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 4}',
                truncate=True, group="malformed")
        else:
            add(at_ms=at, kind="malformed", body=rng.choice(MALFORMED), group="malformed")
    return Program(seed, config, tuple(clients), f"seed {seed}")


__all__ = ["BEHAVIOURS", "Client", "KINDS", "MALFORMED", "Program", "ProgramError", "TAG_BASE", "random_program"]
