"""``flightcheck probe --url``: the outside probe run from the command line, kept out of the CLI module.

Exit status: 0 when the probe ran (its verdicts are measurements), 1 when ``--expect`` disagrees with
the identical-request shapes, 2 when the server cannot be probed (unreachable, erroring, too slow, not
OpenAI-compatible) or an option is wrong, with one line on standard error.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from flightcheck.checks.outside.client import ProbeError
from flightcheck.checks.outside.probe import Options, Report, run
from flightcheck.checks.outside.report import format_text, write_html

EXPECTATIONS = {"coalesce": "coalesces", "recompute": "recomputes"}


def probe_url(url: str, model: str | None = None, opts: Options | None = None) -> Report:
    """Runs the outside probe to its end (its streams all closed, also on Ctrl-C) and returns the report."""
    return asyncio.run(run(url, model, opts))


def expectation_met(report: Report, expect: str) -> bool:
    """Whether every identical-request shape's verdict is the expected one (coalesce or recompute)."""
    kinds = report.identical_kinds()
    return bool(kinds) and all(k == EXPECTATIONS[expect] for k in kinds)


def probe_url_command(url: str, model: str | None, *, as_json: bool, report: Path | None, expect: str | None,
                      repeats: int, shared_pages: int, timeout: float, max_total_tokens: int,
                      seed: int | None) -> int:
    """What ``probe --url`` does; returns the exit status (usage errors raise the CLI's exit 2)."""
    from flightcheck.checks.errors import check_choice, usage_error

    check_choice("expect", expect, tuple(EXPECTATIONS))
    opts = Options(shared_pages=shared_pages, repeats=repeats, timeout_s=timeout,
                   max_total_tokens=max_total_tokens, seed=seed)
    try:
        result = probe_url(url, model, opts)
    except ProbeError as error:
        raise usage_error(str(error).splitlines()[0]) from None
    page = None
    if report is not None:
        try:
            page = write_html(result, report)
        except OSError as error:
            raise usage_error(f"cannot write the report into {report}: {error.strerror or error}") from None
    met = None if expect is None else expectation_met(result, expect)
    if as_json:
        print(json.dumps({**result.to_json(), "expect": expect, "expectation_met": met}))
    else:
        print(format_text(result))
        if page is not None:
            print(f"report: {page}")
        if met is not None:
            print(f"--expect {expect}: {'met' if met else 'NOT met'} (identical shapes: "
                  f"{', '.join(result.identical_kinds())})")
    sys.stdout.flush()
    return 1 if met is False else 0


__all__ = ["EXPECTATIONS", "expectation_met", "probe_url", "probe_url_command"]
