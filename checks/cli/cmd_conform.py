"""Commands ``conform``, ``validate``, ``replay``, ``probe`` and ``coverage``: the engine checked against the spec.

For example::

    $ flightcheck conform --examples 50 --release on-completion
    $ flightcheck conform --mutant forget-released          # a broken engine: exit 1 with the shrunk run
    $ flightcheck validate events.jsonl --release after-prefill --publication incremental
    $ flightcheck explore --variant forget-at-release --json > cx.json
    $ flightcheck replay cx.json --mutant forget-released
    $ flightcheck probe
    $ flightcheck coverage --scenario burst2 --runs 60 --png cov.png --render burst2.svg
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from flightcheck.checks.cli.config_options import with_options
from flightcheck.checks.cli.policy_options import policy_changes, policy_parameters
from flightcheck.checks.errors import check_choice, loaded_model, usage_error
from flightcheck.checks.inputs import shown
from flightcheck.spec.scenario import COORDINATIONS, LEADER_LOSSES, PUBLICATIONS, RELEASES, SCENARIOS, Policy


def _mutant(name: Optional[str]):
    from flightcheck.checks.conform.mutants import MUTANTS
    if name is None:
        return None
    if name not in MUTANTS:
        raise usage_error(f"unknown --mutant {shown(name)}; known: {', '.join(MUTANTS)}")
    return MUTANTS[name]


def _read_program(path: Path):
    """A saved conformance program, every field checked (:func:`~flightcheck.checks.conform.program.read_program`),
    or a usage error (exit 2) naming the file and the field."""
    from flightcheck.checks.conform.program import read_program
    from flightcheck.checks.inputs import InputError

    try:
        return read_program(path)
    except InputError as error:
        raise usage_error(str(error)) from None


def _check_program_for_model(program, path: Path, model: str) -> None:
    """What of a program depends on the model (token ids, context, pages, the pool's memory), checked
    before any engine runs: a program the engine would refuse is bad input (exit 2), not a departure."""
    from flightcheck.checks.conform.program import check_for_model, model_limits
    from flightcheck.checks.inputs import InputError

    vocab, context, page_bytes = model_limits(model)
    try:
        check_for_model(program, str(path), vocab=vocab, context=context, page_bytes=page_bytes)
    except InputError as error:
        raise usage_error(str(error)) from None


def _print(console: Console, text: str) -> None:
    """Print text that quotes the input (a diagnosis, a failing run) as it is: no markup, escaped."""
    from flightcheck.checks.inputs import printable

    console.print(printable(text), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``conform``, ``validate``, ``replay``, ``probe`` and ``coverage`` to the app."""

    @app.command()
    def conform(
        model: str = typer.Option("tiny", help="tiny | smollm2"),
        examples: int = typer.Option(30, min=1, help="Hypothesis examples (engine runs) per campaign."),
        seconds: Optional[float] = typer.Option(None, min=1, help="Keep running campaigns for this long."),
        release: Optional[str] = typer.Option(None, help="Fix the release point (default: Hypothesis picks)."),
        publication: Optional[str] = typer.Option(None, help="Fix the publication policy."),
        coordination: Optional[str] = typer.Option(None, help="Fix the coordination."),
        max_rules: int = typer.Option(25, min=1, help="Rules per run."),
        leader_loss: Optional[str] = typer.Option(None, "--leader-loss", help="Fix the leader-loss policy."),
        seed: Optional[int] = typer.Option(None, help="Hypothesis seed, for a repeatable campaign."),
        mutant: Optional[str] = typer.Option(None, help="Run against a deliberately broken engine."),
        replay_program: Optional[Path] = typer.Option(None, "--replay", metavar="FILE",
                                                      help="Run one saved program (a failure check printed)."),
        save_dir: Path = typer.Option(Path("."), "--save-dir", help="Where a failing program is written."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Drive the real engine in lockstep with the spec (Hypothesis state machine); exit 1 with the shrunk failing run."""
        from flightcheck.checks.conform.campaign import run_conformance, run_programs, save_failure
        from flightcheck.checks.conform.results import ConformOptions

        check_choice("model", model, ("tiny", "smollm2"))
        check_choice("release", release, RELEASES)
        check_choice("publication", publication, PUBLICATIONS)
        check_choice("coordination", coordination, COORDINATIONS)
        check_choice("leader-loss", leader_loss, LEADER_LOSSES)
        m = _mutant(mutant)
        program = _read_program(replay_program) if replay_program is not None else None
        loaded_model(model)  # a bad model file is bad input (exit 2), not a run that departs from the spec
        if program is not None:
            _check_program_for_model(program, replay_program, model)
        opts = ConformOptions(model=model, release=release, publication=publication, coordination=coordination,
                              leader_loss=leader_loss, examples=examples, seconds=seconds, max_rules=max_rules,
                              seed=seed)
        console = Console(stderr=as_json)

        def campaign():
            if program is not None:
                return run_programs([program], model, shrink_seconds=0)
            return run_conformance(opts)

        with console.status(f"conformance on the {model} model ..."):
            if m is not None:
                with m.patched():
                    result = campaign()
            else:
                result = campaign()
        if result.failure is not None and result.failure.program is not None and program is None:
            result.failure.saved_to = str(save_failure(result.failure.program, save_dir))
        if as_json:
            out = result.to_json()
            out["mutant"] = mutant
            print(json.dumps(out))
        elif result.ok:
            console.print(f"[green]conformed[/]: {result.runs} runs, {result.steps} engine steps, {result.events} "
                          f"events checked, {len(result.transitions)} distinct spec transitions, "
                          f"{result.seconds:.1f} s; reached {result.features}")
        else:
            console.print("[bold red]the engine departs from the spec[/]")
            _print(console, result.failure.format())
        raise typer.Exit(0 if result.ok else 1)

    @app.command()
    def corpus(
        build: bool = typer.Option(False, "--build", help="Search for new programs and write the corpus."),
        seconds: float = typer.Option(20.0, min=1, help="Search time per scenario and policy (with --build)."),
        scenario: Optional[list[str]] = typer.Option(None, help="Only these scenarios (repeatable)."),
        jobs: int = typer.Option(2, min=1, help="Parallel searches (with --build): the embedded Dask cluster's workers."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS",
                                                help="Run the searches (with --build) on this Dask scheduler's workers."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """The regression corpus: programs that steer the engine's own scheduling onto the spec's edges."""
        from flightcheck.checks.conform import corpus as corpus_mod

        for name in scenario or []:
            if name not in SCENARIOS:
                raise usage_error(f"unknown scenario {shown(name)}; known: {', '.join(SCENARIOS)}")
        entries = corpus_mod.load()
        if build:
            from flightcheck.checks.cluster import ClusterError

            try:
                fresh = corpus_mod.build_all(seconds=seconds, jobs=jobs, only=scenario, scheduler=scheduler)
            except ClusterError as error:
                raise usage_error(str(error)) from None
            keys = {e.key for e in fresh}
            entries = [e for e in entries if e.key not in keys] + fresh
            order = {k: n for n, k in enumerate(f"{n} {' '.join(p.values())}" for n, p in corpus_mod.grid())}
            entries.sort(key=lambda e: order.get(e.key, len(order)))
            corpus_mod.save(entries)
        listed = [e for e in entries if not scenario or e.scenario in scenario]
        if as_json:
            print(json.dumps({"entries": [{"key": e.key, "programs": len(e.programs), "edges": e.num_edges,
                                           "covered": e.num_covered, "missed": e.missed} for e in listed]}))
            raise typer.Exit(0)
        t = Table(title="the engine's own scheduling over the spec's edges (corpus)")
        for col in ("scenario and policy", "programs", "edges covered", "missed, by the step-loop rule that explains them"):
            t.add_column(col)
        for e in listed:
            t.add_row(e.key, str(len(e.programs)), f"{e.num_covered}/{e.num_edges} ({100 * e.num_covered / max(1, e.num_edges):.0f}%)",
                      ", ".join(f"{a} {n}" for a, n in e.missed.items()))
        Console().print(t)
        raise typer.Exit(0)

    def validate(
        events: Path = typer.Argument(..., help="A JSON-lines event log written by the engine."),
        num_pages: Optional[int] = typer.Option(None, "--num-pages", min=1,
                                                help="The engine's page pool (or from the header)."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        **policy_options: Any,
    ) -> None:
        """Feed an event log through the spec; exit 1 with a diagnosis at the first mismatch, 2 on a malformed log."""
        from flightcheck.checks.conform.eventlog import header_policy, read_events, validate_events
        from flightcheck.checks.inputs import MAX_VALIDATION_SECONDS, InputError

        flags = policy_changes(policy_options)  # a bad choice is exit 2 before the log is read
        try:
            evs, header = read_events(str(events))  # the schema checked: a malformed log is exit 2, here
        except InputError as error:
            raise usage_error(str(error))
        try:
            policy = header_policy(header, flags)
        except (TypeError, ValueError) as error:
            raise usage_error(f"bad policy: {error}")
        pages = num_pages or ((header or {}).get("pool") or {}).get("num_pages")
        try:
            report = validate_events(evs, policy, num_pages=pages, context=(header or {}).get("context"),
                                     source=str(events), max_seconds=MAX_VALIDATION_SECONDS)
        except InputError as error:  # more requests, or more work, than a log validated offline may take
            raise usage_error(str(error)) from None
        if as_json:
            print(json.dumps(report.to_json()))
        elif report.ok:
            Console().print(f"[green]valid[/]: {report.num_events} events are a run of the spec under {policy.label()}")
        else:
            Console().print(f"[bold red]mismatch[/] at event {report.num_events} (policy {policy.label()}):")
            _print(Console(), report.diagnosis.format())
        raise typer.Exit(0 if report.ok else 1)

    app.command()(with_options(validate, policy_parameters("Engine policy (the log header's unless given)")))

    def replay(
        path: Path = typer.Argument(..., help="explore --json output, or a file of actions (one per line)."),
        scenario: Optional[str] = typer.Option(None, help="Scenario (default: from the JSON, else burst2)."),
        variant: Optional[str] = typer.Option(None, help="The spec variant the path came from."),
        mutant: Optional[str] = typer.Option(None, help="Replay against a deliberately broken engine."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        **policy_options: Any,
    ) -> None:
        """Replay a counterexample path against the engine; exit 0 when the engine behaves as the path says."""
        from flightcheck.checks.conform.replay import path_problem, read_path, replay as run_replay
        from flightcheck.checks.inputs import InputError
        from flightcheck.spec.variants import VARIANTS

        changes = policy_changes(policy_options)  # a bad choice is exit 2 before the file is read
        try:
            read = read_path(path)
        except InputError as error:
            raise usage_error(str(error))
        actions, meta = read.actions, read.meta

        def choose(option: str, given: Optional[str], default: str, known) -> str:  # the flag, the file's, the default
            value = given or meta.get(option) or default
            if value not in known:
                what = f"unknown {option} {shown(value)}; known: {', '.join(known)}"
                raise usage_error(f"--{option}: {what}" if given else str(InputError(str(path), read.places[0][0],
                                                                                    option, what)))
            return value

        name = choose("scenario", scenario, "burst2", SCENARIOS)
        vname = choose("variant", variant, "correct", VARIANTS)
        scn = SCENARIOS[name]
        pol = {**scn.policy.__dict__, **meta.get("policy", {}), **changes}
        m = _mutant(mutant)
        try:
            policy, spec_class = Policy(**pol), VARIANTS[vname].spec_class
        except (TypeError, ValueError) as error:  # knobs each valid, together not a policy
            raise usage_error(f"{path}: not a policy of scenario {name}: {error}") from None
        wrong = path_problem(actions, scn, policy, spec_class=spec_class)
        if wrong is not None:  # a path that is not a run of the spec is a bad input, not an engine's departure
            n, why = wrong
            raise usage_error(str(read.error(str(path), n, f"{why} (scenario {name}, variant {vname}, policy "
                                             f"{policy.label()}; --scenario, --variant and the policy flags "
                                             "choose them)")))
        try:
            if m is not None:
                with m.patched():
                    result = run_replay(actions, scn, policy, spec_class=spec_class)
            else:
                result = run_replay(actions, scn, policy, spec_class=spec_class)
        except ValueError as error:
            raise usage_error(str(error))
        if as_json:
            print(json.dumps(result.to_json()))
        else:
            _print(Console(), result.format())
        same = result.reproduced or (result.followed and not result.spec_violation)
        raise typer.Exit(0 if same else 1)

    app.command()(with_options(replay, policy_parameters("Policy (the file's, else the scenario's, unless given)")))

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
                t.add_column(col)
            for r in results:
                t.add_row(r.coordination, str(r.prefix_lookups), str(r.page_allocations),
                          str(r.computations_per_page), str(r.destinations_per_page), str(r.recovered_tokens),
                          "yes" if r.conformed else "NO")
            Console().print(t)
        raise typer.Exit(0 if ok else 1)

    @app.command()
    def coverage(
        scenario: list[str] = typer.Option(["burst2"], help="Default scenario(s) to cover (repeatable)."),
        runs: int = typer.Option(60, min=1, help="Engine runs per scenario (own scheduling)."),
        seconds: Optional[float] = typer.Option(None, min=1, help="Time per scenario instead of --runs."),
        directed: bool = typer.Option(False, "--directed", help="Also drive the engine to every edge via replay."),
        png: Optional[Path] = typer.Option(None, help="Write the coverage figure (PNG)."),
        render: Optional[Path] = typer.Option(None, help="Render the first scenario's graph, visited edges green."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Which states and edges of the explored spec graphs the engine's runs visit."""
        from flightcheck.checks.conform.coverage import cover, cover_directed, plot_coverage, render_coverage

        for name in scenario:
            if name not in SCENARIOS:
                raise usage_error(f"unknown scenario {shown(name)}; known: {', '.join(SCENARIOS)}")
        if png is not None and png.suffix.lower() != ".png":
            raise usage_error(f"--png must end in .png; got {shown(png.name)}")
        results, directed_results = [], []
        for name in scenario:
            results.append(cover(SCENARIOS[name], runs=runs, seconds=seconds))
            if directed:
                directed_results.append(cover_directed(SCENARIOS[name], explored=results[-1].explored))
        if png is not None:
            plot_coverage(results, png)
        if render is not None:
            render_coverage(directed_results[0] if directed_results else results[0], render)
        failed = [r for r in results if r.failure is not None]
        if as_json:
            print(json.dumps({"scenarios": [r.to_json() for r in results],
                              "directed": [r.to_json() for r in directed_results]}))
        else:
            t = Table(title="spec coverage by the engine")
            for col in ("scenario", "runs", "states", "edges", "edges (directed)", "most missed"):
                t.add_column(col)
            for k, r in enumerate(results):
                d = directed_results[k] if directed_results else None
                t.add_row(r.scenario.name, str(r.runs), f"{len(r.states)}/{r.num_states}",
                          f"{len(r.edges)}/{r.num_edges} ({100 * r.edge_fraction:.0f}%)",
                          f"{len(d.edges)}/{d.num_edges} ({100 * d.edge_fraction:.1f}%)" if d else "-",
                          ", ".join(f"{a} {n}" for a, n in list(r.missed_actions().items())[:3]))
            Console().print(t)
            for r in failed:
                Console().print(r.failure.format(), markup=False, highlight=False)
        raise typer.Exit(1 if failed else 0)
