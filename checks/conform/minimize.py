"""Shrinking a failing program to the operations the failure needs (delta debugging, deterministic).

:func:`minimize` removes chunks of operations (halves, quarters, ... single operations), then cuts
multi-step operations to single steps and moves selectors to the first candidate, keeping every change
under which the program still fails *the same way*: the same first property at stake, or the same kind
of diagnosis when none is named. The result is what a person reads: usually a handful of rules.

For example::

    >>> from flightcheck.checks.conform.program import Program, Setup, Template
    >>> setup = Setup({"max_running": 2, "num_pages": 8}, (Template((3,) * 40, 2, "A"),))
    >>> prog = Program(setup, (("step", 3), ("arrive", 0, 0.0, 0), ("notify", "unknown", 1), ("step", 2)))
    >>> fails = lambda p: any(op[0] in NOTICE_OPS for op in p.ops)   # a stand-in for "still fails"
    >>> minimize(prog, fails).ops
    (('notify', 'unknown', 0),)
"""

from __future__ import annotations

import time
from typing import Callable

from flightcheck.checks.conform.diagnosis import Diagnosis
from flightcheck.checks.conform.program import NOTICE_OPS, PICKING_OPS, SUBMIT_OPS, Program


def same_failure(a: Diagnosis, b: Diagnosis | None) -> bool:
    """``b`` fails as ``a`` does: the same first property at stake, or the same kind."""
    if b is None:
        return False
    return a.properties[:1] == b.properties[:1] if a.properties else a.kind == b.kind


def minimize(program: Program, still_fails: Callable[[Program], bool], *, seconds: float = 60.0) -> Program:
    """The smallest program found (within ``seconds``) for which ``still_fails`` holds."""
    deadline = time.monotonic() + seconds
    ops = list(program.ops)

    def fails(candidate: list) -> bool:
        return time.monotonic() < deadline and still_fails(program.with_ops(candidate))

    chunk = max(1, len(ops) // 2)
    while chunk >= 1:
        k, changed = 0, False
        while k < len(ops):
            candidate = ops[:k] + ops[k + chunk:]
            if fails(candidate):
                ops, changed = candidate, True
            else:
                k += chunk
        if not changed:
            chunk //= 2
    for k in range(len(ops)):  # simpler operations: one step, the first candidate of a selector
        for simpler in _simpler(ops[k]):
            candidate = ops[:k] + [simpler] + ops[k + 1:]
            if fails(candidate):
                ops[k] = simpler
                break
    return program.with_ops(ops)


def _simpler(op: tuple) -> list[tuple]:
    name = op[0]
    if name == "step" and op[1] > 1:
        return [("step", 1)]
    if name in PICKING_OPS and (op[1] != "any" or op[2] != 0):
        return [(name, op[1], 0)] if op[2] != 0 else []
    if name in NOTICE_OPS and op[2] != 0:
        return [(name, op[1], 0)]
    if name in ("resume", "expire") and op[1] != 0:
        return [(name, 0)]
    if name in SUBMIT_OPS and (op[2] != 0.0 or op[3] != 0):
        return [(name, op[1], 0.0, 0)]
    return []
