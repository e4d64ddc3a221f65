"""Classes of mutants skipped up front: changes that cannot alter what the engine does.

Each rule names a syntactic context; a mutant inside it is generated, listed and reported as skipped
with the rule's reason, but never run (it would survive and count against the checks for nothing).
``--no-skip RULE`` runs a class anyway; ``--skip-function NAME`` adds a debug-only function.

For example::

    >>> sorted(SKIP_RULES)
    ['annotation', 'assert', 'debug-function', 'decorator', 'docstring', 'error-message', 'import', 'logging', 'metrics-help']
    >>> DEBUG_FUNCTIONS
    ('snapshot', 'check_invariants', '__repr__', '__str__')
"""

from __future__ import annotations

import libcst as cst

SKIP_RULES: dict[str, str] = {
    "docstring": "a docstring or bare string statement: it does nothing when run",
    "assert": "an assert: the correct engine never fails it, so weakening or removing it changes nothing, "
              "and strengthening it only crashes",
    "debug-function": "a debug-only function (snapshot(), check_invariants(), __repr__): the engine never "
                      "calls it while serving",
    "error-message": "the arguments of a raised exception: they change its message, not whether it is raised",
    "annotation": "a type annotation or a Literal[...] type: never evaluated, or read only by type checkers",
    "decorator": "a decorator argument (dataclass slots=, frozen=): same behaviour for a program that "
                 "never assigns a frozen field",
    "import": "an import statement",
    "logging": "a call of a logger (log.error(...), log.exception(...)) or its statement: it writes a line for "
               "people; the server's loggers have no handler that acts, and logging never raises into the caller",
    "metrics-help": "the help text of a Prometheus metric (Counter(name, help, ...)): only the # HELP comment "
                    "of /metrics changes, never a metric's name, labels or value",
}

# Calls of these names on these objects are logging (impl/server: ``log = logging.getLogger(...)``).
LOGGERS: tuple[str, ...] = ("log", "logger", "logging")
LOG_METHODS: tuple[str, ...] = ("debug", "info", "warning", "warn", "error", "exception", "critical", "log")
# prometheus_client's metric types and the families a custom collector yields: their second argument (or
# documentation=) is the help text.
METRIC_TYPES: tuple[str, ...] = ("Counter", "Gauge", "Histogram", "Summary", "Info", "Enum", "CounterMetricFamily",
                                 "GaugeMetricFamily", "HistogramMetricFamily", "SummaryMetricFamily",
                                 "InfoMetricFamily", "StateSetMetricFamily")

# Functions the engine calls only from tests and debug checks (a mutant inside is skipped).
DEBUG_FUNCTIONS: tuple[str, ...] = ("snapshot", "check_invariants", "__repr__", "__str__")


def _is_string_statement(node: cst.CSTNode) -> bool:
    return (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Expr)
            and isinstance(node.body[0].value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)))


def _is_logging_call(node: cst.CSTNode) -> bool:
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name) and node.func.value.value in LOGGERS
            and node.func.attr.value in LOG_METHODS)


def own_rule(node: cst.CSTNode, debug_functions: tuple[str, ...]) -> str | None:
    """The rule that covers ``node`` itself and everything inside it, if any."""
    if _is_string_statement(node):
        return "docstring"
    if isinstance(node, cst.Assert):
        return "assert"
    if isinstance(node, cst.FunctionDef) and node.name.value in debug_functions:
        return "debug-function"
    if isinstance(node, cst.Annotation) or (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name)
                                            and node.value.value == "Literal"):
        return "annotation"
    if isinstance(node, cst.Decorator):
        return "decorator"
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return "import"
    if _is_logging_call(node) or (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1
                                  and isinstance(node.body[0], cst.Expr) and _is_logging_call(node.body[0].value)):
        return "logging"
    return None


def child_rules(node: cst.CSTNode) -> dict[int, str]:
    """Rules for some children of ``node`` only, by ``id`` of the child: the help text of a metric
    (``Counter("flightcheck_requests", "terminated requests ...", [...])``), not its name or labels."""
    if not isinstance(node, cst.Call):
        return {}
    func = node.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    if name not in METRIC_TYPES:
        return {}
    positional = [a for a in node.args if a.keyword is None and not a.star]
    marked = {id(a): "metrics-help" for a in node.args if a.keyword is not None and a.keyword.value == "documentation"}
    if len(positional) >= 2:
        marked[id(positional[1])] = "metrics-help"
    return marked


def children_rule(node: cst.CSTNode) -> str | None:
    """The rule that covers what is inside ``node`` but not ``node`` itself (deleting a ``raise`` is a
    real mutant; rewording its message is not)."""
    if isinstance(node, cst.Raise):
        return "error-message"
    return None
