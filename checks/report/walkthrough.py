"""The design's story, step by step, each step a policy or variant of the spec illustrated by a run found on it.

:func:`build_walkthrough` tells the story the project grew from, with evidence from the spec of this
commit rather than prose: the cold burst that recovers nothing when pages are published on completion;
incremental publication, which helps a late request partly and a cold burst not at all; single-flight
with release on completion, where the follower recovers the leader's pages after waiting through its
whole decode; release after prefill, where it is admitted as soon as the pages are published and
decodes beside the leader; the trade-off between the two in state-graph counts and measured figures;
the refactor from ``FlightState`` to a released-ID set, proved equivalent; every bug of the design
history as its shortest counterexample; the proofs for any number of requests; and what each later
scenario adds. Variants and scenarios are
iterated (:data:`~flightcheck.spec.variants.VARIANTS`, :data:`~flightcheck.spec.scenario.SCENARIOS`),
so a new one appears here once ``flightcheck docs`` runs, and the test that regenerates the walkthrough
fails until it does. Everything is deterministic (no timings), so the committed copy can be compared.
:mod:`flightcheck.checks.report.markdown` writes it.

For example::

    >>> chapter = cold_burst_chapter()
    >>> chapter.figures[0].name, "recovered r0 0, r1 0 pages" in " ".join(chapter.paragraphs)
    ('01-cold-burst', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flightcheck.checks.report.coverage_graph import STORY_SCENARIO
from flightcheck.checks.report.paths import (
    all_finished, both, cold_burst, first_step, full_decode, publish_and_release_first, recovered, shortest_run,
)
from flightcheck.checks.report.sequence import SequenceDiagram, diagram_of
from flightcheck.spec.model import FlightSpec
from flightcheck.spec.scenario import RELEASES, SCENARIOS, Scenario
from flightcheck.spec.state import DECODE, PHASE_NAMES


@dataclass
class WalkFigure:
    """A picture of the walkthrough: its file name (without ``.svg``), the diagram, a caption, and the
    run as numbered text."""

    name: str
    diagram: SequenceDiagram
    caption: str
    listing: str = ""


@dataclass
class Chapter:
    """One step of the story: a title, paragraphs (Markdown), pictures, and an optional table."""

    title: str
    paragraphs: list[str]
    figures: list[WalkFigure] = field(default_factory=list)
    table: list[list[str]] = field(default_factory=list)  # the first row is the header
    closing: list[str] = field(default_factory=list)      # paragraphs after the table and pictures


def _steps(n: int) -> str:
    return f"{n} step" + ("" if n == 1 else "s")


def _story() -> Scenario:
    return SCENARIOS[STORY_SCENARIO]


def _figure(name: str, spec: FlightSpec, run, caption: str, **marks) -> WalkFigure:
    return WalkFigure(name, diagram_of(spec, run, title=caption, **marks), caption, run.format(spec))


def _some_hit(partial: bool):
    def goal(spec, state) -> bool:
        for i, info in enumerate(spec.describe(state)["requests"].values()):
            hit = info.get("hit", 0)
            if hit and (not partial or hit < spec.shareable(i)):
                return True
        return False
    return goal


def cold_burst_chapter() -> Chapter:
    """Publication on completion without coordination: a cold burst recovers nothing."""
    scn = _story().with_policy(coordination="none", publication="on-completion")
    spec = FlightSpec(scn)
    run = shortest_run(spec, all_finished, keep=cold_burst)
    rec = recovered(spec, run)
    none = shortest_run(spec, _some_hit(False), keep=cold_burst) is None
    hot = shortest_run(spec, _some_hit(False))
    units = scn.requests[0].num_units
    text = [
        f"`{scn.name}`: {scn.story} Without coordination, and with a request's pages published only when it "
        f"completes ({scn.policy.label()}), the requests arrive together and the engine admits both before it "
        f"computes anything, as its step loop does. The shortest such run has {len(run)} steps, and each request "
        f"computes all {units} of its prompt units itself: recovered " + ", ".join(f"{r} {n}" for r, n in rec.items())
        + " pages.",
        ("No run of that shape recovers a single page: the search over every one of them finds none. "
         if none else "Some runs of that shape do recover a page. ")
        + (f"Reuse needs the first request to have finished: the shortest run in which a request recovers pages "
           f"has {_steps(len(hot))} (the hot path, a later request after the first completed)." if hot else ""),
    ]
    return Chapter("The cold burst: publication on completion recovers nothing", text,
                   [_figure("01-cold-burst", spec, run, f"{scn.name}, {scn.policy.label()}: a cold burst")])


def incremental_chapter() -> Chapter:
    """Incremental publication: a late request recovers part of the prefix; a cold burst still nothing."""
    scn = _story().with_policy(coordination="none", publication="incremental")
    spec = FlightSpec(scn)
    partial = shortest_run(spec, _some_hit(True))
    text = [f"Publishing every computed page after each forward pass ({scn.policy.label()}) makes pages reusable "
            "while their request is still running."]
    figures = []
    if partial is not None:
        run = shortest_run(spec, all_finished, start=partial)
        rec = recovered(spec, run)
        late = next(r for r, n in rec.items() if n)
        text.append(f"A request that is admitted while another is part-way through its prefill recovers what is "
                    f"published by then and computes the rest: in the shortest such run {late} recovers {rec[late]} of "
                    f"{spec.shareable(int(late[1:]))} shareable pages (it is admitted at step {len(partial)}).")
        figures.append(_figure("02-incremental", spec, run, f"{scn.name}, {scn.policy.label()}: a partial hit"))
    cold = shortest_run(spec, _some_hit(False), keep=cold_burst)
    text.append("A cold burst still recovers nothing: " + (
        "no run in which the requests arrive together and are admitted together hits the cache. Whether reuse "
        "happens depends on the order of execution and on when pages are published." if cold is None else
        f"except that some run of that shape does ({len(cold)} steps)."))
    return Chapter("Incremental publication helps, partly", text, figures)


def _release_run(release: str):
    scn = _story().with_policy(coordination="single-flight", release=release, publication="on-completion")
    spec = FlightSpec(scn)
    return scn, spec, shortest_run(spec, all_finished, keep=both(cold_burst, full_decode, publish_and_release_first))


def _follower(spec: FlightSpec, run) -> str:
    for step in run.steps:
        for r, info in spec.describe(step.state)["requests"].items():
            if info.get("role") == "follower":
                return r
    return "r1"


def release_chapter(release: str, number: int) -> tuple[Chapter, dict[str, int]]:
    """Single-flight at one release point: when the follower is admitted and what it recovers."""
    scn, spec, run = _release_run(release)
    follower = _follower(spec, run)
    k = int(follower[1:])
    rec = recovered(spec, run)
    admitted = first_step(run, "admit", k)
    released = first_step(run, "release")
    leader_done = first_step(run, "finish", next(i for i in range(spec.num_requests) if i != k))
    together = sum(1 for s in run.steps if sum(info["phase"] == PHASE_NAMES[DECODE]
                                                 for info in spec.describe(s.state)["requests"].values()) > 1)
    if release == RELEASES[1]:
        title = "Single flight, released when the leader completes"
        story = (f"One request leads the flight and computes the prefix; the identical one follows, blocked. Released "
                 f"on completion ({scn.policy.label()}), the follower waits through the leader's whole decode: the "
                 f"leader finishes at step {leader_done}, the flight is released at step {released}, and {follower} is "
                 f"admitted at step {admitted}, recovering {rec[follower]} of {spec.shareable(k)} shareable pages.")
    else:
        title = "Single flight, released after the leader's prefill"
        story = (f"Released at the release point ({scn.policy.label()}): the leader publishes its prefill pages "
                 f"when its prefill completes, the flight is released at step {released}, and {follower} is admitted at "
                 f"step {admitted}, recovering {rec[follower]} of {spec.shareable(k)} shareable pages, while the "
                 f"leader still decodes (it finishes at step {leader_done}); in {together} states both decode together.")
    fig = _figure(f"0{number}-release-{release}", spec, run, f"{scn.name}, {scn.policy.label()}")
    return Chapter(title, [story], [fig]), {"admitted": admitted or 0, "released": released or 0,
                                            "leader_done": leader_done or 0, "together": together}


def tradeoff_command() -> str:
    """The ``flightcheck diff`` command whose counts the trade-off chapter quotes (both sides with on-completion
    publication, which the chapter's graphs use; the default ``diff`` keeps the scenario's own publication)."""
    sides = [f"release={r},publication=on-completion" for r in RELEASES]
    return f"flightcheck diff --scenario {STORY_SCENARIO} --a {sides[0]} --b {sides[1]}"


def tradeoff_chapter(steps: dict[str, dict[str, int]]) -> Chapter:
    """The release points compared: the graphs' difference and the measured figures."""
    from flightcheck.checks.explore.explorer import explore
    from flightcheck.checks.explore.picture import diff_counts
    from flightcheck.checks.report.tradeoff import recorded_tradeoff

    early, late = RELEASES[0], RELEASES[1]
    graphs = {r: explore(FlightSpec(_story().with_policy(release=r, publication="on-completion"))) for r in RELEASES}
    d = diff_counts(graphs[early], graphs[late])
    text = [
        f"Releasing after the prefill admits the follower at step {steps[early]['admitted']} instead of "
        f"{steps[late]['admitted']} in the runs above: its first token comes sooner. The cost is that the two then "
        f"decode together and change the running batch. In the spec's graphs of `{STORY_SCENARIO}` (on-completion "
        f"publication), {d['states_only_a']} states and {d['edges_only_a']} edges exist only under {early} and "
        f"{d['states_only_b']} states and {d['edges_only_b']} edges only under {late} ({d['states_common']} states in both); "
        f"every property holds under both (`{tradeoff_command()} --render release-points.png` prints these "
        f"counts and draws the graphs).",
    ]
    t = recorded_tradeoff()
    table: list[list[str]] = []
    closing: list[str] = []
    if t.lines:
        names = list(t.lines[0].figures)
        table.append(["experiment", "cell", "metric"] + [f"{n}: median (min to max)" for n in names]
                     + ["direction in paired runs"])
        for line in t.lines:
            table.append([line.experiment, line.cell, line.metric]
                         + [f"{f.median:,.0f} ({f.low:,.0f} to {f.high:,.0f}; {f.runs} runs)" for f in line.figures.values()]
                         + [line.direction + ("" if line.stable else ", not stable")])
        runs = sorted({f.runs for line in t.lines for f in line.figures.values()})
        text.append(f"Measured on the real engine by `flightcheck bench` (the recorded full run in `docs/bench/`: "
                    f"{', '.join(f'`{name}`' for name in t.files)}; every configuration run "
                    f"{' or '.join(map(str, runs))} times, repeats interleaved, in one process), in milliseconds. Each "
                    "figure is the median with the spread of the runs; the direction compares run k of one release "
                    "point with run k of the other:")
        closing.append(_directions(t.lines, early))
    else:
        text.append(t.note + ".")
    return Chapter("The trade-off between the release points", text, table=table, closing=closing)


