"""Command ``probe``: duplicated prefill counted on identical cold requests, inside the engine (the
leader held at a barrier) or, with ``--url``, from outside on any OpenAI-compatible server.

For example::

    $ flightcheck probe
    $ flightcheck probe --url http://127.0.0.1:8000/v1 --json --report out/
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from flightcheck.checks.errors import check_choice, loaded_model, usage_error


def register(app: typer.Typer) -> None:
    """Add ``probe`` to the app."""

    @app.command()
    def probe(
        model: Optional[str] = typer.Option(None, help="tiny | smollm2 (default tiny); with --url: the served "
                                            "model's name (default: the first one /v1/models lists)"),
        requests: int = typer.Option(8, min=2, max=32, help="Identical cold requests (the first one held)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        url: Optional[str] = typer.Option(None, help="Probe a live OpenAI-compatible server from outside "
                                          "(http://HOST:PORT/v1) instead of the engine in this process."),
        report: Optional[Path] = typer.Option(None, help="With --url: write index.html (plots) and probe.json here."),
        expect: Optional[str] = typer.Option(None, help="With --url: coalesce | recompute; exit 1 when the "
                                             "identical-request shapes say otherwise."),
        repeats: int = typer.Option(3, min=1, max=10, help="With --url: runs of each shape (interleaved)."),
        shared_pages: int = typer.Option(4, min=1, max=64, help="With --url: KV pages of the shared part."),
        timeout: float = typer.Option(60.0, min=1, max=3600, help="With --url: seconds per request."),
        max_total_tokens: int = typer.Option(200_000, min=1, help="With --url: refuse to send more tokens in all."),
        seed: Optional[int] = typer.Option(None, help="With --url: the nonces' random seed."),
    ) -> None:
        """Hold the leader at a barrier while identical cold requests arrive; count duplicated prefill work.
        With --url: measure the same, from outside, on any OpenAI-compatible server."""
        if url is not None:
            from flightcheck.checks.outside.run import probe_url_command

            raise typer.Exit(probe_url_command(url, model, as_json=as_json, report=report, expect=expect,
                                               repeats=repeats, shared_pages=shared_pages, timeout=timeout,
                                               max_total_tokens=max_total_tokens, seed=seed))
        for name, value in (("report", report), ("expect", expect), ("seed", seed)):
            if value is not None:
                raise usage_error(f"--{name} goes with --url (the outside probe)")
        from flightcheck.checks.conform.probe import probe as run_probe

        model = model or "tiny"
        check_choice("model", model, ("tiny", "smollm2"))
        loaded_model(model)
        results = [run_probe(c, model=model, num_requests=requests) for c in ("none", "single-flight")]
        ok = all(r.conformed for r in results) and set(results[1].computations_per_page) == {1}
        if as_json:
            print(json.dumps({"ok": ok, "results": [r.to_json() for r in results]}))
        else:
            t = Table(title=f"probe: {requests} identical requests on a cold cache, the first held before its prefill")
            for col in ("coordination", "lookups", "page allocations", "computations per shared page",
                        "destination pages per shared page", "recovered tokens", "conforms"):
                t.add_column(col, overflow="fold")
            for r in results:
                t.add_row(r.coordination, str(r.prefix_lookups), str(r.page_allocations),
                          str(r.computations_per_page), str(r.destinations_per_page), str(r.recovered_tokens),
                          "yes" if r.conformed else "NO")
            Console().print(t)
        raise typer.Exit(0 if ok else 1)
