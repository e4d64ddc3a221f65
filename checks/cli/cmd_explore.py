"""Command ``explore``: a scenario's state graph explored exhaustively, every property checked.

For example::

    $ flightcheck explore --scenario burst3-abort --release on-completion
    $ flightcheck explore --requests 3 --prompts 2 --aborts --json
    $ flightcheck explore --variant forget-at-release --render graph.svg
    $ flightcheck explore --scenario burst8-abort            # a scale scenario: the batched explorer
    $ flightcheck explore --scenario burst8 --no-symmetry --safety-only --engine batched
    $ flightcheck explore --scenario burst8-abort --workers 2   # the visited set over two Dask workers
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from flightcheck.checks.cli.config_options import with_options
from flightcheck.checks.cli.explore_options import build_scenario, explore_distributed_or_exit, progress_display
from flightcheck.checks.cli.policy_options import apply_policy, policy_changes, policy_parameters
from flightcheck.checks.suite.defaults import variant_scenario
from flightcheck.checks.errors import check_choice, usage_error
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS
from flightcheck.spec.variants import VARIANTS


def register(app: typer.Typer) -> None:
    """Add ``explore`` to the app."""

    def explore(
        scenario: Optional[str] = typer.Option(
            None, help=f"A default scenario ({', '.join(SCENARIOS)}) or a scale one ({', '.join(SCALE_SCENARIOS)})."),
        requests: Optional[int] = typer.Option(None, help="A burst of N requests instead of a named scenario."),
        prompts: int = typer.Option(1, help="Prompt classes in the burst (with --requests)."),
        pages: int = typer.Option(2, help="Full prompt pages per request (with --requests)."),
        decode: int = typer.Option(1, help="Decode steps per request (with --requests)."),
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
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS",
                                                help="Partition the visited set over this Dask scheduler's workers "
                                                     "(tcp://HOST:PORT): safety and deadlock only."),
        workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Partition the visited set over an "
                                              "embedded Dask cluster of N worker processes: safety and deadlock only."),
        render: Optional[Path] = typer.Option(None, help="Write the graph: .dot, .svg, .png or .html."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Run the exploration even if this very run was done "
                                      "before with the same code (the console script replays such a run's output "
                                      "from ~/.cache/flightcheck/results; FLIGHTCHECK_RESULT_CACHE=0 does the same)."),
        **policy: Any,
    ) -> None:
        """Explore a scenario's state graph exhaustively and check every property."""
        del no_cache  # read by the console script before this command is built (checks/cli/result_cache.py)
        from flightcheck.checks.explore.choose import ENGINES
        from flightcheck.checks.explore.explorer import StateLimitExceeded
        from flightcheck.checks.explore.job import ExploreJob, JobError, draw, result_json
        from flightcheck.checks.explore.report import print_result

        check_choice("engine", engine, ENGINES)
        policy_changes(policy)  # a bad choice is refused before anything is built
        if variant not in VARIANTS:
            raise usage_error(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        if scenario is None and requests is None:
            scn = variant_scenario(variant)  # the variant's own default, as every command uses it
            opts = {k: True for k, val in (("aborts", aborts), ("notifications", notifications),
                                           ("eviction", eviction)) if val}
            scn = scn.with_options(**opts) if opts else scn
        else:
            scn = build_scenario(scenario, requests, prompts, aborts=aborts, notifications=notifications,
                                 eviction=eviction, pages=pages, decode=decode)
        scn = apply_policy(scn, policy)  # e.g. coordination on a scenario whose prefix caching is off: a usage error
        spec = VARIANTS[variant].build(scn)
        job = ExploreJob(engine=engine, symmetry=symmetry, max_states=max_states, memory_limit=memory_limit,
                         safety_only=safety_only, scheduler=scheduler, workers=workers, render=render)
        try:
            job.check()
            if job.distributed:
                result = explore_distributed_or_exit(spec, scheduler, workers, symmetry, max_states,
                                                     job.properties(spec))
            else:
                with progress_display() as show:
                    result = job.run(spec, progress=show)
        except (JobError, StateLimitExceeded) as e:
            raise usage_error(str(e))
        if render is not None:
            from flightcheck.checks.explore.picture import RenderError
            from flightcheck.checks.explore.state_graph import GraphTooLarge  # numpy: only when drawing

            try:
                draw(result, render, VARIANTS[variant].expected_violation)
            except (RenderError, GraphTooLarge) as e:
                raise usage_error(str(e))
        if as_json:
            print(json.dumps(result_json(result, scn, variant)))
        else:
            console = Console()
            print_result(console, result, title=f"{scn.name} · {scn.policy.label()} · variant {variant}")
            console.print(f"explorer: {result.extra.get('engine', 'reference')}")
            for k, part in enumerate(result.extra.get("per_worker", [])):
                console.print(f"  worker {k}: {part['states']:,} states, {part['rss_mib']:,.0f} MiB resident")
            if render is not None:
                console.print(f"graph written to {render}")
        raise typer.Exit(0 if result.ok else 1)

    app.command()(with_options(explore, policy_parameters()))
