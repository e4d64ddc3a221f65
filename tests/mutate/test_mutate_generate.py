"""The generator on a small synthetic module: pinned mutant counts and IDs, skips, diffs, stable IDs."""

from collections import Counter

import pytest

from flightcheck.checks.mutate.generate import generate
from flightcheck.checks.mutate.operators import DEFAULT_OPERATORS, OPERATORS

SOURCE = '''"""A synthetic module."""

from dataclasses import dataclass

LIMIT = 3


@dataclass(frozen=True)
class Pool:
    free: list
    held: set

    def take(self, n: int) -> list:
        """Takes n pages."""
        assert n <= len(self.free), "not enough"
        taken = self.free[:n]
        del self.free[:n]
        self.held.update(taken)
        return taken

    def give(self, page) -> None:
        if page not in self.held:
            raise KeyError(f"page {page} is not held")
        self.held.remove(page)
        self.free.append(page)

    def fits(self, n: int) -> bool:
        return n <= min(len(self.free), LIMIT) and not self.busy

    def scan(self, pages) -> int:
        count = 0
        for page in pages:
            if page is None:
                break
            count += 1
        return count

    def snapshot(self):
        total = len(self.free) + len(self.held)
        return (tuple(self.free), tuple(sorted(self.held)), total)

    def note(self):
        'a bare string does nothing'
        return LIMIT
'''




def _gen(**kw):
    return generate(SOURCE, file="pool.py", module="pool", **kw)


def test_pinned_counts_per_operator_and_skip_rule():
    ms = _gen()
    assert len(ms) == 31
    assert sorted(Counter(m.operator for m in ms if m.skip is None).items()) == [
        ("augassign", 1), ("break_continue", 1), ("delete", 8), ("keywords", 3), ("min_max", 1), ("number", 3),
        ("number_minus", 3), ("return_early", 1), ("swap_op", 3), ("unary", 1)]
    assert sorted(Counter(m.skip for m in ms if m.skip).items()) == [
        ("assert", 2), ("debug-function", 2), ("decorator", 1), ("docstring", 1)]


def test_pinned_ids_name_file_function_operator_and_the_change():
    ids = [m.id for m in _gen() if m.skip is None]
    assert ids[:3] == ["pool.py::<module>::number::LIMIT = 3 => LIMIT = 4",
                       "pool.py::<module>::number_minus::LIMIT = 3 => LIMIT = 2",
                       "pool.py::Pool.take::delete::taken = self.free[:n] => pass"]
    assert "pool.py::Pool.give::return_early:: => return" in ids
    assert "pool.py::Pool.give::keywords::if page not in self.held: => if page in self.held:" in ids
    assert "pool.py::Pool.give::delete::self.held.remove(page) => pass" in ids
    assert "pool.py::Pool.give::delete::raise KeyError(f\"page {page} is not held\") => pass" in ids
    assert ("pool.py::Pool.fits::min_max::return n <= min(len(self.free), LIMIT) and not self.busy => "
            "return n <= max(len(self.free), LIMIT) and not self.busy") in ids
    assert "pool.py::Pool.scan::break_continue::break => continue" in ids
    assert "pool.py::Pool.scan::keywords::break => return" in ids
    assert "pool.py::Pool.scan::number_minus::count = 0 => count = -1" in ids
    assert len(set(ids)) == len(ids)


def test_ids_survive_edits_elsewhere_in_the_file_and_repeats_are_numbered():
    before = {m.id for m in _gen()}
    shifted = generate("# a comment\n\n\n" + SOURCE.replace("LIMIT = 3", "LIMIT = 3\nOTHER = 5"),
                       file="pool.py", module="pool")
    after = {m.id for m in shifted}
    assert before <= after and len(after - before) == 2  # OTHER's two number mutants, nothing renamed
    twice = generate("def f(x):\n    x.add(1)\n    x.add(1)\n", file="t.py", module="t", operators=("delete",))
    assert [m.id for m in twice] == ["t.py::f::delete::x.add(1) => pass", "t.py::f::delete::x.add(1) => pass #2"]


def test_each_mutant_is_one_compiling_change_with_a_unified_diff():
    ms = _gen()
    sources = {m.source for m in ms}
    assert len(sources) == len(ms) and SOURCE not in sources
    for m in ms:
        compile(m.source, "pool.py", "exec")
        minus = [l for l in m.diff.splitlines() if l.startswith("-") and not l.startswith("---")]
        plus = [l for l in m.diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
        assert m.diff.startswith("--- a/pool.py\n+++ b/pool.py\n@@")
        assert len(minus) <= 1 and len(plus) == 1, m.id
    early = next(m for m in ms if m.operator == "return_early")
    assert "\n+        return\n" in early.diff  # indented inside the method, after nothing was removed


def test_multi_line_statements_keep_their_indentation():
    src = "class A:\n    def f(self, x):\n        self.emit(\n            'x',\n            n=x + 1,\n        )\n"
    ms = generate(src, file="a.py", module="a", operators=("swap_op", "delete"))
    assert [m.id for m in ms] == ["a.py::A.f::delete::self.emit( 'x', n=x + 1, ) => pass",
                                  "a.py::A.f::swap_op::n=x + 1, => n=x - 1,"]
    assert ms[1].source == src.replace("x + 1", "x - 1")


def test_operator_choice_and_unknown_operator():
    assert {m.operator for m in _gen(operators=("min_max",))} == {"min_max"}
    assert set(DEFAULT_OPERATORS) < set(OPERATORS)
    with pytest.raises(ValueError, match="unknown operator.*bogus"):
        _gen(operators=("bogus",))


def test_extra_debug_functions_are_skipped():
    ms = _gen(debug_functions=("snapshot", "scan"))
    assert {m.skip for m in ms if m.function == "Pool.scan"} == {"debug-function"}