def _directions(lines: list, early: str) -> str:
    """What the figures say, metric by metric, derived from the lines (never asserted ahead of them)."""
    out = []
    for metric in dict.fromkeys(line.metric for line in lines):
        mine = [line for line in lines if line.metric == metric]
        stable = [line for line in mine if line.stable]
        lower = [line for line in stable if " lower " in line.direction]
        higher = [line for line in stable if " higher " in line.direction]
        if len(lower) == len(mine):
            out.append(f"`{metric}` is lower under {early} in every paired run of every cell ({len(mine)})")
        elif len(higher) == len(mine):
            out.append(f"`{metric}` is higher under {early} in every paired run of every cell ({len(mine)})")
        else:
            out.append(f"`{metric}` moves one way in every paired run in {len(stable)} of {len(mine)} cells "
                       f"({len(lower)} lower, {len(higher)} higher under {early}); elsewhere its direction flips between runs")
    return "; ".join(out) + "."


def refactor_chapter() -> Chapter:
    """``FlightState { Active, Draining }`` against the released-ID set, proved equivalent by z3."""
    from flightcheck.checks.suite.defaults import equiv_depth, pair_scenario
    from flightcheck.checks.proofs.equivalence import check_equivalence
    from flightcheck.spec.variants import VARIANTS

    correct = [v for v in VARIANTS.values() if v.expected_violation is None]
    text = ["The seed's last step is a refactor: the flight state with an `Active` and a `Draining { leader: Option }` "
            "case gave way to a separate set of released request IDs. Both designs are kept as variants, and z3 runs "
            "them in lockstep on the same actions, comparing everything the outside sees (enabled actions, the verdict "
            "on every termination, every request's phase):"]
    table = [["designs", "scenario", "verdict"]]
    for v in correct:
        if v.name == "correct":
            continue
        scn = pair_scenario("correct", v.name)
        # The induction on the product alone decides it for every depth (its base case is the start); the
        # BMC search that `equiv` runs first (to depth equiv_depth) only finds short differences sooner.
        r = check_equivalence("correct", v.name, scn, depth=0)
        verdict = {"proved": "equivalent: proved for every depth by induction on the product",
                   "bounded": "not proved: the induction on the product fails (see `flightcheck equiv`)"}.get(
            r.verdict, r.summary())
        table.append([f"`correct` vs `{v.name}`", f"`{scn.name}` ({scn.policy.label()})", verdict])
        text.append(f"`{v.name}`: {v.story}")
    closing = [f"`flightcheck equiv correct {table[-1][0].split('`')[3]}` runs the same proof after a BMC search to depth "
               f"{equiv_depth('correct', table[-1][0].split('`')[3])}; `flightcheck check` runs it for every variant, and for "
               "each mutant shows its shortest distinguishing sequence (the report draws each one step by step)."
               if len(table) > 1 else "No second correct design is kept."]
    return Chapter("The refactor, proved: a released-ID set instead of FlightState", text, table=table, closing=closing)


