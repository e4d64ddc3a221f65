"""The mutation operators: mutmut 3's node mutators where they fit, and the statement-level ones it lacks.

An operator is a name, the libcst node type it applies to, and a function from a node to the mutated
nodes (none, one or several). The expression operators are mutmut 3's own functions
(``mutmut.mutation.mutators``), called one node at a time; mutmut's runner is not used (it rewrites a
module into trampolines and runs pytest, which does not fit a lockstep campaign in one process).
mutmut has no statement deletion, no ``break`` -> ``continue``, no early return, no ``min``/``max``
swap and no negated condition, so those are written here on the same libcst nodes.

For example::

    >>> import libcst as cst
    >>> node = cst.parse_expression("a < b").comparisons[0]
    >>> [cst.Module([]).code_for_node(n) for n in OPERATORS["swap_op"].mutate(node)]
    [' <= b']
    >>> sorted(DEFAULT_OPERATORS)[:3]
    ['augassign', 'break_continue', 'delete']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import libcst as cst
from mutmut.mutation import mutators as mm


@dataclass(frozen=True)
class Operator:
    """A mutation operator: its name, the node type it reads, what it does, and the function."""

    name: str
    node_type: type
    description: str
    mutate: Callable[[cst.CSTNode], Iterable[cst.CSTNode]]
    source: str = "flightcheck"   # "mutmut" for mutmut 3's own node mutators


def _first(fn: Callable[[cst.CSTNode], Iterable[cst.CSTNode]]) -> Callable[[cst.CSTNode], Iterable[cst.CSTNode]]:
    """Only the first mutant of ``fn`` (mutmut's string operator yields three spellings of one change)."""
    def first(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        for mutated in fn(node):
            yield mutated
            return
    return first


# --- the operators mutmut 3 lacks ---------------------------------------------------------------
_DELETABLE = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Raise, cst.Del)


def delete_statement(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """A call, an assignment, ``raise`` or ``del`` replaced by ``pass`` (a missed append, remove, update)."""
    if isinstance(node, cst.Expr) and not isinstance(node.value, (cst.Call, cst.Await)):
        return  # a bare string or name statement does nothing
    if isinstance(node, cst.AnnAssign) and node.value is None:
        return  # a declaration, not an assignment
    yield cst.Pass()


def break_to_continue(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """``break`` -> ``continue`` (mutmut does ``continue`` -> ``break`` and ``break`` -> ``return``)."""
    yield cst.Continue()


def _returns_value(body: cst.CSTNode) -> bool:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            if node.value is not None:
                found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is body  # nested functions have returns of their own

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Yield(self, node: cst.Yield) -> None:
            found.append(node)

    body.visit(Finder())
    return bool(found)


def return_early(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """A function that returns nothing gets ``return`` as its first statement (after its docstring)."""
    assert isinstance(node, cst.FunctionDef)
    if not isinstance(node.body, cst.IndentedBlock) or _returns_value(node):
        return
    body = list(node.body.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    if body[start:] and _is_bare_return(body[start]):
        return
    ret = cst.SimpleStatementLine([cst.Return()])
    yield node.with_changes(body=node.body.with_changes(body=[*body[:start], ret, *body[start:]]))


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _is_bare_return(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body)


def swap_min_max(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """``min(...)`` <-> ``max(...)``."""
    assert isinstance(node, cst.Call)
    if isinstance(node.func, cst.Name) and node.func.value in ("min", "max"):
        yield node.with_changes(func=cst.Name("max" if node.func.value == "min" else "min"))


def negate_condition(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """``if x:`` / ``while x:`` -> ``not (x)``, where no other operator flips the test (a name, a call,
    an attribute; comparisons and ``not`` already have their own mutants)."""
    assert isinstance(node, (cst.If, cst.While))
    test = node.test
    if isinstance(test, (cst.Comparison, cst.BooleanOperation)) or (
            isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
        return
    negated = cst.UnaryOperation(cst.Not(), test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
    yield node.with_changes(test=negated)


def number_minus_one(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """An integer constant n -> n - 1 (mutmut's ``number`` does n + 1)."""
    if isinstance(node, cst.Integer):
        value = node.evaluated_value - 1
        if value >= 0:
            yield node.with_changes(value=repr(value))
        else:
            yield cst.UnaryOperation(cst.Minus(), cst.Integer(repr(-value)), lpar=node.lpar, rpar=node.rpar)


# --- the table ----------------------------------------------------------------------------------
OPERATORS: dict[str, Operator] = {op.name: op for op in (
    Operator("swap_op", cst.CSTNode, "comparison, arithmetic, boolean and augmented operators: < <=, == !=, "
             "+ -, and or, += -=, ...", mm.operator_swap_op, "mutmut"),
    Operator("keywords", cst.CSTNode, "is <-> is not, in <-> not in, break -> return, continue -> break",
             mm.operator_keywords, "mutmut"),
    Operator("number", cst.BaseNumber, "a number n -> n + 1", mm.operator_number, "mutmut"),
    Operator("number_minus", cst.BaseNumber, "an integer n -> n - 1", number_minus_one),
    Operator("name", cst.Name, "True <-> False", mm.operator_name, "mutmut"),
    Operator("unary", cst.UnaryOperation, "not x -> x", mm.operator_remove_unary_ops, "mutmut"),
    Operator("augassign", cst.AugAssign, "x += y -> x = y", mm.operator_augmented_assignment, "mutmut"),
    Operator("assignment", cst.Assign, "x = y -> x = None", mm.operator_assignment, "mutmut"),
    Operator("arg_removal", cst.Call, "f(a, b) -> f(None, b), f(b), ...", mm.operator_arg_removal, "mutmut"),
    Operator("string", cst.BaseString, "'s' -> 'XXsXX'", _first(mm.operator_string), "mutmut"),
    Operator("if_exp", cst.IfExp, "a if c else b -> each branch forced", mm.operator_if_exp, "mutmut"),
    Operator("lambda", cst.Lambda, "lambda: x -> lambda: None", mm.operator_lambda, "mutmut"),
    Operator("delete", cst.BaseSmallStatement, "a call, assignment, raise or del -> pass", delete_statement),
    Operator("break_continue", cst.Break, "break -> continue", break_to_continue),
    Operator("return_early", cst.FunctionDef, "a function returning nothing returns at once", return_early),
    Operator("min_max", cst.Call, "min(...) <-> max(...)", swap_min_max),
    Operator("negate", cst.CSTNode, "if x / while x -> not (x), for tests no other operator flips",
             lambda n: negate_condition(n) if isinstance(n, (cst.If, cst.While)) else ()),
)}
# The default set: every operator above except the two that mostly make crashes rather than plausible
# bugs here (``arg_removal``: f(None, ...) in an engine full of typed calls; ``assignment``: x = None).
DEFAULT_OPERATORS: tuple[str, ...] = tuple(n for n in OPERATORS if n not in ("arg_removal", "assignment"))


def applies(op: Operator, node: cst.CSTNode) -> bool:
    """Whether ``op`` reads nodes of this kind (``delete`` only the statement kinds it can remove)."""
    if op.name == "delete":
        return isinstance(node, _DELETABLE)
    return isinstance(node, op.node_type)
