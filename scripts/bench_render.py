"""Time to draw explored graphs: building the DOT text, and Graphviz's layout into SVG/PNG/HTML.

Run: python scripts/bench_render.py [--scenarios burst2,mixed3,burst3-abort]
Prints one line per scenario and format: states, edges drawn, seconds (wall), output size.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from flightcheck.checks.explore.explorer import explore
from flightcheck.checks.explore.picture import build_picture
from flightcheck.checks.explore.render import render_result, to_dot
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import SCENARIOS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="burst2,burst2-abort,mixed3,burst3-abort")
    ap.add_argument("--formats", default="dot,svg,png,html")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp())
    for name in args.scenarios.split(","):
        res = explore(FlightSpec(SCENARIOS[name]))
        t0 = time.perf_counter()
        pic = build_picture(res)
        to_dot(pic)
        build = time.perf_counter() - t0
        print(f"{name}: {res.stats.states} states, {len(pic.edges)} edges drawn; picture+DOT {build:.3f} s")
        for fmt in args.formats.split(","):
            t0 = time.perf_counter()
            path = render_result(res, out / f"{name}.{fmt}")
            print(f"  .{fmt:<5} {time.perf_counter() - t0:7.2f} s  {path.stat().st_size / 1024:8.0f} KiB")


if __name__ == "__main__":
    main()
