"""What the report shows, apart from how it is written: plain dataclasses, one per section.

:func:`~flightcheck.checks.report.build.build_report` fills a :class:`Report` from the suite's rows (and a
few cheap recomputations); :func:`~flightcheck.checks.report.html_page.write_report` writes it. Nothing here
knows HTML, and nothing in the writer recomputes a verdict.

For example::

    >>> r = Report(title="t", ok=True, summary=[SummaryRow("explore", "burst2", True, "52 states", 0.1)])
    >>> r.num_failed, r.num_rows
    (0, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.report.sequence import SequenceDiagram


@dataclass
class SummaryRow:
    """One row of the suite's table."""

    stage: str
    item: str
    ok: bool
    detail: str
    seconds: float
    strength: str = ""  # what the row establishes, in short (checks/strength.py); "" when it claims no property


@dataclass
class PropertyColumn:
    """A property of the verdict matrix: its name, kind and story."""

    name: str
    kind: str
    story: str


@dataclass
class VerdictLine:
    """The verdict of every property on one scenario under one policy (``n/a`` where it does not apply)."""

    scenario: str
    policy: str
    states: int | None
    verdicts: dict[str, str]
    ok: bool


@dataclass
class VariantStory:
    """One design of the history: its story, the property it must violate, and its path drawn."""

    name: str
    story: str
    scenario: str
    policy: str
    ok: bool
    detail: str
    property: str | None = None
    property_story: str = ""
    length: int | None = None
    diagram: SequenceDiagram | None = None
    listing: str = ""   # the same path as numbered text


@dataclass
class CoverageGraph:
    """A state graph of the story's scenario under one release point, coloured by the engine's runs."""

    scenario: str
    release: str
    policy: str
    states: int
    edges: int
    states_taken: int
    edges_taken: int
    source: str                 # where the engine's runs come from, in words
    picture: Any = None         # a :class:`~flightcheck.checks.explore.picture.Picture`
    page: str = ""              # the interactive page's file name, set by the writer
    missed_by_rule: dict[str, int] = field(default_factory=dict)


@dataclass
class ProofLine:
    """One property (or lemma) proved on one scenario and policy."""

    property: str
    status: str
    k: int
    lemma: bool
    support: list[str]
    cti: str = ""               # a bounded property's counterexample to induction, as text
    counterexample: list[str] = field(default_factory=list)
    says: str = ""              # its claim's words: "proved for all sizes", "no counterexample up to depth 2 (not a proof)"


@dataclass
class ProofTable:
    """The z3 results of one scenario and policy."""

    scenario: str
    policy: str
    ok: bool
    detail: str
    lines: list[ProofLine]
    says: str = ""  # the row's claim: as strong as its weakest property


@dataclass
class EquivStep:
    """One step of a distinguishing sequence: what it changed in each design ('' where not enabled)."""

    number: int
    action: str
    changes_a: str
    changes_b: str


@dataclass
class EquivEntry:
    """Two designs compared: the verdict, where, and the distinguishing sequence step by step."""

    variant_a: str
    variant_b: str
    scenario: str
    policy: str
    verdict: str
    summary: str
    ok: bool
    difference: str = ""
    steps: list[EquivStep] = field(default_factory=list)


@dataclass
class Figure:
    """A measured figure over repeated runs: median, spread (min to max) and the runs it comes from."""

    median: float
    low: float
    high: float
    runs: int


@dataclass
class TradeoffLine:
    """One experiment cell: each release point's figures and whether the direction held in every run."""

    experiment: str
    cell: str
    metric: str
    figures: dict[str, Figure]
    direction: str             # e.g. "after-prefill lower in 3 of 3 paired runs"
    stable: bool


@dataclass
class Tradeoff:
    """The release points' trade-off as measured by the benchmark (recorded figures)."""

    source: str
    lines: list[TradeoffLine]
    note: str = ""
    files: list[str] = field(default_factory=list)  # the results files read


@dataclass
class Report:
    """The whole report."""

    title: str
    ok: bool
    summary: list[SummaryRow]
    generated: str = ""
    errors: int = 0  # rows where flightcheck itself failed: the run is not a verdict
    options: dict[str, Any] = field(default_factory=dict)
    properties: list[PropertyColumn] = field(default_factory=list)
    verdicts: list[VerdictLine] = field(default_factory=list)
    variants: list[VariantStory] = field(default_factory=list)
    coverage: list[CoverageGraph] = field(default_factory=list)
    proofs: list[ProofTable] = field(default_factory=list)
    equivalences: list[EquivEntry] = field(default_factory=list)
    conform: list[SummaryRow] = field(default_factory=list)
    probe: dict[str, dict[str, Any]] = field(default_factory=dict)
    workload: list[dict[str, Any]] = field(default_factory=list)
    tradeoff: Tradeoff | None = None
    missing: list[str] = field(default_factory=list)   # stages not run, named so an absent section is explained
    problems: list[str] = field(default_factory=list)  # what could not be recomputed for the report, and why
    strength: str = ""  # the rows counted by what they establish (checks/suite/claims.py's summary line)

    @property
    def num_rows(self) -> int:
        """Rows of the suite."""
        return len(self.summary)

    @property
    def num_failed(self) -> int:
        """Failed rows of the suite."""
        return sum(not r.ok for r in self.summary)
