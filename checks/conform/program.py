"""A conformance run as a program: what the client does to the engine, replayable and shrinkable.

A :class:`Program` is a :class:`Setup` (the engine's configuration and the request templates the client
may send, optionally bound to a default scenario so the run lands on its explored graph) and a list of
client operations. Operations pick requests by *selector* (a kind and a position among the live
requests of that kind, in ID order), so a program stays meaningful when others are deleted from it:

- ``("arrive", t, temperature, seed)``: template ``t`` arrives (scenario-bound: spec request ``t``);
- ``("step", n)``: the engine takes ``n`` steps;
- ``("abort", kind, k)``: cancel the ``k``-th live request of ``kind`` (leader, follower, waiting,
  running, any);
- ``("notify", "unknown", k)`` / ``("notify", "terminated", k)``: a termination notice for an ID never
  submitted, or for the ``k``-th terminated request: it must be rejected with nothing changed;
- ``("hold", kind, k)`` / ``("resume", k)``: the test barrier on a request's prefill;
- ``("expire", k)``: the ``k``-th blocked follower stops waiting;
- ``("fault", kind, k)``: the next forward pass of the ``k``-th running request of ``kind`` fails;
- ``("refuse", call, kind, k)``: a client call the engine must refuse with nothing changed: ``expire``
  of the ``k``-th live request that is not blocked (``unblocked``: waiting, prefilling or decoding), or
  ``expire``, ``hold`` or ``fault`` of the ``k``-th terminated request or of an unknown ID (see
  :data:`REFUSALS`).

Programs are plain data (JSON), so a failing run is one file that ``flightcheck conform --replay``
runs again, and the corpus of :mod:`flightcheck.checks.conform.corpus` is a list of them.

For example::

    >>> setup = Setup(config={"max_running": 2, "num_pages": 8}, templates=(Template((1,) * 20, 2, "A"),))
    >>> prog = Program(setup, (("arrive", 0, 0.0, 0), ("step", 2)))
    >>> Program.from_json(prog.to_json()) == prog
    True
    >>> prog.lines()[1:]
    ['arrive(t0, temperature 0.0, seed 0)', 'step() x2']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Op = tuple
OP_NAMES = ("arrive", "step", "abort", "notify", "hold", "resume", "expire", "fault", "refuse")
KINDS = ("leader", "follower", "waiting", "running", "any")
# The client calls a ``refuse`` operation makes, and the requests each must be refused for.
REFUSALS = {"expire": ("unblocked", "terminated", "unknown"), "hold": ("terminated", "unknown"),
            "fault": ("terminated", "unknown")}


@dataclass(frozen=True)
class Template:
    """One kind of request the client sends: its prompt's token IDs, ``max_tokens`` and a short label."""

    tokens: tuple[int, ...]
    max_tokens: int
    label: str = ""


@dataclass(frozen=True)
class Setup:
    """The engine's configuration (``EngineConfig`` fields), the templates, and the scenario it is bound to."""

    config: dict[str, Any]
    templates: tuple[Template, ...]
    scenario: str | None = None
    policy: dict[str, Any] = field(default_factory=dict)  # a bound scenario's policy changes
    # The token the model emits first (greedily) for this template's prompt is an end-of-sequence
    # token in this run, beside the model's own: the tiny random model has none and repeats one token
    # per prompt, so this is how a run makes requests finish on EOS (any temperature: it is peaked).
    eos_template: int | None = None
    # This template's requests carry a stop string: the text of twice the token the model emits first
    # for its prompt (the tiny model repeats it), so they finish on "stop" at their second output, or
    # earlier on EOS or length, or never on it, each of which the finish check reads off the outputs.
    stop_template: int | None = None

    def describe(self) -> str:
        """One line: the knobs that matter and the templates."""
        cfg = self.config
        knobs = ", ".join(f"{k} {v}" for k, v in cfg.items())
        tpl = ", ".join(f"t{n}={t.label or len(t.tokens)}/max_tokens {t.max_tokens}" for n, t in enumerate(self.templates))
        bound = f"scenario {self.scenario}; " if self.scenario else ""
        eos = f"; EOS: t{self.eos_template}'s first token" if self.eos_template is not None else ""
        stop = f"; stop string: t{self.stop_template}'s first token twice" if self.stop_template is not None else ""
        return f"engine({bound}{knobs}; templates {tpl}{eos}{stop})"


@dataclass(frozen=True)
class Program:
    """A setup and the client's operations, in order."""

    setup: Setup
    ops: tuple[Op, ...]

    def lines(self) -> list[str]:
        """The program for people: the setup, then one line per operation."""
        return [self.setup.describe()] + [describe_op(op) for op in self.ops]

    def with_ops(self, ops: list[Op] | tuple[Op, ...]) -> "Program":
        """The same setup with other operations."""
        return Program(self.setup, tuple(tuple(op) for op in ops))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (``from_json`` reads it back)."""
        s = self.setup
        setup = {"config": s.config, "scenario": s.scenario, "policy": s.policy,
                 "templates": [{"tokens": list(t.tokens), "max_tokens": t.max_tokens, "label": t.label}
                               for t in s.templates]}
        if s.eos_template is not None:
            setup["eos_template"] = s.eos_template
        if s.stop_template is not None:
            setup["stop_template"] = s.stop_template
        return {"setup": setup, "ops": [list(op) for op in self.ops]}

    @classmethod
    def from_json(cls, obj: Any) -> "Program":
        """Read a program back; raises ValueError naming the first thing that is not a program."""
        try:
            s = obj["setup"]
            templates = tuple(Template(tuple(int(x) for x in t["tokens"]), int(t["max_tokens"]), str(t.get("label", "")))
                              for t in s["templates"])
            named = {}
            for key in ("eos_template", "stop_template"):
                t = s.get(key)
                if t is not None and (isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < len(templates)):
                    raise ValueError(f"{key} {t!r} names no template (there are {len(templates)})")
                named[key] = t
            setup = Setup(dict(s["config"]), templates, s.get("scenario"), dict(s.get("policy") or {}), **named)
            ops = tuple(tuple(op) for op in obj["ops"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a conformance program: {error!r}") from None
        for n, op in enumerate(ops, 1):
            if not op or op[0] not in OP_NAMES:
                raise ValueError(f"operation {n}: {list(op)!r} is not one of {', '.join(OP_NAMES)}")
        return cls(setup, ops)

    def dumps(self) -> str:
        """The program as one JSON text."""
        return json.dumps(self.to_json())


def describe_op(op: Op) -> str:
    """One operation in words, e.g. ``abort(the 1st leader)``."""
    name = op[0]
    if name == "arrive":
        return f"arrive(t{op[1]}, temperature {op[2]}, seed {op[3]})"
    if name == "step":
        return "step()" + (f" x{op[1]}" if op[1] != 1 else "")
    if name in ("abort", "fault", "hold"):
        return f"{name}({_nth(op[2])} {op[1]})"
    if name == "notify":
        return f"notify({'an unknown ID' if op[1] == 'unknown' else _nth(op[2]) + ' terminated request'})"
    if name == "refuse":
        who = "an unknown ID" if op[2] == "unknown" else f"{_nth(op[3])} {op[2]} request"
        return f"refuse({op[1]} of {who})"
    if name in ("resume", "expire"):
        return f"{name}({_nth(op[1])} {'held request' if name == 'resume' else 'blocked follower'})"
    return repr(op)


def _nth(k: int) -> str:
    return f"the {k + 1}{'st' if k == 0 else 'nd' if k == 1 else 'rd' if k == 2 else 'th'}"
