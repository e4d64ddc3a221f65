"""Running an experiment: every configuration in this process, repeats interleaved, medians.

A :class:`Backend` makes a fresh target for each run: an engine over weights loaded once
(``in-process``), a flightcheck server per run on a free loopback port over the same weights,
driven through HTTP by concurrent ``openai`` clients (``--server local``), or a running server at a
URL (``--server URL``: that server's own policy is the only configuration; fresh prompts keep every
run's cache cold). Repeats are interleaved (repeat 1 of every configuration, then repeat 2, ...) so
that a machine whose load drifts weighs on every configuration alike; one short warm-up run per
configuration goes first and is not counted.

For example::

    >>> from flightcheck.checks.bench import EXPERIMENTS
    >>> result = run_experiment(EXPERIMENTS["cold-burst"], Backend.tiny(), quick=True, repeats=1)
    >>> [row["metrics"]["recovered_total"] for row in result.rows]
    [0]
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any

from flightcheck.checks.bench.experiment import BASE_POLICY, Config, Experiment, RunRecord, Sizes
from flightcheck.checks.bench.target import EngineTarget, HttpTarget
from flightcheck.checks.bench.workload import prompt_ids
from flightcheck.impl.pages import PAGE_SIZE


class Backend:
    """Makes targets: ``tiny()``/``smollm2()`` in process, ``.local_http()`` or ``remote(url)`` over HTTP."""

    def __init__(self, kind: str, *, weights: Any = None, url: str | None = None, description: str = "") -> None:
        self.kind, self.weights, self.url, self.description = kind, weights, url, description
        self.mode = "in-process"
        self.remote_policy: dict[str, Any] | None = None
        self.remote_model: str | None = None

    @classmethod
    def tiny(cls) -> "Backend":
        from flightcheck.impl.tiny import tiny_model

        return cls("tiny", weights=tiny_model(0), description="tiny random Llama (2 layers, hidden 64)")

    @classmethod
    def smollm2(cls) -> "Backend":
        from flightcheck.impl.gguf import load_smollm2

        # float32 weights: the fast CPU path, whatever the loader's timed BLAS probe says on a busy machine
        weights = load_smollm2(dequantize=True)
        info = weights[2]
        return cls("smollm2", weights=weights, description=f"{info.name} (fp32 dequantized; {info.blas})")

    def local_http(self) -> "Backend":
        self.mode = "local-http"
        return self

    @classmethod
    def remote(cls, url: str) -> "Backend":
        """A running server; its model and (for a flightcheck server) its policy read from it."""
        import json
        import urllib.request

        base = url.rstrip("/").removesuffix("/v1")
        backend = cls("remote", url=base + "/v1")
        backend.mode = "remote"
        with urllib.request.urlopen(base + "/v1/models", timeout=30) as reply:
            backend.remote_model = json.loads(reply.read())["data"][0]["id"]
        try:
            with urllib.request.urlopen(base + "/info", timeout=30) as reply:
                info = json.loads(reply.read())
            backend.remote_policy = info.get("config")
            backend.description = f"server at {base}: {info.get('model')}"
        except OSError:
            backend.description = f"server at {base}: {backend.remote_model}"
        return backend

    @property
    def tokenizer(self) -> Any:
        return self.weights[1] if self.kind == "smollm2" else None

    def configs(self, experiment: Experiment) -> list[Config]:
        if self.mode != "remote":
            return experiment.configs
        policy = self.remote_policy or {}
        label = "server" if not policy else (f"server ({policy.get('coordination')}, release {policy.get('release')}, "
                                             f"publication {policy.get('publication')})")
        return [Config(label, {})]

    def engine(self, config: Config, num_pages: int) -> Any:
        from flightcheck.impl.config import EngineConfig
        from flightcheck.impl.engine import Engine
        from flightcheck.impl.runner import ModelRunner

        engine_config = EngineConfig(**{**BASE_POLICY, **config.policy, "num_pages": num_pages})
        if self.kind == "smollm2":
            return Engine.smollm2(engine_config, model=self.weights)
        return Engine(ModelRunner(self.weights, num_pages=num_pages), config=engine_config, model_name="tiny")

    def target(self, config: Config, num_pages: int, stack: ExitStack) -> Any:
        """A fresh target for one run (its server, if any, closed by ``stack``)."""
        if self.mode == "remote":
            return HttpTarget(self.url, self.remote_model)
        engine = self.engine(config, num_pages)
        if self.mode == "in-process":
            return EngineTarget(engine)
        from flightcheck.impl.server import Server

        server = stack.enter_context(Server(engine, port=0))
        return HttpTarget(server.url + "/v1", server.model_id)


@dataclass
class RunContext:
    """What one run sees: its configuration, cell, sizes, fresh targets and prompts."""

    backend: Backend
    config: Config
    cell: int | None
    sizes: Sizes
    nonce: str
    stack: ExitStack

    def target(self, num_requests: int | None = None) -> Any:
        """A fresh target with room for ``num_requests`` requests at once (default: the cell, plus one)."""
        num_requests = num_requests or (self.cell or 2) + 1
        pages = -(-(self.sizes.prompt_tokens + self.sizes.max_tokens + 1) // PAGE_SIZE) * num_requests * 2 + 32
        return self.backend.target(self.config, pages, self.stack)

    def prompt(self, length: int, tag: str) -> list[int]:
        return prompt_ids(self.backend.tokenizer, length, f"{self.nonce} {tag}")


@dataclass
class ExperimentResult:
    """Every run, and per (cell, configuration) the medians of its metrics."""

    experiment: Experiment
    sizes: Sizes
    repeats: int
    backend: str
    mode: str
    runs: list[RunRecord] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


def run_experiment(experiment: Experiment, backend: Backend, *, quick: bool = False, repeats: int = 3,
                   sizes: Sizes | None = None, progress: Callable[[str], None] | None = None) -> ExperimentResult:
    """Runs every configuration of ``experiment`` in every cell ``repeats`` times; medians per row."""
    sizes = sizes or (experiment.quick if quick else experiment.full)
    configs = backend.configs(experiment)
    cells = experiment.cells(sizes)
    result = ExperimentResult(experiment, sizes, repeats, backend.description, backend.mode)
    warm = replace(sizes, prompt_tokens=min(sizes.prompt_tokens, 48), max_tokens=2)
    for config in configs:  # warm-up: MLX builds its kernels on first use; not counted
        _one(experiment, backend, config, cells[0], warm, "warm-up")
    for repeat in range(repeats):
        for cell in cells:
            for config in configs:
                metrics = _one(experiment, backend, config, cell, sizes, f"r{repeat} {config.label} {cell}")
                result.runs.append(RunRecord(config.label, cell, repeat, metrics))
                if progress is not None:
                    progress(f"{experiment.name}: {config.label}" + (f", N={cell}" if cell else ""))
    for cell in cells:
        for config in configs:
            runs = [r.metrics for r in result.runs if r.cell == cell and r.config == config.label]
            result.rows.append({"cell": cell, "config": config.label, "metrics": _medians(runs)})
    return result


def num_runs(experiment: Experiment, backend: Backend, *, quick: bool, repeats: int, sizes: Sizes | None = None) -> int:
    sizes = sizes or (experiment.quick if quick else experiment.full)
    return len(backend.configs(experiment)) * len(experiment.cells(sizes)) * repeats


def _one(experiment: Experiment, backend: Backend, config: Config, cell: int | None, sizes: Sizes, nonce: str) -> dict:
    with ExitStack() as stack:
        return experiment.run(RunContext(backend, config, cell, sizes, f"{experiment.name} {nonce}", stack))


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each numeric metric over the runs; other values from the first run."""
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        values = [r[key] for r in runs]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = statistics.median(values)
        else:
            out[key] = value
    return out