def bugs_chapter() -> Chapter:
    """Every mutant of the design history as its shortest counterexample on its demo scenario."""
    from flightcheck.checks.suite.defaults import variant_scenario
    from flightcheck.checks.explore.explorer import explore
    from flightcheck.spec.properties import get_property
    from flightcheck.spec.variants import VARIANTS

    text = ["Each mistake of the design's history is kept as a variant that must violate one property. The explorer "
            "finds its shortest counterexample on the variant's demo scenario (the same one `explore --variant`, "
            "`prove --variant`, `equiv` and `check` use), drawn here step by step; the violating step is on a red band."]
    figures = []
    for k, v in enumerate(x for x in VARIANTS.values() if x.expected_violation is not None):
        scn = variant_scenario(v.name)
        result = explore(v.build(scn))
        prop = get_property(v.expected_violation)
        res = result.result(prop.name)
        if res.counterexample is None:
            text.append(f"`{v.name}`: {v.story} **Not caught**: {prop.name} holds on `{scn.name}`.")
            continue
        cx = res.counterexample
        caption = f"{v.name} on {scn.name} ({scn.policy.label()}): {prop.name} violated in {_steps(len(cx))}"
        figures.append(WalkFigure(f"bug-{v.name}", diagram_of(v.build(scn), cx, property=prop.name, story=prop.story,
                                                              kind=prop.kind, title=caption),
                                  f"**`{v.name}`**: {v.story} It violates `{prop.name}` ({prop.story[0].lower()}"
                                  f"{prop.story[1:].rstrip('.')}) in {_steps(len(cx))}: "
                                  f"`flightcheck explore --variant {v.name}`; step through it, step back and "
                                  f"branch off with `flightcheck explorer --variant {v.name}`.",
                                  cx.format(v.build(scn))))
    return Chapter("Every bug of the design history, as its counterexample", text, figures)


