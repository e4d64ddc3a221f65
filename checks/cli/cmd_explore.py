"""Commands ``explore``, ``variants`` and ``check``.

For example::

    $ flightcheck explore --scenario burst3-abort --release on-completion
    $ flightcheck explore --requests 3 --prompts 2 --aborts --json
    $ flightcheck explore --variant forget-at-release --render graph.svg
    $ flightcheck explore --scenario burst8-abort            # a scale scenario: the batched explorer
    $ flightcheck explore --scenario burst8 --no-symmetry --safety-only --engine batched
    $ flightcheck variants
    $ flightcheck check                       # ends naming the report: report: flightcheck-report/index.html
    $ flightcheck check --quick --report out/ --json
    $ flightcheck check --baseline origin/main                  # what behaviour changed since main
    $ flightcheck check --since HEAD~3                          # only the stages the change can affect
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer
from rich.console import Console
from rich.live import Live

from flightcheck.checks.suite.defaults import variant_scenario
from flightcheck.checks.errors import check_choice, usage_error
from flightcheck.spec.scenario import (
    COORDINATIONS, PUBLICATIONS, RELEASES, SCALE_SCENARIOS, SCENARIOS, Scenario, burst,
)
from flightcheck.spec.variants import VARIANTS


def build_scenario(scenario: Optional[str], requests: Optional[int], prompts: int, *, aborts: bool,
                   notifications: bool, eviction: bool, pages: int, decode: int) -> Scenario:
    """The scenario named on the command line, or a burst of ``requests`` over ``prompts`` classes."""
    if scenario is not None and requests is not None:
        raise usage_error("give either --scenario or --requests/--prompts, not both")
    if requests is not None:
        if not 1 <= requests <= 10:
            raise usage_error(f"--requests must be between 1 and 10 (the graph grows fast); got {requests}")
        if not 1 <= prompts <= requests:
            raise usage_error(f"--prompts must be between 1 and --requests ({requests}); got {prompts}")
        if not 1 <= pages <= 4 or not 0 <= decode <= 3:
            raise usage_error("--pages must be 1..4 and --decode 0..3")
        return burst(requests, classes=prompts, pages=pages, decode=decode, aborts=aborts,
                     notifications=notifications, eviction=eviction)
    name = scenario or "burst2"
    known = {**SCENARIOS, **SCALE_SCENARIOS}
    if name not in known:
        raise usage_error(f"unknown scenario {name!r}; known: {', '.join(known)}")
    scn = known[name]
    opts = {k: True for k, v in (("aborts", aborts), ("notifications", notifications), ("eviction", eviction)) if v}
    return scn.with_options(**opts) if opts else scn


@contextmanager
def progress_display() -> Iterator[Callable[[Any], None]]:
    """A progress callback for long explorations: states, depth, rate and memory on stderr.

    Nothing is shown when stderr is not a terminal, or before the run has taken a second.
    """
    console = Console(stderr=True)
    live: list[Live] = []

    def show(p: Any) -> None:
        if not console.is_terminal or p.seconds < 1.0:
            return
        text = (f"exploring: {p.states:,} states, depth {p.depth} (frontier {p.frontier:,}), "
                f"{p.states_per_second:,.0f} states/s, {p.memory_bytes / 2**30:.2f} GiB")
        if not live:
            live.append(Live(text, console=console, transient=True, refresh_per_second=4))
            live[0].start()
        live[0].update(text)

    try:
        yield show
    finally:
        if live:
            live[0].stop()


def register(app: typer.Typer) -> None:
    """Add ``explore``, ``variants`` and ``check`` to the app."""

    @app.command()
    def explore(
        scenario: Optional[str] = typer.Option(
            None, help=f"A default scenario ({', '.join(SCENARIOS)}) or a scale one ({', '.join(SCALE_SCENARIOS)})."),
        requests: Optional[int] = typer.Option(None, help="A burst of N requests instead of a named scenario."),
        prompts: int = typer.Option(1, help="Prompt classes in the burst (with --requests)."),
        pages: int = typer.Option(2, help="Full prompt pages per request (with --requests)."),
        decode: int = typer.Option(1, help="Decode steps per request (with --requests)."),
        release: Optional[str] = typer.Option(None, help="after-prefill | on-completion"),
        publication: Optional[str] = typer.Option(None, help="incremental | on-completion"),
        coordination: Optional[str] = typer.Option(None, help="single-flight | prefix | none"),
        capacity: Optional[int] = typer.Option(None, min=1, help="Running capacity."),
        chunk: Optional[int] = typer.Option(None, min=1, help="Prefill chunk in pages."),
        min_shared_pages: Optional[int] = typer.Option(None, min=1, help="Prefix coordination: the least overlap, in "
                                                      "shareable pages, a request waits via another prompt's flight for."),
        aborts: bool = typer.Option(False, "--aborts", help="Let the client cancel any live request."),
        notifications: bool = typer.Option(False, "--notifications", help="Send bogus termination notifications."),
        eviction: bool = typer.Option(False, "--eviction", help="Let unreferenced pages be evicted."),
        variant: str = typer.Option("correct", help=f"Design variant: {', '.join(VARIANTS)}."),
        symmetry: bool = typer.Option(True, help="Merge states that differ by renaming interchangeable requests."),
        max_states: int = typer.Option(2_000_000, min=1, help="Give up beyond this many states."),
        engine: str = typer.Option("auto", help="auto (reference on small graphs, batched above) | reference | batched | "
                                               "compiled (batched, the spec compiled by numba: for millions of states)."),
        memory_limit: Optional[float] = typer.Option(None, min=0.01, help="Memory bound in GiB (default: 3/4 of what is free)."),
        safety_only: bool = typer.Option(False, "--safety-only", help="Skip liveness and keep no edges (much less memory)."),
        render: Optional[Path] = typer.Option(None, help="Write the graph: .dot, .svg, .png or .html."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
    ) -> None:
        """Explore a scenario's state graph exhaustively and check every property."""
        from flightcheck.checks.explore.engine import ENGINES, explore_with
        from flightcheck.checks.explore.explorer import StateLimitExceeded
        from flightcheck.checks.explore.report import print_result
        from flightcheck.spec.properties import properties_for

        check_choice("engine", engine, ENGINES)

        check_choice("release", release, RELEASES)
        check_choice("publication", publication, PUBLICATIONS)
        check_choice("coordination", coordination, COORDINATIONS)
        if variant not in VARIANTS:
            raise usage_error(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        v = VARIANTS[variant]
        if scenario is None and requests is None:
            scn = variant_scenario(variant)  # the variant's own default, as every command uses it
            opts = {k: True for k, val in (("aborts", aborts), ("notifications", notifications),
                                           ("eviction", eviction)) if val}
            scn = scn.with_options(**opts) if opts else scn
        else:
            scn = build_scenario(scenario, requests, prompts, aborts=aborts, notifications=notifications,
                                 eviction=eviction, pages=pages, decode=decode)
        changes = {k: val for k, val in (("release", release), ("publication", publication),
                                         ("coordination", coordination), ("capacity", capacity),
                                         ("chunk", chunk), ("min_shared_pages", min_shared_pages)) if val is not None}
        try:
            scn = scn.with_policy(**changes) if changes else scn
        except ValueError as error:  # e.g. coordination on a scenario whose prefix caching is off
            raise usage_error(f"bad policy: {error}")
        spec = v.build(scn)
        if render is not None and render.suffix.lower() not in (".dot", ".svg", ".png", ".html"):
            raise usage_error(f"--render must end in .dot, .svg, .png or .html; got {render.name!r}")
        if safety_only and render is not None:
            raise usage_error("--render needs the edges; leave out --safety-only")
        props = [p for p in properties_for(spec) if p.kind != "eventually"] if safety_only else None
        limit = int(memory_limit * 2**30) if memory_limit is not None else None
        try:
            with progress_display() as show:
                result = explore_with(spec, engine=engine, symmetry=symmetry, max_states=max_states,
                                      properties=props, memory_limit=limit,
                                      keep_edges=False if safety_only else None, progress=show)
        except StateLimitExceeded as e:
            raise usage_error(str(e))
        if render is not None:
            from flightcheck.checks.explore.picture import RenderError
            from flightcheck.checks.explore.render import render_result
            from flightcheck.checks.explore.state_graph import GraphTooLarge
            from flightcheck.checks.explore.violating import violating_states
            must = v.expected_violation
            highlight = violating = None
            if must is not None and not result.result(must).holds:  # the path of the property it must violate
                highlight = result.result(must).counterexample
                violating = (must, violating_states(result, must))
            try:
                render_result(result, render, highlight=highlight, violating=violating)
            except (RenderError, GraphTooLarge) as e:
                raise usage_error(str(e))
        if as_json:
            out = result.to_json()
            out.update(scenario=scn.name, variant=variant, policy=scn.policy.__dict__)
            out.setdefault("engine", "reference")
            print(json.dumps(out))
        else:
            console = Console()
            title = f"{scn.name} · {scn.policy.label()} · variant {variant}"
            print_result(console, result, title=title)
            console.print(f"explorer: {result.extra.get('engine', 'reference')}")
            if render is not None:
                console.print(f"graph written to {render}")
        raise typer.Exit(0 if result.ok else 1)

    @app.command()
    def variants(as_json: bool = typer.Option(False, "--json", help="Print a JSON list.")) -> None:
        """List the design-history variants, each with the property it must violate and the default scenario
        and policy every command runs it on."""
        rows = [{"name": v.name, "expected_violation": v.expected_violation, "story": v.story,
                 "scenario": variant_scenario(v.name).name, "policy": variant_scenario(v.name).policy.label()}
                for v in VARIANTS.values()]
        if as_json:
            print(json.dumps(rows))
            return
        from rich.table import Table
        t = Table(title="design variants")
        for col in ("name", "must violate", "default scenario", "story"):
            t.add_column(col)
        for r in rows:
            t.add_row(r["name"], r["expected_violation"] or "[green](correct)[/]", f"{r['scenario']}\n{r['policy']}",
                      r["story"])
        Console().print(t)

    @app.command()
    def check(
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
        quick: bool = typer.Option(False, "--quick", help="Skip the real model and the largest scenarios; replay "
                                   "each scenario's corpus under its own policy only."),
        budget: Optional[float] = typer.Option(None, "--budget", min=1, metavar="SECONDS",
                                               help="Random conformance programs beyond the seeded campaign."),
        model: str = typer.Option("tiny", help="tiny | smollm2: the model the conformance stage drives."),
        record: bool = typer.Option(False, "--record", help="Merge this run's figures into the recorded ones (only "
                                    "from a run where every row passed; figures of stages not run are kept)."),
        expectations: Optional[Path] = typer.Option(None, "--expectations", metavar="FILE",
                                                    help="The recorded figures file (default: the package's)."),
        stage: Optional[list[str]] = typer.Option(None, "--stage", help="Run only this stage (repeatable)."),
        report: str = typer.Option("flightcheck-report", "--report", metavar="DIR",
                                   help="Write the HTML report (index.html, graphs/) into DIR."),
        no_report: bool = typer.Option(False, "--no-report", help="Write no report."),
        baseline: Optional[str] = typer.Option(None, "--baseline", metavar="REF",
                                               help="Compare the working tree's behaviour with git REF's (state "
                                               "graphs, verdicts, counterexamples, variants), each by its own code; "
                                               "exit 1 when a verdict regressed."),
        since: Optional[str] = typer.Option(None, "--since", metavar="REF",
                                            help="Run only the stages a change since git REF can affect."),
        strict: bool = typer.Option(False, "--strict", help="With --baseline: any behaviour change fails (exit 1)."),
        scenario: Optional[list[str]] = typer.Option(None, "--scenario",
                                                     help="With --baseline: compare only this default scenario "
                                                     "(repeatable)."),
    ) -> None:
        """The main job: every check flightcheck has, over the default scenarios, with a summary and a
        static HTML report (opens from disk; its path is the last line). Exit 0 passed, 1 a check failed,
        2 bad arguments (or a refused --record), 3 flightcheck itself failed (the run is not a verdict).
        With --baseline REF: what behaviour changed since REF, instead of the stages (exit 1 when a verdict
        regressed)."""
        from flightcheck.checks.suite.expect import EXPECTATIONS_PATH, load, writable
        from flightcheck.checks.faults import EXIT_FAILED, EXIT_FAULT, EXIT_OK
        from flightcheck.checks.suite.job import STAGES, RecordRefused, run_suite

        check_choice("model", model, ("tiny", "smollm2"))
        known = [s for s, _p, _m in STAGES]
        for s in stage or []:
            if s not in known:
                raise usage_error(f"unknown --stage {s!r}; known: {', '.join(known)}")
        if baseline is not None and (since is not None or stage or record):
            raise usage_error("--baseline compares two commits' graphs; it takes no --since, --stage or --record")
        if (strict or scenario) and baseline is None:
            raise usage_error("--strict and --scenario go with --baseline REF")
        report_dir = None if no_report else _report_folder(report)
        if baseline is not None:
            from flightcheck.checks.review.command import baseline_command
            raise typer.Exit(baseline_command(baseline, scenarios=scenario, quick=quick, strict=strict,
                                              as_json=as_json, report_dir=report_dir))
        book = expectations or EXPECTATIONS_PATH
        load(book, missing_ok=record)  # a missing or malformed file is said now, not after the whole job
        if record and (why := writable(book)) is not None:
            raise usage_error(f"--record cannot write {book}: {why}")
        try:
            if since is not None:
                from flightcheck.checks.review.command import since_command
                result = since_command(since, known=known, stage=stage, as_json=as_json, run=lambda todo: run_suite(
                    as_json=as_json, quick=quick, budget=budget, model=model, record=record, stages=todo,
                    report_dir=report_dir, expectations=book))
            else:
                result = run_suite(as_json=as_json, quick=quick, budget=budget, model=model, record=record,
                                   stages=stage, report_dir=report_dir, expectations=book)
        except RecordRefused as refused:
            raise usage_error(str(refused)) from None
        raise typer.Exit({"ok": EXIT_OK, "failed": EXIT_FAILED}.get(result, EXIT_FAULT))


def _report_folder(text: str) -> Path:
    """``--report DIR`` checked before anything runs: not empty, a folder (made now if absent) that can
    be written."""
    import os

    if not text.strip():
        raise usage_error("--report must name a folder; got an empty path (use --no-report for none)")
    folder = Path(text)
    try:
        if folder.exists() and not folder.is_dir():
            raise usage_error(f"--report {folder}: exists and is not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise usage_error(f"--report {folder}: the folder cannot be written")
    except OSError as error:
        raise usage_error(f"--report {folder}: {error.strerror or error}") from None
    return folder
