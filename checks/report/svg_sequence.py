"""A :class:`~flightcheck.checks.report.sequence.SequenceDiagram` written as one standalone SVG.

Drawn in Python, nothing fetched at view time: a header box per lifeline with a dashed line below it,
one band per step (its number and action on the left, its arrows between the lifelines, what it
changed on the right), self-messages as small loops, replies dashed, a misjudged termination in red,
the violating step on a red band and a liveness loop on a yellow one, and the ending (the property
named, with its story) in a box at the foot. The output is deterministic (the walkthrough's pictures
are compared byte for byte with a regenerated copy) and uses presentation attributes only, so it shows
the same inline in the report, as an ``<img>`` on a code-hosting site, and opened on its own.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> from flightcheck.checks.explore.counterexample import Counterexample
    >>> from flightcheck.checks.report.sequence import diagram_of
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> svg = to_svg(diagram_of(spec, Counterexample.from_actions(spec, ["arrive(0)", "admit(0)"])))
    >>> svg.startswith("<svg") and svg.count('class="fc-arrow"') == 3
    True
"""

from __future__ import annotations

import textwrap
from xml.sax.saxutils import escape

from flightcheck.checks.report.sequence import LOOP, VIOLATION, SequenceDiagram

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
RED, YELLOW, INK, MUTED = "#c62828", "#f2a900", "#222222", "#777777"
LEFT, COLUMN, HEADER, NOTES = 130, 150, 40, 430   # gutter, lifeline spacing, header height, notes width
ARROW_GAP, LINE = 24, 13                            # vertical space per arrow, per line of notes
NOTE_CHARS = 66


def _q(text: str) -> str:
    return escape(text, {'"': "&quot;"})


def _text(x: float, y: float, text: str, *, size: int = 11, anchor: str = "start", color: str = INK,
          mono: bool = False, bold: bool = False, halo: bool = False) -> str:
    extra = ' font-weight="bold"' if bold else ""
    if halo:  # a white outline under the glyphs keeps labels readable across lifelines
        extra += ' stroke="#ffffff" stroke-width="3" paint-order="stroke" stroke-linejoin="round"'
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-family="{MONO if mono else FONT}" font-size="{size}" '
            f'text-anchor="{anchor}" fill="{color}"{extra}>{_q(text)}</text>')


def _arrow_head(x: float, y: float, direction: int, color: str) -> str:
    return (f'<path d="M{x:.1f},{y:.1f} l{-8 * direction:.1f},-4 l0,8 z" fill="{color}" stroke="none"/>')


def to_svg(d: SequenceDiagram) -> str:
    """The diagram as SVG text (an ``<svg>`` element with the ``fc-seq`` class)."""
    col = {line.key: LEFT + COLUMN * k + COLUMN / 2 for k, line in enumerate(d.lifelines)}
    notes_x = LEFT + COLUMN * len(d.lifelines) + 10
    width = notes_x + NOTES
    title_lines = textwrap.wrap(d.title, max(60, int(width / 7.6))) or [""]
    top = 14 + 16 * len(title_lines) + 8
    body: list[str] = []
    y = top + HEADER + 14
    bands: list[str] = []
    for step in d.steps:
        notes = textwrap.wrap(step.changes, NOTE_CHARS) or [""]
        height = max(ARROW_GAP * len(step.arrows) + 10, LINE * len(notes) + 12, 30)
        fill = {VIOLATION: "#fde2e2", LOOP: "#fff4cc"}.get(step.mark)
        if fill:
            bands.append(f'<rect class="fc-{step.mark}" x="4" y="{y:.1f}" width="{width - 8}" height="{height}" '
                         f'fill="{fill}" stroke="{RED if step.mark == VIOLATION else YELLOW}" stroke-width="1"/>')
        body.append(_text(10, y + 17, f"{step.number:>2}. {step.action}", mono=True, bold=step.mark == VIOLATION))
        if step.mark:
            body.append(_text(10, y + 30, "violation" if step.mark == VIOLATION else "loop", size=9,
                              color=RED if step.mark == VIOLATION else "#8a6d00", bold=True))
        for k, a in enumerate(step.arrows):
            ay = y + 18 + ARROW_GAP * k
            color = RED if a.bad else INK
            x1, x2 = col[a.source], col[a.target]
            dash = ' stroke-dasharray="5,3"' if a.reply else ""
            if x1 == x2:  # a self-message: a small loop to the right of the lifeline
                body.append(f'<path class="fc-arrow" d="M{x1:.1f},{ay - 6:.1f} h22 v10 h-18" fill="none" '
                            f'stroke="{color}" stroke-width="1.3"{dash}/>')
                body.append(_arrow_head(x1 + 4, ay + 4, -1, color))
                body.append(_text(x1 + 28, ay + 2, a.label, size=10, color=color, halo=True))
                continue
            direction = 1 if x2 > x1 else -1
            body.append(f'<line class="fc-arrow" x1="{x1:.1f}" y1="{ay:.1f}" x2="{x2 - 2 * direction:.1f}" '
                        f'y2="{ay:.1f}" stroke="{color}" stroke-width="{2 if a.bad else 1.3}"{dash}/>')
            body.append(_arrow_head(x2, ay, direction, color))
            body.append(_text((x1 + x2) / 2, ay - 4, a.label, size=10, anchor="middle", color=color, halo=True,
                              bold=a.bad))
        for k, line in enumerate(notes):
            body.append(_text(notes_x, y + 16 + LINE * k, line, size=10, mono=True,
                              color=RED if step.mark == VIOLATION else "#444444"))
        y += height + 4
    bottom = y
    foot: list[str] = []
    if d.ending:
        chars = max(60, int(width / 6.8))
        lines = textwrap.wrap(d.ending, chars) + (textwrap.wrap(f"({d.story})", chars) if d.story else [])
        h = 12 + LINE * len(lines)
        color = RED if d.failed else "#2e7d32"
        foot.append(f'<rect class="fc-ending" x="4" y="{y:.1f}" width="{width - 8}" height="{h}" fill="#ffffff" '
                    f'stroke="{color}" stroke-width="1.5" rx="4"/>')
        for k, line in enumerate(lines):
            foot.append(_text(12, y + 16 + LINE * k, line, size=11, color=color, bold=k == 0))
        y += h + 6
    height = y + 6
    heads: list[str] = []
    for line in d.lifelines:
        x = col[line.key]
        heads.append(f'<line class="fc-lifeline" x1="{x:.1f}" y1="{top + HEADER:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" '
                     f'stroke="#9e9e9e" stroke-width="1" stroke-dasharray="4,4"/>')
        heads.append(f'<rect x="{x - 62:.1f}" y="{top:.1f}" width="124" height="{HEADER - 4}" rx="4" '
                     f'fill="{"#e8f0fe" if line.key.startswith("r") else "#eeeeee"}" stroke="#666666"/>')
        heads.append(_text(x, top + 15, line.name, size=12, anchor="middle", bold=True))
        if line.role:
            heads.append(_text(x, top + 29, line.role, size=10, anchor="middle", color=MUTED))
    heads.append(_text(notes_x, top + 22, "what changed", size=11, color=MUTED, bold=True))
    title = [_text(10, 18 + 16 * k, t, size=13 if k == 0 else 11, bold=k == 0) for k, t in enumerate(title_lines)]
    label = _q(d.title + (f": {d.ending}" if d.ending else ""))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="fc-seq" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{label}">\n'
            f'<title>{label}</title>\n<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>\n'
            + "\n".join(title + bands + heads + body + foot) + "\n</svg>\n")
