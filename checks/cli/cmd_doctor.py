"""Command ``doctor``: is the fast path in effect (OpenBLAS under MLX), which MLX and device, and is the
model file there and intact?

For example::

    $ flightcheck doctor
    $ flightcheck doctor --json

Exit 1 when the fast BLAS is not in effect on Linux, 2 when the model file is missing or corrupt (bad
input, as for every command that loads a model); each finding says how to fix it.
"""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the app."""

    @app.command()
    def doctor(
        as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
        model_path: Optional[str] = typer.Option(None, "--model", help="GGUF file to check (default: the cache)."),
    ) -> None:
        """Check the fast CPU path (OpenBLAS under MLX), MLX's version and device, and the model file."""
        import platform

        from flightcheck.impl.blas import blas_status
        from flightcheck.impl.model_file import FILE_SHA256, ModelFileError, locate

        status = blas_status()
        try:
            model_file, model_ok, model_note = str(locate(model_path)), True, f"sha256 {FILE_SHA256[:16]}... ok"
        except ModelFileError as exc:
            # Why not resolve() again: an empty --model has no file to name, and resolving raises again.
            model_file = str(exc.path) if exc.path is not None else repr(model_path)
            model_ok, model_note = False, str(exc)
        findings = {
            "platform": f"{platform.system()} {platform.machine()}",
            "mlx_version": status.mlx_version,
            "mlx_device": status.device,
            "blas_library": status.loaded_path,
            "matmul_gflops": round(status.matmul_gflops, 1),
            "fast_blas": status.is_fast,
            "blas": status.describe(),
            "model_file": model_file,
            "model_ok": model_ok,
            "model": model_note,
        }
        if as_json:
            print(json.dumps(findings, indent=2))
        else:
            table = Table(title="flightcheck doctor", show_header=False)
            table.add_column("item", no_wrap=True)
            table.add_column("finding", overflow="fold")
            mark = {True: "[green]ok[/]", False: "[bold red]PROBLEM[/]"}
            table.add_row("platform", findings["platform"])
            table.add_row("MLX", f"{status.mlx_version} on {status.device}")
            table.add_row("BLAS", f"{mark[status.is_fast]} {status.describe()}")
            table.add_row("model file", f"{mark[model_ok]} {model_file}: {model_note}")
            Console().print(table)
        if not model_ok:
            raise typer.Exit(2)  # a missing or corrupt model file: bad input, whatever the BLAS
        if not status.is_fast:
            raise typer.Exit(1)
