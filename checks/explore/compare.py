"""Two policies (or design variants) of one scenario explored and compared (``flightcheck diff``).

A side is written ``KEY=VALUE[,KEY=VALUE]`` over the scenario's policy (:func:`parse_side`); both
sides are explored with the same options and their graphs compared state by state and edge by edge
(:func:`~flightcheck.checks.explore.picture.diff_counts`), or drawn as one picture coloured by where
each state and edge occurs (:func:`~flightcheck.checks.explore.render.render_diff`).

For example::

    >>> side_names([{"release": "on-completion"}, {}])
    ('release=on-completion', 'default')
    >>> side_names([{}, {}])
    ('default (A)', 'default (B)')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from flightcheck.spec.scenario import COORDINATIONS, PUBLICATIONS, RELEASES, SCENARIOS
from flightcheck.spec.variants import VARIANTS

_CHOICES = {"release": RELEASES, "publication": PUBLICATIONS, "coordination": COORDINATIONS}
_INTS = ("capacity", "chunk")


def parse_side(option: str, text: str) -> dict[str, Any]:
    """``"release=on-completion,capacity=1"`` -> ``{"release": "on-completion", "capacity": 1}``.

    Keys: release, publication, coordination, capacity, chunk (the policy) and variant. Raises
    ValueError naming the option, the key and the allowed values.

    For example::

        >>> parse_side("--a", "release=on-completion, capacity=1")
        {'release': 'on-completion', 'capacity': 1}
    """
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not value:
            raise ValueError(f"{option}: {part!r} is not KEY=VALUE")
        if key in out:
            raise ValueError(f"{option}: {key} is given twice")
        if key in _CHOICES:
            if value not in _CHOICES[key]:
                raise ValueError(f"{option}: {key} must be one of {', '.join(_CHOICES[key])}; got {value!r}")
            out[key] = value
        elif key in _INTS:
            if not (value.isascii() and value.isdecimal()) or int(value) < 1:
                raise ValueError(f"{option}: {key} must be a positive integer; got {value!r}")
            out[key] = int(value)
        elif key == "variant":
            if value not in VARIANTS:
                raise ValueError(f"{option}: unknown variant {value!r}; known: {', '.join(VARIANTS)}")
            out[key] = value
        else:
            raise ValueError(f"{option}: unknown key {key!r}; use release, publication, coordination, "
                             "capacity, chunk or variant")
    return out


def side_names(sides: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """The two sides' names as tables and pictures show them (``default`` for no change; ``(A)`` and
    ``(B)`` added when they are the same)."""
    names = tuple(",".join(f"{k}={v}" for k, v in side.items()) or "default" for side in sides)
    if names[0] == names[1]:
        names = (names[0] + " (A)", names[1] + " (B)")
    return names[0], names[1]


def compare_sides(scenario: str, sides: Sequence[dict[str, Any]], *, symmetry: bool = True,
                  max_states: int = 200_000, render: Optional[Path] = None, force: bool = False) -> dict[str, Any]:
    """Explore ``scenario`` under each side and compare: each side's name, states and verdict, the
    states and edges only under A, only under B and under both, and the picture written to ``render``.

    Raises :class:`~flightcheck.checks.explore.explorer.StateLimitExceeded` (a side beyond
    ``max_states``) or :class:`~flightcheck.checks.explore.picture.RenderError` (a picture that cannot
    be drawn).
    """
    from flightcheck.checks.explore.explorer import explore

    names = side_names(sides)
    results = []
    for side in sides:
        side = dict(side)
        variant = VARIANTS[side.pop("variant", "correct")]
        scn = SCENARIOS[scenario].with_policy(**side) if side else SCENARIOS[scenario]
        results.append(explore(variant.build(scn), symmetry=symmetry, max_states=max_states))
    if render is not None:
        from flightcheck.checks.explore.render import render_diff
        counts = render_diff(results[0], results[1], render, names, force=force)
    else:
        from flightcheck.checks.explore.picture import diff_counts
        counts = diff_counts(results[0], results[1])
    return {"scenario": scenario, "a": {"name": names[0], "states": results[0].stats.states, "ok": results[0].ok},
            "b": {"name": names[1], "states": results[1].stats.states, "ok": results[1].ok},
            **counts, "render": str(render) if render is not None else None}
