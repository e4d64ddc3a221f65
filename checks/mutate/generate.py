"""Mutants of one engine module: each a single change, with a stable readable ID and a unified diff.

:func:`generate` parses the module with libcst (so the mutated source keeps its formatting and the
diff shows only the change), applies every operator of :mod:`~flightcheck.checks.mutate.operators` at
every node it reads, and returns one :class:`Mutant` per distinct mutated source. A mutant inside a
class of :mod:`~flightcheck.checks.mutate.skips` carries its ``skip`` rule.

The ID is ``FILE::FUNCTION::OPERATOR::ORIGINAL => MUTATED``: the function's qualified name and the
changed lines before and after, whitespace collapsed; ``#2``, ``#3`` ... number identical changes
within one function in source order. No line number is part of it, so an edit elsewhere in the file
leaves the ID alone (only an edit of the mutated line itself changes it).

For example::

    >>> src = "def f(a, b):\\n    if a < b:\\n        return a\\n    return b\\n"
    >>> ms = generate(src, file="m.py", module="m", operators=("swap_op",))
    >>> [m.id for m in ms]
    ['m.py::f::swap_op::if a < b: => if a <= b:']
    >>> print(ms[0].diff.splitlines()[4])
    -    if a < b:
"""

from __future__ import annotations

import difflib
import hashlib
from collections import Counter
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, WhitespaceInclusivePositionProvider as Span

from flightcheck.checks.mutate.operators import DEFAULT_OPERATORS, OPERATORS, applies
from flightcheck.checks.mutate.skips import DEBUG_FUNCTIONS, child_rules, children_rule, own_rule

_MAX_SNIPPET = 100
_INDENTED = (cst.BaseCompoundStatement, cst.SimpleStatementLine)


@dataclass(frozen=True)
class Mutant:
    """One mutant: where it is, what it changes, and the whole mutated source of its module."""

    id: str
    file: str            # as shown, e.g. "impl/scheduler.py"
    module: str          # the import name it replaces, e.g. "flightcheck.impl.scheduler"
    function: str        # qualified name, or "<module>"
    operator: str
    line: int            # where it starts today (for reading only: not part of the ID)
    original: str
    mutated: str
    diff: str
    source: str = field(repr=False)
    skip: str | None = None   # a rule of skips.SKIP_RULES, when the mutant is not run

    def to_json(self) -> dict:
        """A JSON-ready form (without the mutated source)."""
        return {"id": self.id, "file": self.file, "module": self.module, "function": self.function,
                "operator": self.operator, "line": self.line, "original": self.original,
                "mutated": self.mutated, "diff": self.diff, "skip": self.skip}


@dataclass
class _Candidate:
    node: cst.CSTNode
    mutated: cst.CSTNode
    operator: str
    function: str
    line: int
    column: int
    end_line: int
    end_column: int
    skip: str | None


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (Span,)

    def __init__(self, operators: tuple[str, ...], debug_functions: tuple[str, ...]) -> None:
        super().__init__()
        self.ops = [OPERATORS[name] for name in operators]
        self.debug_functions = debug_functions
        self.names: list[str] = []
        self.num_functions = 0                  # how many function bodies enclose the node visited
        self.rules: list[str | None] = []       # one entry per visited node, popped on leave
        self.marked: dict[int, str] = {}        # id(node) -> rule, for children a parent's rule names (child_rules)
        self.candidates: list[_Candidate] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        inherited = next((r for r in reversed(self.rules) if r is not None), None)
        mine = own_rule(node, self.debug_functions) or self.marked.pop(id(node), None)
        self.marked.update(child_rules(node))
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.names.append(node.name.value)
        rule = inherited or mine
        for op in self.ops:
            # Deleting a module- or class-level assignment only makes the import fail: functions only.
            if op.name == "delete" and self.num_functions == 0:
                continue
            if applies(op, node):
                for mutated in op.mutate(node):
                    span = self.get_metadata(Span, node)
                    self.candidates.append(_Candidate(node, mutated, op.name, ".".join(self.names) or "<module>",
                                                      span.start.line, span.start.column, span.end.line,
                                                      span.end.column, rule))
        self.rules.append(rule or children_rule(node))
        self.num_functions += isinstance(node, cst.FunctionDef)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.rules.pop()
        self.num_functions -= isinstance(original_node, cst.FunctionDef)
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef)):
            self.names.pop()


def _changed_lines(before: list[str], after: list[str]) -> tuple[str, str]:
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    old, new = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            old += before[i1:i2]
            new += after[j1:j2]
    return _snippet(old), _snippet(new)


def _snippet(lines: list[str]) -> str:
    text = " ".join(" ".join(line.split()) for line in lines).strip()
    if len(text) > _MAX_SNIPPET:  # long statements: a readable head, and a hash so the ID stays unique
        digest = hashlib.sha1(text.encode()).hexdigest()[:6]
        text = text[:_MAX_SNIPPET - 10].rstrip() + f"... ~{digest}"
    return text


def generate(source: str, *, file: str, module: str, operators: tuple[str, ...] = DEFAULT_OPERATORS,
             debug_functions: tuple[str, ...] = DEBUG_FUNCTIONS) -> list[Mutant]:
    """Every mutant of ``source`` under ``operators``, in source order; skipped ones carry their rule.

    A mutation whose source does not compile, or repeats another's source exactly, is dropped.
    """
    unknown = [name for name in operators if name not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown operator(s) {', '.join(unknown)}; known: {', '.join(OPERATORS)}")
    wrapper = MetadataWrapper(cst.parse_module(source))
    collector = _Collector(tuple(operators), tuple(debug_functions))
    wrapper.visit(collector)
    empty = cst.Module([])
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    before = source.splitlines()
    seen = {source}
    mutants: list[Mutant] = []
    occurrences: Counter = Counter()
    order = sorted(range(len(collector.candidates)), key=lambda k: (collector.candidates[k].line, k))
    for k in order:
        cand = collector.candidates[k]
        # Splice the mutated node's code over the original's span (the span includes the whitespace
        # the node owns, as code_for_node does), instead of re-printing the tree for every mutant.
        # A node over several lines or a whole statement depends on its block's indentation, which
        # code_for_node cannot know: those few are re-printed from the tree.
        if cand.line == cand.end_line and not isinstance(cand.mutated, _INDENTED):
            start = starts[cand.line - 1] + cand.column
            end = starts[cand.end_line - 1] + cand.end_column
            code = source[:start] + empty.code_for_node(cand.mutated) + source[end:]
        else:
            code = wrapper.module.deep_replace(cand.node, cand.mutated).code
        if code in seen:
            continue
        try:
            compile(code, file, "exec")
        except SyntaxError:
            continue
        seen.add(code)
        original, mutated = _changed_lines(before, code.splitlines())
        key = f"{file}::{cand.function}::{cand.operator}::{original} => {mutated}"
        occurrences[key] += 1
        ident = key if occurrences[key] == 1 else f"{key} #{occurrences[key]}"
        diff = "\n".join(difflib.unified_diff(before, code.splitlines(), f"a/{file}", f"b/{file}", lineterm=""))
        mutants.append(Mutant(ident, file, module, cand.function, cand.operator, cand.line, original, mutated,
                              diff, code, cand.skip))
    return mutants
