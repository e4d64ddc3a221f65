"""Lists in the hand-written docs that are generated from the registries, so a doc cannot lag the tool.

A block sits between two markers in a Markdown file of README.md or docs/::

    <!-- generated: scenarios (flightcheck docs) -->
    ...written by flightcheck docs...
    <!-- end generated: scenarios -->

and its body is :data:`BLOCKS`'s function of that name applied to the registries: the default and scale
scenarios of ``spec/scenario.py`` (``SCENARIOS``, ``SCALE_SCENARIOS``, each with its story), the design
variants of ``spec/variants.py`` (``VARIANTS``, each with the property it must violate and the length of
its shortest counterexample recorded in ``checks/suite/expectations.json``, which ``flightcheck check``
compares with what it computes). ``flightcheck docs`` rewrites the blocks, ``flightcheck docs --check``
and ``tests/test_doc_blocks.py`` fail while one is stale: a new scenario or variant without its doc line
fails a test.

For example::

    >>> text = "a\\n<!-- generated: variants (flightcheck docs) -->\\nold\\n<!-- end generated: variants -->\\nb\\n"
    >>> "`forget-at-release`" in fill(text), fill(fill(text)) == fill(text)
    (True, True)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
EXPECTATIONS = ROOT / "checks" / "suite" / "expectations.json"
_BLOCK = re.compile(r"(<!-- generated: ([a-z-]+) \(flightcheck docs\) -->\n)(.*?)(<!-- end generated: \2 -->)", re.S)


def scenario_list() -> str:
    """The default scenarios, numbered in the walk-through's order, then the scale ones, each with its story."""
    from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS

    lines = [f"The default scenarios (`SCENARIOS` in `spec/scenario.py`: {len(SCENARIOS)}, numbered as the "
             f"walk-through goes; docs/walkthrough.md, section 9, gives each one's state count):", ""]
    lines += [f"{k}. `{s.name}`: {s.story}" for k, s in enumerate(SCENARIOS.values(), 1)]
    lines += ["", f"The scale scenarios (`SCALE_SCENARIOS`: {len(SCALE_SCENARIOS)}; the explorer and `explore "
              f"--scenario` offer them beside the default ones, {len(SCENARIOS) + len(SCALE_SCENARIOS)} in all):", ""]
    lines += [f"- `{s.name}`: {s.story}" for s in SCALE_SCENARIOS.values()]
    return "\n".join(lines) + "\n"


def variant_list() -> str:
    """The design variants (``flightcheck variants``), each with the property it must violate, its shortest
    counterexample's length and default scenario, and its story."""
    from flightcheck.checks.suite.defaults import variant_scenario
    from flightcheck.spec.variants import VARIANTS

    recorded = json.loads(EXPECTATIONS.read_text(encoding="utf-8"))["variants"]
    lines = [f"The design history (`flightcheck variants`: {len(VARIANTS)} variants of `spec/variants.py`):", ""]
    for v in VARIANTS.values():
        scn = variant_scenario(v.name).name
        if v.expected_violation is None:
            lines.append(f"- `{v.name}`: correct (on `{scn}`). {v.story}")
        else:
            prop, steps = recorded[v.name]
            lines.append(f"- `{v.name}`: violates `{prop}` in {steps} step{'s' if steps != 1 else ''} (on `{scn}`). {v.story}")
    return "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[], str]] = {"scenarios": scenario_list, "variants": variant_list}


def fill(text: str) -> str:
    """``text`` with every generated block's body rewritten; an unknown block name is an error."""
    def body(m: re.Match[str]) -> str:
        if m.group(2) not in BLOCKS:
            raise ValueError(f"unknown generated block {m.group(2)!r}; known: {', '.join(BLOCKS)}")
        return m.group(1) + BLOCKS[m.group(2)]() + m.group(4)
    return _BLOCK.sub(body, text)


def documents() -> list[Path]:
    """README.md and every Markdown file of docs/ that holds a generated block."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in paths if p.is_file() and _BLOCK.search(p.read_text(encoding="utf-8"))]


def stale_blocks(paths: list[Path] | None = None) -> list[str]:
    """The files among ``paths`` (default: :func:`documents`) whose generated blocks differ from the registries."""
    return [str(p) for p in (documents() if paths is None else paths)
            if fill(p.read_text(encoding="utf-8")) != p.read_text(encoding="utf-8")]


def write_blocks(paths: list[Path] | None = None) -> list[Path]:
    """Rewrite the generated blocks of ``paths`` (default: :func:`documents`); returns the files changed."""
    changed = []
    for p in documents() if paths is None else paths:
        old = p.read_text(encoding="utf-8")
        new = fill(old)
        if new != old:
            p.write_text(new, encoding="utf-8")
            changed.append(p)
    return changed


__all__ = ["BLOCKS", "documents", "fill", "scenario_list", "stale_blocks", "variant_list", "write_blocks"]
