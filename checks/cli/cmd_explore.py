"""Commands ``explore`` and ``variants``.

For example::

    $ flightcheck explore --scenario burst3-abort --release on-completion
    $ flightcheck explore --requests 3 --prompts 2 --aborts --json
    $ flightcheck explore --variant forget-at-release --render graph.svg
    $ flightcheck explore --scenario burst8-abort            # a scale scenario: the batched explorer
    $ flightcheck explore --scenario burst8 --no-symmetry --safety-only --engine batched
    $ flightcheck explore --scenario burst8-abort --workers 2   # the visited set over two Dask workers
    $ flightcheck variants
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer
from rich.console import Console
from rich.live import Live

from flightcheck.checks.cli.config_options import with_options
from flightcheck.checks.cli.policy_options import apply_policy, policy_changes, policy_parameters
from flightcheck.checks.suite.defaults import variant_scenario
from flightcheck.checks.errors import check_choice, usage_error
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS, Scenario, burst
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


def _explore_distributed(spec: Any, scheduler: Optional[str], workers: Optional[int], symmetry: bool,
                         max_states: int, props: Optional[list]) -> Any:
    """The distributed explorer on ``scheduler`` or an embedded cluster of ``workers``: the safety and
    deadlock properties (and the ``sometimes`` ones are left out: they need the whole graph kept)."""
    from flightcheck.checks.cluster import Cluster, ClusterError
    from flightcheck.checks.explore.distributed import KINDS, explore_distributed
    from flightcheck.spec.properties import properties_for

    chosen = [p for p in (props if props is not None else properties_for(spec)) if p.kind in KINDS]
    try:
        with Cluster(scheduler, workers=workers or 1) as cluster:
            return explore_distributed(spec, cluster, symmetry=symmetry, max_states=max_states, properties=chosen)
    except ClusterError as error:
        raise usage_error(str(error)) from None


def register(app: typer.Typer) -> None:
    """Add ``explore``, ``variants`` and ``check`` to the app."""

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
        from flightcheck.checks.explore.engine import ENGINES, explore_with
        from flightcheck.checks.explore.explorer import StateLimitExceeded
        from flightcheck.checks.explore.report import print_result
        from flightcheck.spec.properties import properties_for

        check_choice("engine", engine, ENGINES)

        policy_changes(policy)  # a bad choice is refused before anything is built
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
        scn = apply_policy(scn, policy)  # e.g. coordination on a scenario whose prefix caching is off: a usage error
        spec = v.build(scn)
        if render is not None and render.suffix.lower() not in (".dot", ".svg", ".png", ".html"):
            raise usage_error(f"--render must end in .dot, .svg, .png or .html; got {render.name!r}")
        if safety_only and render is not None:
            raise usage_error("--render needs the edges; leave out --safety-only")
        props = [p for p in properties_for(spec) if p.kind != "eventually"] if safety_only else None
        limit = int(memory_limit * 2**30) if memory_limit is not None else None
        distributed = scheduler is not None or workers is not None
        if distributed and (render is not None or engine != "auto" or memory_limit is not None):
            raise usage_error("--scheduler/--workers run the distributed explorer: leave out --render, --engine and "
                              "--memory-limit")
        if scheduler is not None and workers is not None:
            raise usage_error("--workers sizes the embedded cluster; with --scheduler the cluster's own workers run")
        try:
            if distributed:
                result = _explore_distributed(spec, scheduler, workers, symmetry, max_states, props)
            else:
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
            for k, part in enumerate(result.extra.get("per_worker", [])):
                console.print(f"  worker {k}: {part['states']:,} states, {part['rss_mib']:,.0f} MiB resident")
            if render is not None:
                console.print(f"graph written to {render}")
        raise typer.Exit(0 if result.ok else 1)

    app.command()(with_options(explore, policy_parameters()))

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
