"""A guard's conjuncts, each named by its own source text: which part of ``And(...)`` is false.

The guards stay written once, in :mod:`flightcheck.spec.expr`. To name their parts, :func:`conjuncts`
runs the guard method that the spec (a variant included) actually has, with the ``And`` it calls swapped
for one that records its operands, and reads each operand's name off the method's source: the text of
the argument, ``s.ph[i] == WAITING`` or ``self.calm(s)``. A conjunct that calls a part of the guard
that variants override (a method named ``*_guard``, such as ``self.release_guard(s, f)``) is opened the
same way when it is a conjunction; a conjunct that is a local name carries the expression it was
assigned on the branch taken. A guard that returns ``False`` before any ``And`` (a policy
without the action) names the ``if`` that sent it back. Nothing changes on the explorer's path: only
this function runs the recording copy.

For example::

    >>> from flightcheck.spec.model import Action, FlightSpec
    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> [(c.label, c.holds) for c in conjuncts(spec, spec.initial(), Action("admit", 0))]
    [('s.ph[i] == WAITING', False), ('self.num_running(s) < self.policy.capacity', True), ('self.calm(s)', True), ('self.fits(s, i)', True)]
    >>> [c.label for c in false_conjuncts(spec, spec.initial(), Action("release", 0))]
    ['s.fl[f] == OPEN', 'self.at_release_point(s, f)']
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from flightcheck.spec import expr

#: How deep :func:`conjuncts` opens a conjunct that calls another method of the spec.
MAX_DEPTH = 3


@dataclass(frozen=True)
class Conjunct:
    """One operand of a guard's ``And``: its source text, its value here, the method it is written in, the
    values of that method's index arguments (``{"i": 0}``), what a local name was assigned (else ``""``),
    and the conjuncts of the method it calls, when it calls one made of ``And``."""

    label: str
    holds: bool
    method: str
    args: dict[str, int] = field(default_factory=dict)
    definition: str = ""
    inner: tuple["Conjunct", ...] = ()

    def leaves(self) -> list["Conjunct"]:
        """The innermost false conjuncts under this one (itself, when nothing inside names the reason)."""
        if self.holds:
            return []
        below = [leaf for c in self.inner for leaf in c.leaves()]
        return below or [self]


def conjuncts(spec: Any, state: Any, action: Any) -> list[Conjunct]:
    """The conjuncts of ``action``'s guard in a concrete ``state``, in the order the guard writes them
    (empty for a guard this cannot read: no source, or no ``And`` and true)."""
    return _trace(spec, "g_" + action.name, (spec.view(state), action.arg), 0)


def false_conjuncts(spec: Any, state: Any, action: Any) -> list[Conjunct]:
    """The innermost conjuncts that make ``action``'s guard false in ``state`` (empty when it holds)."""
    return [leaf for c in conjuncts(spec, state, action) for leaf in c.leaves()]


@dataclass(frozen=True)
class _Source:
    """What :func:`_trace` reads of one method's source, once per function."""

    calls: dict[tuple[int, int], ast.Call]  # the And calls, by (line, column) in the file
    assigned: dict[str, list[tuple[ast.expr, list[ast.expr]]]]  # local name -> (value, the branch's tests)
    appended: dict[str, list[tuple[ast.expr, list[ast.expr]]]]  # list name -> its elements and their branch's tests
    early: list[ast.expr]                   # tests of `if TEST: return False`, in order
    returned: set[int]                      # ids of the And calls a `return` gives back
    returns: list[tuple[ast.expr, list[ast.expr]]]  # every `return VALUE` and the tests of its branch
    params: tuple[str, ...]


@functools.lru_cache(maxsize=256)
def _source(fn: Callable) -> _Source | None:
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    text = "".join(lines)
    indent = len(text) - len(text.lstrip())
    tree = ast.parse(textwrap.dedent(text))
    ast.increment_lineno(tree, first - 1)
    func = tree.body[0]
    calls, assigned, appended, early, returned, returns = {}, {}, {}, [], set(), []
    branch: dict[int, list[ast.expr]] = {}  # node id -> the tests (or their negations) of the branches it is on
    for node in ast.walk(func):
        if isinstance(node, ast.If):
            negated = ast.UnaryOp(ast.Not(), node.test)
            for side, cond in ((node.body, node.test), (node.orelse, negated)):
                for stmt in side:
                    for child in ast.walk(stmt):
                        branch.setdefault(id(child), []).append(cond)
            if len(node.body) == 1 and isinstance(node.body[0], ast.Return) and \
                    isinstance(node.body[0].value, ast.Constant) and node.body[0].value.value is False:
                early.append(node.test)
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            returned.add(id(node.value))
            returns.append((node.value, branch.get(id(node), [])))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "And":
            calls[(node.lineno, node.col_offset + indent)] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            assigned.setdefault(name, []).append((node.value, branch.get(id(node), [])))
            if isinstance(node.value, ast.List):
                appended[name] = [(e, []) for e in node.value.elts]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" \
                and isinstance(node.func.value, ast.Name) and len(node.args) == 1:
            appended.setdefault(node.func.value.id, []).append((node.args[0], branch.get(id(node), [])))
    early.sort(key=lambda t: (t.lineno, t.col_offset))
    returns.sort(key=lambda r: (r[0].lineno, r[0].col_offset))
    params = tuple(a.arg for a in func.args.args)
    return _Source(calls, assigned, appended, early, returned, returns, params)


