"""The spec's guards, updates and properties printed as code that numba compiles, for large scopes.

:class:`CompiledTransitions` is the fifth reading of the spec (plain values, z3 terms, numpy columns,
Promela text, and this): it calls ``spec.guard``, ``spec.apply``, ``spec.is_live`` and each
property's ``holds`` on :class:`Code` variables, one per layout slot, exactly as the Promela export
does, and the expression layer (:mod:`flightcheck.spec.expr`) hands ``And``/``Or``/``Not``/``If``/``Sum``
over them to :data:`NUMBA`. Each operation becomes one line of straight-line Python (a temporary per
distinct subexpression), and the lines go into two functions that numba compiles:

- ``readings(keys, G, P, L, D)``: for every state of a batch (its packed key, unpacked in place),
  every action's guard into ``G``, every property into ``P``, each request's liveness into ``L``,
  and whether the state is a deadlock (a live request, no progress action enabled) into ``D``;
- ``successors(keys, G, out, rows, acts, e, err)``: the enabled (state, action) pairs, action by
  action and state by state within one (the order :meth:`BatchedTransitions.expand` produces, so
  both number every state alike), each successor packed straight from its parent's key with only
  the changed slots rewritten. A value outside its slot's range stops it with the action in ``err``;
  the numpy reading then names the slot and the values
  (:class:`~flightcheck.checks.explore.transitions.SpecRangeError`), and the explorer
  widens the slot and goes on without this reading.

Nothing here names a field, an action or a property, so a spec change reaches this reading as it
reaches the others, and the tests compare its successors and readings with the numpy reading's on
a few default scenarios and designs. numba compiles the pair once per scope (seconds: about 15 s for
the eight-request burst on this machine) and caches it under :func:`kernel_dir`; the explorer uses it
when asked (``explore_batched(..., compiled=True)``, ``flightcheck explore --engine compiled``).

For example::

    >>> from flightcheck.spec.expr import And, If, Sum
    >>> with Emitter() as em:
    ...     x, y = em.variable("x"), em.variable("y")
    ...     g = And(x == 1, True, y < x + 2)
    >>> em.lines
    ['t0 = x == 1', 't1 = x + 2', 't2 = y < t1', 't3 = t0 & t2']
    >>> str(g)
    't3'
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from flightcheck.checks.explore.packing import StateCodec


class _Local(threading.local):
    emitter: "Emitter | None" = None


_CURRENT = _Local()


class Emitter:
    """Collects the lines that compute terms, one temporary per distinct subexpression, while active
    (``with Emitter() as em: ...``)."""

    def __init__(self, prefix: str = "t") -> None:
        self.prefix = prefix
        self.lines: list[str] = []
        self._memo: dict[tuple[str, str], Code] = {}
        self._count = 0
        self._outer: Emitter | None = None

    def __enter__(self) -> "Emitter":
        self._outer, _CURRENT.emitter = _CURRENT.emitter, self
        return self

    def __exit__(self, *exc: Any) -> None:
        _CURRENT.emitter = self._outer

    def variable(self, name: str, kind: str = "i") -> "Code":
        """A name the lines may read (a slot's value, say)."""
        return Code(name, kind)

    def temp(self, text: str, kind: str) -> "Code":
        """A temporary holding ``text`` (the same text twice is the same temporary)."""
        got = self._memo.get((text, kind))
        if got is None:
            got = Code(f"{self.prefix}{self._count}", kind)
            self._count += 1
            self.lines.append(f"{got.name} = {text}")
            self._memo[(text, kind)] = got
        return got


def _emit(text: str, kind: str) -> "Code":
    em = _CURRENT.emitter
    if em is None:
        raise RuntimeError("a Code term was built outside an active Emitter")
    return em.temp(text, kind)


def as_int(x: Any) -> str:
    """``x`` as an integer expression (a boolean counts 0/1)."""
    if isinstance(x, Code):
        return f"({x.name} * 1)" if x.kind == "b" else x.name
    if isinstance(x, (bool, np.bool_)):
        return "1" if x else "0"
    if isinstance(x, (int, np.integer)):
        return str(int(x)) if x >= 0 else f"({int(x)})"
    raise TypeError(f"cannot compile {x!r} ({type(x).__name__}) as an integer")


def as_bool(x: Any) -> str:
    """``x`` as a boolean expression (an integer is true when it is not 0)."""
    if isinstance(x, Code):
        return x.name if x.kind == "b" else f"({x.name} != 0)"
    return "True" if x else "False"


class _Numba:
    """And/Or/Not/If/Sum over :class:`Code`, folding Python constants as the other readings do."""

    @staticmethod
    def And(xs: Sequence[Any]) -> Any:
        parts = []
        for x in xs:
            if isinstance(x, Code):
                parts.append(as_bool(x))
            elif not x:
                return False
        if not parts:
            return True
        return _emit(" & ".join(parts), "b") if len(parts) > 1 else _emit(parts[0], "b")

    @staticmethod
    def Or(xs: Sequence[Any]) -> Any:
        parts = []
        for x in xs:
            if isinstance(x, Code):
                parts.append(as_bool(x))
            elif x:
                return True
        if not parts:
            return False
        return _emit(" | ".join(parts), "b") if len(parts) > 1 else _emit(parts[0], "b")

    @staticmethod
    def Not(x: Any) -> Any:
        return _emit(f"not {as_bool(x)}", "b")

    @staticmethod
    def If(c: Any, a: Any, b: Any) -> Any:
        if a is b:
            return a
        both_bool = all(isinstance(v, Code) and v.kind == "b" or isinstance(v, (bool, np.bool_)) for v in (a, b))
        # Selects without branches: every branch is a block numba's passes must walk, and a spec's
        # updates hold hundreds of If's.
        cond = as_bool(c)
        if both_bool:
            return _emit(f"({cond} & {as_bool(a)}) | ((not {cond}) & {as_bool(b)})", "b")
        return _emit(f"{as_int(b)} + ({as_int(a)} - {as_int(b)}) * {cond}", "i")

    @staticmethod
    def Sum(xs: Sequence[Any]) -> Any:
        const = sum(int(x) for x in xs if not isinstance(x, Code))
        parts = [as_int(x) for x in xs if isinstance(x, Code)] + ([str(const)] if const else [])
        return _emit(" + ".join(parts), "i")


NUMBA = _Numba()


class Code:
    """A value in the generated code: a slot variable or a temporary, boolean (``"b"``) or integer."""

    __slots__ = ("name", "kind")
    __spec_terms__ = NUMBA

    def __init__(self, name: str, kind: str = "i") -> None:
        self.name, self.kind = name, kind

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Code({self.name!r}, {self.kind!r})"

    def _op(self, op: str, other: Any, kind: str, reflected: bool = False) -> "Code":
        a, b = as_int(self), as_int(other)
        return _emit(f"{b} {op} {a}" if reflected else f"{a} {op} {b}", kind)

    def __eq__(self, other: Any) -> "Code":  # type: ignore[override]
        return self._op("==", other, "b")

    def __ne__(self, other: Any) -> "Code":  # type: ignore[override]
        return self._op("!=", other, "b")

    def __lt__(self, other: Any) -> "Code":
        return self._op("<", other, "b")

    def __le__(self, other: Any) -> "Code":
        return self._op("<=", other, "b")

    def __gt__(self, other: Any) -> "Code":
        return self._op(">", other, "b")

    def __ge__(self, other: Any) -> "Code":
        return self._op(">=", other, "b")

    def __add__(self, other: Any) -> "Code":
        return self._op("+", other, "i")

    def __radd__(self, other: Any) -> "Code":
        return self._op("+", other, "i", reflected=True)

    def __sub__(self, other: Any) -> "Code":
        return self._op("-", other, "i")

    def __rsub__(self, other: Any) -> "Code":
        return self._op("-", other, "i", reflected=True)

    def __mul__(self, other: Any) -> "Code":
        return self._op("*", other, "i")

    def __rmul__(self, other: Any) -> "Code":
        return self._op("*", other, "i", reflected=True)

    def __neg__(self) -> "Code":
        return _emit(f"-{as_int(self)}", "i")

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError(f"a compiled term has no truth value ({self.name}): the spec branches on a state "
                        "value with a Python `if`; write it with If/And/Or from flightcheck.spec.expr")

    def __index__(self) -> int:
        raise TypeError(f"a compiled term cannot index a Python sequence ({self.name}); use pick()")


def _i64(x: int) -> str:
    """A 64-bit pattern as the int64 literal with the same bits (keys are read as int64)."""
    return str(x - (1 << 64) if x >= 1 << 63 else x)


def kernel_dir() -> Path:
    """Where generated kernels and numba's compiled copies of them are kept (beside the model file:
    ``$FLIGHTCHECK_CACHE``, else ``~/.cache/flightcheck``), so a scope is compiled once per machine."""
    return Path(os.environ.get("FLIGHTCHECK_CACHE", Path.home() / ".cache" / "flightcheck")) / "kernels"


class CompiledTransitions:
    """Guards, successors and readings of a spec over packed keys, compiled by numba.

    ``actions``, ``progress`` and ``reads`` are a :class:`BatchedTransitions`' (the actions in order,
    the progress actions' indices, the slots each update reads); ``properties`` are the invariants
    and ``sometimes`` properties whose values :meth:`readings` returns, in that order (rows of ``P``).
    The generated source is kept under :func:`kernel_dir`, named by its hash, and numba caches its
    machine code beside it: the first use of a scope pays the compile (seconds; about 15 s for the
    eight-request burst here), later ones load it."""

    def __init__(self, spec: Any, codec: StateCodec, actions: Sequence[Any], progress: Sequence[int],
                 properties: Sequence[Any], reads: Sequence[Sequence[int]]) -> None:
        self.spec, self.codec = spec, codec
        self.actions = tuple(actions)
        self.properties = list(properties)
        self._reads = [set(r) for r in reads]
        self.source = self._source(progress)
        t0 = time.perf_counter()
        self._readings, self._successors = _load(self.source)
        self._warm(t0)

    def _warm(self, t0: float) -> None:
        """Compile now (numba compiles on the first call), so that the time is not a batch's."""
        keys = self.codec.pack_states([self.spec.initial()])
        G = self.readings(keys)[0]
        self.successors(keys, G)
        self.compile_seconds = time.perf_counter() - t0

    # ------------------------------------------------------------------ code generation
    def _loads(self, tag: str, only: Any = None) -> list[str]:
        """Lines reading the words of state ``{tag}r`` and its slots ``{tag}s{j}`` (those in ``only``)."""
        c = self.codec
        out = [f"{tag}w{w} = keys[{w}, {tag}r]" for w in range(c.words)]
        for j in range(c.size):
            if only is None or j in only:
                lo = int(c.lo[j])
                out.append(f"{tag}s{j} = (({tag}w{c.word[j]} >> {c.shift[j]}) & {(1 << c.widths[j]) - 1})"
                           + (f" + {lo}" if lo else ""))
        return out

    def _source(self, progress: Sequence[int]) -> str:
        spec, c = self.spec, self.codec
        lines = [f"# {spec.title()}: generated by flightcheck from the spec's own code (checks/explore/compiled.py)",
                 "", "def readings(keys, G, P, L, D):", "    for r in range(keys.shape[1]):"]
        body = self._loads("")
        with Emitter() as em:
            slots = [em.variable(f"s{j}") for j in range(c.size)]
            view = spec.view(slots)
            guards = [spec.guard(slots, a) for a in self.actions]
            props = [p.holds(spec, slots) for p in self.properties]
            live = [spec.is_live(view, i) for i in range(spec.num_requests)]
        body += em.lines
        body += [f"G[{k}, r] = {as_bool(g)}" for k, g in enumerate(guards)]
        body += [f"P[{k}, r] = {as_bool(p)}" for k, p in enumerate(props)]
        body += [f"L[{i}, r] = {as_bool(v)}" for i, v in enumerate(live)]
        any_live = " | ".join(f"L[{i}, r]" for i in range(len(live))) or "False"
        stuck = " | ".join(f"G[{k}, r]" for k in progress) or "False"
        body.append(f"D[r] = ({any_live}) & (not ({stuck}))")
        lines += ["        " + b for b in body]

        # One loop per action, in action order, its states in order: BatchedTransitions.expand's order.
        # Every name in a loop is the loop's own (numba's passes slow down sharply when one name is
        # assigned in many blocks), so the count of successors so far lives in e[0] between loops.
        lines += ["", "def successors(keys, G, out, rows, acts, e, err):"]
        for k, a in enumerate(self.actions):
            if guards[k] is False:
                continue
            tag = f"a{k}_"
            with Emitter(tag) as em:
                slots = [em.variable(f"{tag}s{j}") for j in range(c.size)]
                new = spec.apply(slots, a)
            changed = [(j, v) for j, (v, old) in enumerate(zip(new, slots)) if v is not old]
            inner = self._loads(tag, self._reads[k]) + em.lines
            clear = [0] * c.words
            outside = []
            for j, v in changed:
                inner.append(f"{tag}v{j} = {as_int(v)}")
                outside.append(f"({tag}v{j} < {int(c.lo[j])}) | ({tag}v{j} > {int(c.hi[j])})")
                clear[c.word[j]] |= ((1 << c.widths[j]) - 1) << c.shift[j]
            if outside:  # one test for every changed slot, no branch per slot
                inner += [f"if {' | '.join(outside)}:", f"    err[0] = {k}", "    return -1"]
            for w in range(c.words):
                parts = [f"({tag}w{w} & {_i64(~clear[w] & ((1 << 64) - 1))})" if clear[w] else f"{tag}w{w}"]
                for j, _v in changed:
                    if c.word[j] == w:
                        lo = int(c.lo[j])
                        parts.append(f"(({tag}v{j}{f' - {lo}' if lo else ''}) << {c.shift[j]})")
                inner.append(f"out[{w}, {tag}e] = " + " | ".join(parts))
            inner += [f"rows[{tag}e] = {tag}r", f"acts[{tag}e] = {k}", f"{tag}e += 1"]
            lines += [f"    {tag}e = e[0]", f"    for {tag}r in range(keys.shape[1]):", f"        if G[{k}, {tag}r]:"]
            lines += ["            " + x for x in inner]
            lines.append(f"    e[0] = {tag}e")
        lines.append("    return 0")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ running it
    def readings(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Guards ``(actions, n)``, properties ``(properties, n)``, liveness ``(requests, n)`` and
        deadlock ``(n,)`` of the states whose keys are ``keys`` ``(words, n)``."""
        n = keys.shape[1]
        G = np.empty((len(self.actions), n), dtype=np.bool_)
        P = np.empty((len(self.properties), n), dtype=np.bool_)
        L = np.empty((self.spec.num_requests, n), dtype=np.bool_)
        D = np.empty(n, dtype=np.bool_)
        self._readings(keys.view(np.int64), G, P, L, D)
        return G, P, L, D

    def successors(self, keys: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The candidate keys ``(words, E)`` of every enabled pair, their parent rows and actions,
        grouped by action; a value outside its slot's range raises ``SpecRangeError`` (as the
        numpy reading names it: the slot and the values, for the explorer to widen)."""
        total = int(np.count_nonzero(G))
        out = np.empty((self.codec.words, total), dtype=np.int64)
        rows = np.empty(total, dtype=np.int64)
        acts = np.empty(total, dtype=np.int64)
        e, err = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        if self._successors(keys.view(np.int64), G, out, rows, acts, e, err) < 0:
            from flightcheck.checks.explore.transitions import BatchedTransitions

            k = int(err[0])
            BatchedTransitions(self.spec, self.codec).apply(self.codec.unpack(keys), k, np.flatnonzero(G[k]))
            raise AssertionError(f"{self.actions[k]} left a slot's range in the compiled reading only")
        return out.view(np.uint64), rows, acts


def _load(source: str) -> tuple[Any, Any]:
    """The two compiled functions of ``source``, from the kernel cache (written there if new)."""
    from numba import njit

    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    name = f"flightcheck_kernel_{digest}"
    try:
        folder = kernel_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.py"
        if not path.exists() or path.read_text() != source:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)  # atomic: two processes compiling one scope never see half a file
        mod_spec = importlib.util.spec_from_file_location(name, path)
        module = sys.modules.get(name)
        if module is None:
            module = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
            sys.modules[name] = module  # numba's cached code names its module, and imports it to load
        cache = True
    except OSError:  # no writable cache: compile from memory, every time
        module = types.ModuleType(name)
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
        cache = False
    return (njit(nogil=True, cache=cache)(module.readings), njit(nogil=True, cache=cache)(module.successors))