def all_sizes_chapter() -> Chapter:
    """The proofs for any number of requests: what one configuration proves, what it leans on, what is left
    bounded, and how a refactor that breaks induction is mended (``flightcheck prove --unbounded``)."""
    from flightcheck.checks.unbounded.config import Config, grid
    from flightcheck.checks.unbounded.invariants import NOT_MODELLED
    from flightcheck.checks.unbounded.run import prove_unbounded

    config = Config()
    report = prove_unbounded("correct", [config]).configs[0]
    text = ["Every proof above holds for one scenario: two to four requests. `flightcheck prove --unbounded` proves "
            "the safety properties for every number of requests, prompts, pages and flights at once, on a relational "
            "reading of the same design: requests, prompt classes and pages are unbounded sorts, each action a guard "
            "and an update over them, and each property is checked inductive (it holds at the start, and every action "
            "from any state where it and its lemmas hold keeps it) by z3. The drift check ties this reading to the "
            "spec: on every reachable state of the default scenarios it models, both give the same enabled actions "
            "and the same successors, and every lemma holds.",
            f"Under `{config.label()}` with every environment action (aborts, failures, bogus notices, wait expiry, "
            f"background eviction), on any prompt tree, the run proves (one of the {len(grid())} configurations "
            "`prove --unbounded` covers):"]
    table = [["property", "kind", "verdict"]]
    for v in report.verdicts:
        table.append([f"`{v.name}`", v.kind, "proved for all sizes" if v.status == "proved" else v.status])
    closing = ["The lemmas are what a reader must accept, and each is itself proved inductive, never assumed. "
               "When a refactor breaks induction, the line reads `not inductive` and a counterexample to induction is "
               "printed: a small state (a few requests, a page or two) where every invariant holds and one action "
               "breaks the one named. If `flightcheck explore` reaches that state on a scenario of that size, the "
               "refactor broke the design; if not, the fact that rules it out is a new lemma in "
               "`checks/unbounded/invariants.py`, checked by the drift test on every reachable state before it is "
               "trusted.",
               "Left bounded (per scenario, by `flightcheck prove` and the explorer), each with its reason on the "
               "output: " + "; ".join(f"`{name}` ({why.split(';')[0].split(' (')[0]})" for name, why in NOT_MODELLED.items())
               + "."]
    return Chapter("Proofs for all sizes", text, table=table, closing=closing)