def _trace(spec: Any, name: str, args: tuple, depth: int) -> list[Conjunct]:
    fn = getattr(type(spec), name, None)
    fn = getattr(fn, "__func__", fn)
    src = _source(fn) if isinstance(fn, types.FunctionType) else None
    if src is None:
        return []
    seen: list[tuple[ast.Call, tuple, dict]] = []

    def recording_and(*xs: Any) -> Any:
        frame = sys._getframe(1)
        if frame.f_code is fn.__code__:
            pos = list(frame.f_code.co_positions())[frame.f_lasti // 2]
            call = src.calls.get((pos[0], pos[2]))
            if call is not None:
                seen.append((call, xs, dict(frame.f_locals)))
        return expr.And(*xs)

    copy = types.FunctionType(fn.__code__, {**fn.__globals__, "And": recording_and}, fn.__name__,
                              fn.__defaults__, fn.__closure__)
    result = copy(spec, *args)
    where = dict(zip(src.params[1:], args))
    index = {k: v for k, v in where.items() if isinstance(v, int) and not isinstance(v, bool)}
    if not seen:  # no And ran: an early `return False`, or a guard without one
        if result or depth:
            return []
        scope = {**fn.__globals__, "self": spec, **where}
        for test in src.early:
            if _eval(test, scope):
                return [Conjunct(_negated(test), False, name, index)]
        for value, conds in src.returns:  # the return on the branch taken names the condition
            if not (isinstance(value, ast.Constant) and value.value is False) and all(_eval(c, scope) for c in conds):
                return [Conjunct(ast.unparse(value), False, name, index)]
        return [Conjunct(f"{name} is False here", False, name, index)]
    call, xs, scope = seen[-1]  # the outermost And is the last to be called
    if id(call) not in src.returned:  # the method is not a conjunction (e.g. an Or of an And): a leaf
        return []
    nodes = _operands(src, call, scope, fn.__globals__, len(xs))
    out = []
    for k, (node, value) in enumerate(zip(nodes, xs)):
        label = ast.unparse(node) if node is not None else f"operand {k + 1} of {ast.unparse(call)}"
        definition = _definition(src, node, {**fn.__globals__, **scope})
        inner: tuple[Conjunct, ...] = ()
        if not value and depth < MAX_DEPTH and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self" \
                and node.func.attr.endswith("_guard"):
            inner_args = tuple(_eval(a, {**fn.__globals__, **scope}) for a in node.args)
            inner = tuple(_trace(spec, node.func.attr, inner_args, depth + 1))
        out.append(Conjunct(label, bool(value), name, index, definition, inner))
    return out


def _operands(src: _Source, call: ast.Call, scope: dict, globals_: dict, count: int) -> list[ast.expr | None]:
    """The source node of each operand of ``call`` (None where a starred operand cannot be matched)."""
    nodes: list[ast.expr | None] = []
    for arg in call.args:
        if not isinstance(arg, ast.Starred):
            nodes.append(arg)
        elif isinstance(arg.value, ast.Name) and arg.value.id in src.appended:
            env = {**globals_, **scope}
            nodes += [e for e, conds in src.appended[arg.value.id] if all(_eval(c, env) for c in conds)]
        elif isinstance(arg.value, ast.ListComp):
            rest = count - len(nodes) - sum(1 for a in call.args[call.args.index(arg) + 1:])
            nodes += [arg.value.elt] * max(rest, 0)
        else:
            nodes.append(None)
    return nodes if len(nodes) == count else [None] * count


def _definition(src: _Source, node: ast.expr | None, env: dict) -> str:
    """What a local name stands for on the branch taken, its own local names spelled out."""
    if not isinstance(node, ast.Name) or node.id not in src.assigned:
        return ""

    class Spell(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            value = _assignment(src, name.id, env)
            return self.visit(value) if value is not None else name

    value = _assignment(src, node.id, env)
    return ast.unparse(Spell().visit(value)) if value is not None else ""


def _assignment(src: _Source, name: str, env: dict) -> ast.expr | None:
    for value, conds in src.assigned.get(name, ()):
        if all(_eval(c, env) for c in conds):
            return value
    return None


def _negated(test: ast.expr) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand)
    return f"not ({ast.unparse(test)})"


def _eval(node: ast.expr, scope: dict) -> Any:
    return eval(compile(ast.Expression(node), "<guard>", "eval"), dict(scope))
