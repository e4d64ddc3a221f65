"""Command ``bench``: the seed's seven experiments on the real engine, with tables, JSON and plots.

For example::

    $ flightcheck bench burst-8                       # 8 identical requests, 3 strategies, 3 runs each
    $ flightcheck bench all --out runs/bench          # all seven: NAME.md, NAME.json, NAME.png each
    $ flightcheck bench release-points --server local # through HTTP: a flightcheck server per run
    $ flightcheck bench burst-8 --server http://127.0.0.1:8000   # a running server, its own policy
    $ flightcheck bench overlap --out docs/bench      # shared-prefix sweep: none, single-flight, prefix
    $ flightcheck bench all --quick                   # tiny sizes (what the tests run)

Exit status: 0 when every run completed, 1 when a run failed (a request lost over HTTP, an engine
error), 2 on bad arguments (an unknown experiment, a server that cannot be reached).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from flightcheck.checks.errors import usage_error


def register(app: typer.Typer) -> None:
    """Adds ``bench`` to the command line."""

    @app.command()
    def bench(
        name: str = typer.Argument(..., help="an experiment (hot-prefix, cold-burst, incremental, release-points, "
                                   "burst-8, late-arrival, control, leader-abort, overlap) or all"),
        quick: bool = typer.Option(False, help="tiny sizes and one run per configuration (what the tests run)"),
        server: Optional[str] = typer.Option(None, help="run through HTTP: 'local' (a flightcheck server per run, "
                                             "in this process) or the URL of a running server (its own policy)"),
        out: Path = typer.Option(Path("runs/bench"), help="folder for NAME.md, NAME.json and NAME.png"),
        model: str = typer.Option("smollm2", help="smollm2 (the real model) or tiny (random weights)"),
        repeats: Optional[int] = typer.Option(None, help="runs per configuration (default 3, 1 with --quick)"),
    ) -> None:
        """Run the seed's experiments: every configuration in this process, medians of repeated runs."""
        from flightcheck.checks.bench import EXPERIMENTS
        from flightcheck.checks.bench.report import markdown, save
        from flightcheck.checks.bench.runner import num_runs, run_experiment

        console = Console()
        names = list(EXPERIMENTS) if name == "all" else [name]
        if names[0] not in EXPERIMENTS:
            raise usage_error(f"unknown experiment {name!r}; choose one of {', '.join(EXPERIMENTS)} or all")
        if model not in ("smollm2", "tiny"):
            raise usage_error(f"--model must be smollm2 or tiny, got {model!r}")
        runs_each = repeats if repeats is not None else (1 if quick else 3)
        if runs_each < 1:
            raise usage_error(f"--repeats must be >= 1, got {runs_each}")
        backend = _backend(server, model)
        total = sum(num_runs(EXPERIMENTS[n], backend, quick=quick, repeats=runs_each) for n in names)
        console.print(f"{backend.description}; {backend.mode}; {runs_each} run(s) per configuration", highlight=False)
        failed = []
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True) as bar:
            task = bar.add_task("starting", total=total)
            for experiment_name in names:
                experiment = EXPERIMENTS[experiment_name]
                try:
                    result = run_experiment(experiment, backend, quick=quick, repeats=runs_each,
                                            progress=lambda what: bar.update(task, advance=1, description=what))
                except Exception as error:  # a failed run is a failed row, never a silent pass
                    failed.append(experiment_name)
                    bar.console.print(f"[bold red]{experiment_name} failed:[/] {error}", highlight=False)
                    continue
                paths = save(result, out)
                bar.console.print(markdown(result), markup=False, highlight=False, soft_wrap=True)
                bar.console.print(f"saved {', '.join(str(p) for p in paths)}\n", highlight=False)
        if failed:
            raise typer.Exit(1)


def _backend(server: Optional[str], model: str):
    from flightcheck.checks.bench.runner import Backend
    from flightcheck.impl.model_file import ModelFileError

    if server is not None and server != "local":
        if not server.startswith(("http://", "https://")):
            raise usage_error(f"--server must be 'local' or an http:// URL, got {server!r}")
        try:
            return Backend.remote(server)
        except (OSError, ValueError, KeyError, IndexError) as error:
            raise usage_error(f"cannot reach an OpenAI-compatible server at {server}: {error}") from None
    try:
        backend = Backend.smollm2() if model == "smollm2" else Backend.tiny()
    except ModelFileError as error:
        raise usage_error(str(error)) from None
    return backend.local_http() if server == "local" else backend