def scenarios_chapter() -> Chapter:
    """The default scenarios, and a run for each action a later scenario adds to the first one's."""
    # Only counts and verdicts are read here, which every explorer gives alike (tests/explore/test_batched.py),
    # so the larger scenarios run on the batched one: the reference took most of the walkthrough's time.
    from flightcheck.checks.explore.choose import explore_with

    names = list(SCENARIOS)
    seen = {a.name for a in FlightSpec(SCENARIOS[names[0]]).actions}
    table = [["scenario", "what it adds to the story", "states", "verdict"]]
    figures = []
    for name in names:
        scn = SCENARIOS[name]
        spec = FlightSpec(scn)
        result = explore_with(spec)
        table.append([f"`{name}`", scn.story, f"{result.stats.states:,}",
                      "every property holds" if result.ok else "violated: " + ", ".join(p.name for p in result.violations)])
        for act_name in dict.fromkeys(a.name for a in spec.actions):
            if act_name in seen:
                continue
            seen.add(act_name)
            enabled = shortest_run(spec, lambda sp, s, n=act_name: any(a.name == n for a in sp.enabled(s)))
            if enabled is None:
                continue
            state = enabled.final_state(spec)
            act = next(a for a in spec.enabled(state) if a.name == act_name)
            from flightcheck.checks.explore.counterexample import Counterexample, Step
            taken = Counterexample(enabled.steps + [Step(act, spec.apply(state, act))])
            run = shortest_run(spec, lambda sp, s: not any(sp.is_live(sp.view(s), i) for i in range(sp.num_requests)),
                               start=taken) or taken
            caption = f"{name} ({scn.policy.label()}): the first `{act_name}`, at step {len(taken)}, and the run to its end"
            figures.append(WalkFigure(f"adds-{act_name}", diagram_of(spec, run, title=caption), caption, run.format(spec)))
    text = ["The default scenarios, in the order the project walks through them (`flightcheck explore --scenario NAME`), "
            "each under its own policy; `flightcheck check` runs each under every policy of its grid. Below the table, "
            "one run for each action a scenario brings that the ones before it do not have."]
    return Chapter("The scenarios, and what each adds", text, figures, table)


def build_walkthrough() -> list[Chapter]:
    """Every chapter, in the story's order."""
    chapters = [cold_burst_chapter(), incremental_chapter()]
    steps = {}
    for number, release in ((3, RELEASES[1]), (4, RELEASES[0])):
        chapter, steps[release] = release_chapter(release, number)
        chapters.append(chapter)
    chapters += [tradeoff_chapter(steps), refactor_chapter(), bugs_chapter(), all_sizes_chapter(), scenarios_chapter()]
    return chapters
