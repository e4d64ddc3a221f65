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
  ``("fault", "queued", k)`` arms the ``k``-th live request not yet running (waiting for admission or
  blocked), so its first forward pass fails (a leader lost before it computed anything);
- ``("refuse", call, kind, k)``: a client call the engine must refuse with nothing changed: ``expire``
  of the ``k``-th live request that is not blocked (``unblocked``: waiting, prefilling or decoding), or
  ``expire``, ``hold`` or ``fault`` of the ``k``-th terminated request or of an unknown ID (see
  :data:`REFUSALS`).

Programs are plain data (JSON), so a failing run is one file that ``flightcheck conform --replay``
runs again, and the corpus of :mod:`flightcheck.checks.conform.corpus` is a list of them.

Reading one back is strict (:func:`parse_program`, :func:`read_program`): every field of the setup and
every argument of every operation is checked, with its bounds (:mod:`flightcheck.checks.inputs`: the
operations, steps and arrivals of a program are bounded too), and a
failure is an :class:`~flightcheck.checks.inputs.InputError` naming the field (``setup.templates[0].tokens[3]``,
``ops[4][1]``). An operation naming no template, or a kind or call not in its list, is an error, never
skipped; so is a program whose steps add up to more than
:data:`~flightcheck.checks.inputs.MAX_PROGRAM_STEPS`. What depends on the model (token ids below its
vocabulary, prompts within its context, the pages a template needs, the pool's memory) is checked by
:func:`check_for_model` before any engine runs.

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
import math
import os
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.inputs import (BOOL, COUNT, MAX_ENGINE_PAGES, MAX_KV_POOL_BYTES, MAX_LABEL_CHARS,
                                       MAX_PROGRAM_ARRIVALS, MAX_PROGRAM_OPS, MAX_PROGRAM_STEPS, MAX_REQUEST_TOKENS, MAX_TEMPERATURE,
                                       MAX_TEMPLATES, MIN_TEMPERATURE, POSITIVE, STR, Field, InputError, Kind,
                                       at_most, check_fields, list_of, nullable, one_of, optional, read_json_file,
                                       record, required, shown)
from flightcheck.spec.knobs import KNOBS

Op = tuple
OP_NAMES = ("arrive", "step", "abort", "notify", "hold", "resume", "expire", "fault", "refuse")
# Named facts about the operations, so that code asks them rather than compare an operation's name with a
# literal (tests/test_registries.py holds each to OP_NAMES): the operations that submit a request (the
# spec's arrival), those that pick a live request by kind and position, and the termination notices of a
# request that is not live (an unknown ID or a terminated request).
SUBMIT_OPS = frozenset({"arrive"})
PICKING_OPS = frozenset({"abort", "fault", "hold"})
NOTICE_OPS = frozenset({"notify"})
KINDS = ("leader", "follower", "waiting", "running", "any")
FAULT_KINDS = KINDS + ("queued",)  # a fault may also be armed before the request runs
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
    def from_json(cls, obj: Any, source: str = "<program>") -> "Program":
        """Read a program back (:func:`parse_program`); raises
        :class:`~flightcheck.checks.inputs.InputError` (a ValueError) naming the first field that is wrong."""
        return parse_program(obj, source)

    def dumps(self) -> str:
        """The program as one JSON text."""
        return json.dumps(self.to_json())


def describe_op(op: Op) -> str:
    """One operation in words, e.g. ``abort(the 1st leader)``."""
    name = op[0]
    if name in SUBMIT_OPS:
        return f"arrive(t{op[1]}, temperature {op[2]}, seed {op[3]})"
    if name == "step":
        return "step()" + (f" x{op[1]}" if op[1] != 1 else "")
    if name in PICKING_OPS:
        return f"{name}({_nth(op[2])} {op[1]})"
    if name in NOTICE_OPS:
        return f"notify({'an unknown ID' if op[1] == 'unknown' else _nth(op[2]) + ' terminated request'})"
    if name == "refuse":
        who = "an unknown ID" if op[2] == "unknown" else f"{_nth(op[3])} {op[2]} request"
        return f"refuse({op[1]} of {who})"
    if name in ("resume", "expire"):
        return f"{name}({_nth(op[1])} {'held request' if name == 'resume' else 'blocked follower'})"
    return repr(op)


def _nth(k: int) -> str:
    return f"the {k + 1}{'st' if k == 0 else 'nd' if k == 1 else 'rd' if k == 2 else 'th'}"


# --- reading a program back, strictly ---------------------------------------------------------------------
def _engine_config_fields() -> dict[str, Field]:
    """A program's engine options: each knob's engine option (spec/knobs.py), then the engine's own."""
    pages = at_most(POSITIVE, MAX_ENGINE_PAGES, "MAX_ENGINE_PAGES")
    kinds = {str: lambda k: one_of(*k.choices), bool: lambda k: BOOL, int: lambda k: pages}
    return {**{k.engine: optional(kinds[k.kind](k)) for k in KNOBS},
            "num_pages": optional(pages),
            "max_context": optional(nullable(at_most(POSITIVE, MAX_REQUEST_TOKENS, "MAX_REQUEST_TOKENS"))),
            "follower_wait_bound": optional(nullable(POSITIVE)), "seed": optional(COUNT)}


def _text(limit: int) -> Kind:
    """A string of at most ``limit`` characters."""
    return Kind("a string", lambda v: isinstance(v, str),
                lambda v: None if len(v) <= limit else ("", f"must be at most {limit} characters long, got "
                                                            f"{len(v):,}"))


def _sized(kind: Kind, low: int, high: int, what: str) -> Kind:
    """``kind`` (an array) holding ``low`` to ``high`` items."""
    def inner(v: list) -> tuple[str, str] | None:
        if not low <= len(v) <= high:
            return "", f"must hold {low} to {high:,} {what}, got {len(v):,}"
        return kind.inner(v) if kind.inner is not None else None
    return Kind(kind.expected, kind.test, inner)


_TEMPLATE = record({"tokens": required(_sized(list_of(COUNT), 1, MAX_REQUEST_TOKENS, "token ids")),
                    "max_tokens": required(at_most(POSITIVE, MAX_REQUEST_TOKENS, "MAX_REQUEST_TOKENS")),
                    "label": optional(_text(MAX_LABEL_CHARS))}, closed=True)


def _temperature_problem(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        return f"must be a finite number, got {shown(v)}"
    if v != 0 and not MIN_TEMPERATURE <= v <= MAX_TEMPERATURE:
        return f"must be 0 (greedy) or from {MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g}, got {shown(v)}"
    return None


TEMPERATURE = Kind(f"0 or a number from {MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g}",
                   lambda v: _temperature_problem(v) is None)
STEPS = at_most(POSITIVE, MAX_PROGRAM_STEPS, "MAX_PROGRAM_STEPS")
# Each operation's arguments after its name: (what the argument is, its kind); the template of
# ``arrive`` is checked against the setup's templates, the kind of ``refuse`` against its call.
OP_ARGS: dict[str, tuple[tuple[str, Kind], ...]] = {
    "arrive": (("template", COUNT), ("temperature", TEMPERATURE), ("seed", COUNT)),
    "step": (("number of steps", STEPS),),
    "abort": (("kind", one_of(*KINDS)), ("position", COUNT)),
    "notify": (("kind", one_of("unknown", "terminated")), ("position", COUNT)),
    "hold": (("kind", one_of(*KINDS)), ("position", COUNT)),
    "resume": (("position", COUNT),),
    "expire": (("position", COUNT),),
    "fault": (("kind", one_of(*FAULT_KINDS)), ("position", COUNT)),
    "refuse": (("call", one_of(*REFUSALS)), ("kind", STR), ("position", COUNT)),
}


def _scenario_kind() -> Kind:
    from flightcheck.spec.scenario import SCENARIOS

    names = list(SCENARIOS)
    return Kind(f"null or a scenario's name ({', '.join(names[:4])} ... {len(names)} in all)",
                lambda v: v is None or (isinstance(v, str) and v in SCENARIOS))


def parse_program(obj: Any, source: str = "<program>", line_number: int | None = None) -> Program:
    """A :class:`Program` from its JSON form (:meth:`Program.to_json`), every field checked.

    Raises :class:`~flightcheck.checks.inputs.InputError` naming ``source``, the line (when known) and
    the field: ``setup.config.num_pages``, ``setup.templates[1].tokens[0]``, ``ops[3][1]`` ...

    For example::

        >>> try:
        ...     parse_program({"setup": {"config": {}, "templates": [{"tokens": [1], "max_tokens": 1}]},
        ...                    "ops": [["abort", "bogus", 0]]}, "p.json")
        ... except InputError as error:
        ...     print(error)
        p.json, field 'ops[0][1]': the kind must be one of leader, follower, waiting, running, any, got 'bogus'
    """
    from flightcheck.checks.conform.schema import POLICY

    def fail(where: str | None, message: str) -> InputError:
        return InputError(source, line_number, where, message)

    top = {"setup": required(record({}, closed=False)), "ops": required(Kind("an array", lambda v: isinstance(v, list))),
           "trace": optional(STR)}
    setup_fields = {"config": required(record(_engine_config_fields(), closed=True)),
                    "templates": required(_sized(list_of(_TEMPLATE), 1, MAX_TEMPLATES, "templates")),
                    "scenario": optional(_scenario_kind()), "policy": optional(nullable(POLICY)),
                    "eos_template": optional(nullable(COUNT)), "stop_template": optional(nullable(COUNT))}
    if not isinstance(obj, dict):
        raise fail(None, f"expected a conformance program (a JSON object with setup and ops), got {shown(obj)}")
    found = check_fields(obj, top, closed=True)
    if found is None:
        found = check_fields(obj["setup"], setup_fields, closed=True)
        found = None if found is None else (f"setup.{found[0]}", found[1])
    if found is not None:
        raise fail(*found)
    s = obj["setup"]
    templates = tuple(Template(tuple(t["tokens"]), t["max_tokens"], t.get("label", "")) for t in s["templates"])
    for key in ("eos_template", "stop_template"):
        if s.get(key) is not None and s[key] >= len(templates):
            raise fail(f"setup.{key}", f"the {key} {s[key]} names no template (there are {len(templates)})")
    policy = dict(s.get("policy") or {})
    config = dict(s["config"])
    try:
        from flightcheck.impl.config import EngineConfig

        EngineConfig(**config)
    except (TypeError, ValueError) as error:
        raise fail("setup.config", f"not an engine configuration: {error}") from None
    if s.get("scenario") is None and policy:
        raise fail("setup.policy", "applies only to a program bound to a scenario (setup.scenario is null)")
    if s.get("scenario") is not None:
        from flightcheck.spec.scenario import SCENARIOS

        try:
            SCENARIOS[s["scenario"]].with_policy(**policy)
        except (TypeError, ValueError) as error:
            raise fail("setup.policy", f"not a policy of scenario {s['scenario']}: {error}") from None
    ops = obj["ops"]
    if len(ops) > MAX_PROGRAM_OPS:
        raise fail("ops", f"holds {len(ops):,} operations, more than {MAX_PROGRAM_OPS:,} (MAX_PROGRAM_OPS)")
    steps = arrivals = 0
    for n, op in enumerate(ops):
        _check_op(op, n, len(templates), fail)
        if op[0] == "step":
            steps += op[1]
            if steps > MAX_PROGRAM_STEPS:
                raise fail(f"ops[{n}][1]", f"the program's steps add up to more than {MAX_PROGRAM_STEPS:,} "
                                           "(MAX_PROGRAM_STEPS)")
        elif op[0] in SUBMIT_OPS:
            arrivals += 1
            if arrivals > MAX_PROGRAM_ARRIVALS:
                raise fail(f"ops[{n}]", f"the program has more than {MAX_PROGRAM_ARRIVALS} arrivals "
                                        "(MAX_PROGRAM_ARRIVALS)")
    setup = Setup(config, templates, s.get("scenario"), policy, s.get("eos_template"), s.get("stop_template"))
    return Program(setup, tuple(tuple(op) for op in ops))


def _check_op(op: Any, n: int, num_templates: int, fail: Any) -> None:
    """Raise (``fail(field, message)``) unless ``op`` is an operation of :data:`OP_ARGS` with its arguments."""
    where = f"ops[{n}]"
    if not isinstance(op, (list, tuple)) or not op or not isinstance(op[0], str) or op[0] not in OP_ARGS:
        head = op[0] if isinstance(op, (list, tuple)) and op else op
        raise fail(where, f"must be an array [NAME, ...] whose NAME is one of {', '.join(OP_NAMES)}, got {shown(head)}")
    args = OP_ARGS[op[0]]
    if len(op) != len(args) + 1:
        raise fail(where, f"{op[0]} takes {len(args)} argument{'s' if len(args) != 1 else ''} "
                          f"({', '.join(a for a, _ in args)}), got {len(op) - 1}: {shown(op)}")
    for k, ((what, kind), value) in enumerate(zip(args, op[1:]), 1):
        found = kind.problem(value)
        if found is None and op[0] in SUBMIT_OPS and what == "template" and value >= num_templates:
            found = "", f"must name one of the setup's {num_templates} templates (0 to {num_templates - 1}), got {value}"
        if found is None and op[0] == "refuse" and what == "kind" and value not in REFUSALS[op[1]]:
            found = "", f"must be one of {', '.join(REFUSALS[op[1]])} for a refused {op[1]}, got {shown(value)}"
        if found is not None:
            raise fail(f"{where}[{k}]", f"the {what} {found[1]}")


def read_program(path: str | os.PathLike[str]) -> Program:
    """A saved program (``conform --replay FILE``): the file read by the strict whole-file reader, then
    :func:`parse_program`. Raises :class:`~flightcheck.checks.inputs.InputError` naming the file and the field."""
    obj = read_json_file(path, "a conformance program (JSON)")
    return parse_program(obj, str(path))


def model_limits(model: str) -> tuple[int, int, int]:
    """``(vocabulary, context, bytes of one KV page)`` of the conformance model ``model`` (loaded once)."""
    from flightcheck.checks.conform.engines import load_model
    from flightcheck.impl.pages import PAGE_SIZE

    net, _eos, vocab = load_model(model)
    args = net.args
    page_bytes = 2 * args.num_hidden_layers * args.num_key_value_heads * args.head_dim * PAGE_SIZE * 4  # float32 K and V
    return vocab, args.max_position_embeddings, page_bytes


def check_for_model(program: Program, source: str, *, vocab: int, context: int, page_bytes: int) -> None:
    """What depends on the model, checked before any engine runs (each an :class:`InputError` naming the
    field, so that a program the engine would refuse is bad input, never an engine departing from the
    spec): token ids below ``vocab``; prompts within the ``context`` (cut by ``max_context``); each
    template's KV pages (prompt and ``max_tokens - 1`` positions) within ``num_pages``; the pool within
    :data:`~flightcheck.checks.inputs.MAX_KV_POOL_BYTES`; a scenario-bound program's templates shaped
    as the scenario's requests."""
    from flightcheck.impl.config import EngineConfig
    from flightcheck.impl.pages import PAGE_SIZE

    config = EngineConfig(**program.setup.config)
    limit = min(config.max_context or context, context)
    if config.num_pages * page_bytes > MAX_KV_POOL_BYTES:
        raise InputError(source, None, "setup.config.num_pages", f"{config.num_pages:,} pages of "
                         f"{page_bytes:,} bytes are more than the {MAX_KV_POOL_BYTES >> 30} GiB a program's KV pool "
                         f"may take (MAX_KV_POOL_BYTES): at most {MAX_KV_POOL_BYTES // page_bytes:,} pages")
    for t, tpl in enumerate(program.setup.templates):
        where = f"setup.templates[{t}]"
        for k, token in enumerate(tpl.tokens):
            if token >= vocab:
                raise InputError(source, None, f"{where}.tokens[{k}]", f"must be a token id below {vocab:,} (the "
                                 f"model's vocabulary), got {token}")
        if len(tpl.tokens) > limit:
            raise InputError(source, None, f"{where}.tokens", f"the prompt has {len(tpl.tokens):,} tokens, more "
                             f"than the context of {limit:,}")
        need = -(-min(len(tpl.tokens) + tpl.max_tokens - 1, limit) // PAGE_SIZE)
        if need > config.num_pages:
            raise InputError(source, None, where, f"needs {need} KV pages ({len(tpl.tokens)} prompt tokens and "
                             f"max_tokens {tpl.max_tokens}), but setup.config.num_pages is {config.num_pages}")
    if program.setup.scenario is not None:
        _check_scenario_templates(program.setup, source)


def _check_scenario_templates(setup: Setup, source: str) -> None:
    """A scenario-bound setup's template ``t`` is the scenario's request ``t``: as many templates as
    requests, each with the request's pages and tail, a decode bound within the request's, one prompt
    per class and the pages the classes share as the scenario's prompt tree says."""
    from flightcheck.checks.conform.prompts import scenario_tokens
    from flightcheck.impl.pages import PAGE_SIZE
    from flightcheck.spec.scenario import SCENARIOS

    scn = SCENARIOS[setup.scenario]
    if len(setup.templates) != scn.num_requests:
        raise InputError(source, None, "setup.templates", f"scenario {scn.name} has {scn.num_requests} requests, "
                         f"one template each; got {len(setup.templates)} templates")
    prompts: dict[int, tuple[int, ...]] = {}
    for t, (tpl, r) in enumerate(zip(setup.templates, scn.requests)):
        where = f"setup.templates[{t}]"
        shape = divmod(len(tpl.tokens), PAGE_SIZE)
        if (shape[0], shape[1] != 0) != (r.num_pages, r.has_tail) or tpl.max_tokens - 1 > r.num_decode:
            raise InputError(source, None, where, f"is not request r{t} of scenario {scn.name}: "
                             f"{len(tpl.tokens)} tokens and max_tokens {tpl.max_tokens}, where r{t} has "
                             f"{r.num_pages} full pages{' and a tail' if r.has_tail else ''} and up to "
                             f"{r.num_decode} decode steps")
        if prompts.setdefault(r.cls, tpl.tokens) != tpl.tokens:
            raise InputError(source, None, f"{where}.tokens", f"request r{t} is of the class of an earlier "
                             "template in the scenario, whose prompt is another")
    canonical = {c: tuple(v) for c, v in scenario_tokens(scn).items()}

    def shared(a: tuple[int, ...], b: tuple[int, ...]) -> int:
        n = 0
        while (n + 1) * PAGE_SIZE <= min(len(a), len(b)) and a[n * PAGE_SIZE:(n + 1) * PAGE_SIZE] == \
                b[n * PAGE_SIZE:(n + 1) * PAGE_SIZE]:
            n += 1
        return n

    classes = list(prompts)
    for x, c in enumerate(classes):
        for d in classes[x + 1:]:
            want, got = shared(canonical[c], canonical[d]), shared(prompts[c], prompts[d])
            if want != got:
                t = next(i for i, r in enumerate(scn.requests) if r.cls == d)
                raise InputError(source, None, f"setup.templates[{t}].tokens", f"shares {got} full pages with the "
                                 f"prompt of class {c}, where scenario {scn.name}'s prompt tree has {want}")
