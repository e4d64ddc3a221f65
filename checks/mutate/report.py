"""The mutation report: one JSON record of a run, and its Markdown and terminal forms.

:func:`build_record` puts a run together (what ran, under which budget, each mutant with its
outcome, the score per file and per function); :func:`format_markdown` and :func:`print_summary`
read only that record, so a saved ``results.json`` renders the same report as the run that wrote it.

For example::

    >>> rows = [{"file": "f.py", "function": "g", "status": "failed"}, {"file": "f.py", "function": "g",
    ...          "status": "survived"}]
    >>> tally(rows, "file")
    [{'file': 'f.py', 'killed': 1, 'survived': 1, 'score': 0.5}]
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from flightcheck.checks.inputs import (BOOL, COUNT, MAX_DOCUMENT_BYTES, SECONDS, STR, InputError, Kind,
                                       check_fields, json_records, list_of, nullable, one_of, optional,
                                       read_json_file, read_lines, record, required)
from flightcheck.checks.mutate.plan import Plan
from flightcheck.checks.mutate.results import KILLED, STATUSES, Outcome, score
from flightcheck.checks.mutate.skips import SKIP_RULES


def tally(mutants: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Killed, survived and score grouped by ``key`` ("file" or "function"), in first-seen order."""
    groups: dict[str, Counter] = {}
    for m in mutants:
        name = m[key] if key == "file" else f"{m['file']}::{m['function']}"
        c = groups.setdefault(name, Counter())
        c["killed"] += m["status"] in KILLED
        c["survived"] += m["status"] == "survived"
    out = []
    for name, c in groups.items():
        scored = c["killed"] + c["survived"]
        if scored:
            out.append({key: name, "killed": c["killed"], "survived": c["survived"],
                        "score": round(c["killed"] / scored, 4)})
    return out


def build_record(p: Plan, outcomes: list[Outcome], meta: dict[str, Any]) -> dict[str, Any]:
    """The JSON-ready record of a run (``results.json``)."""
    by_id = {m.id: m for m in p.mutants}
    every = list(outcomes)
    every += [Outcome(i, "skipped", reason=f"{rule}: {SKIP_RULES[rule]}") for i, rule in p.skipped.items()]
    every += [Outcome(i, "equivalent", reason=reason) for i, reason in p.equivalent.items()]
    s = score(every)
    mutants = []
    for o in every:
        entry = by_id[o.id].to_json()
        entry.update(o.to_json())
        mutants.append(entry)
    order = {m.id: k for k, m in enumerate(p.mutants)}
    mutants.sort(key=lambda e: order[e["id"]])
    return {"meta": dict(meta, generated=len(p.mutants), run=len(outcomes)),
            "score": {"score": None if s.score is None else round(s.score, 4), "killed": s.killed,
                      "survived": s.survived, "skipped": s.skipped, "equivalent": s.equivalent,
                      "by_status": s.by_status},
            "by_file": tally(mutants, "file"), "by_function": tally(mutants, "function"),
            "stale_equivalents": p.stale, "mutants": mutants}


def _score_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _how(m: dict[str, Any]) -> tuple[str, str, str]:
    """(how it was killed, the properties named, the shortest run) for a killed mutant."""
    if m["status"] != "failed":
        return m["status"], "", ""
    kills = m["kills"]
    runs = [k for k in kills if k.get("run_length") is not None]
    best = min(runs, key=lambda k: k["run_length"]) if runs else kills[0]
    props = sorted({p for k in kills for p in k.get("properties", [])})
    rows = f"{len(kills)} row{'s' if len(kills) != 1 else ''}: {best['stage']} {best['item']}"
    return rows, ", ".join(props) or best["detail"][:80], "" if best.get("run_length") is None else str(best["run_length"])


def _stages_text(meta: dict[str, Any]) -> str:
    """The stages run, and for which files when they differ by file (the server's modules run their own)."""
    by_file = meta.get("stages_by_file")
    groups: dict[tuple[str, ...], list[str]] = {}
    if isinstance(by_file, dict):
        for file, stages in by_file.items():
            groups.setdefault(tuple(stages), []).append(file)
    if len(groups) < 2:
        return ", ".join(meta.get("stages", []))
    return "; ".join(f"{', '.join(stages)} for {', '.join(files)}" for stages, files in groups.items())


def format_markdown(record: dict[str, Any]) -> str:
    """The whole report as Markdown: score, tables, every survivor's diff, every kill's evidence."""
    meta, sc = record["meta"], record["score"]
    lines = ["# flightcheck mutate", "",
             f"- command: `{meta.get('command', '')}`", f"- date: {meta.get('date', '')}",
             f"- stages: {_stages_text(meta)} (quick={meta.get('quick')})",
             f"- files: {', '.join(meta.get('files', []))}; operators: {', '.join(meta.get('operators', []))}",
             f"- mutants: {meta['generated']} generated, {meta['run']} run, {sc['skipped']} skipped up front, "
             f"{sc['equivalent']} recorded equivalent"
             + (f"; {meta['not_run']} not run (an interrupted run: the ones run are a uniform random sample)"
                if meta.get("not_run") else ""),
             (f"- time: {meta.get('seconds', 0):.0f} s of mutant runs, summed (a results.jsonl has no wall time)"
              if meta.get("seconds_summed") else
              f"- time: {meta.get('seconds', 0):.0f} s with {meta.get('jobs')} jobs (baseline "
              f"{meta.get('baseline_seconds', 0):.1f} s, timeout {meta.get('timeout', 0):.0f} s per mutant)"),
             *([f"- re-scored from: {meta['source']}"] if meta.get("source") else []),
             *(["- **warning: impl/ changed on disk during the run** (each mutant carries its file as it was at "
                "the start): outcomes may come from mixing two versions of the engine"]
               if meta.get("impl_changed_during_run") else []), "",
             f"**Mutation score: {_score_text(sc['score'])}** ({sc['killed']} killed / "
             f"{sc['killed'] + sc['survived']}; {sc['survived']} survived; by status {sc['by_status']})", "",
             "## Per file", "", "| file | killed | survived | score |", "|---|---:|---:|---:|"]
    lines += [f"| {r['file']} | {r['killed']} | {r['survived']} | {_score_text(r['score'])} |" for r in record["by_file"]]
    lines += ["", "## Per function", "", "| function | killed | survived | score |", "|---|---:|---:|---:|"]
    lines += [f"| {r['function']} | {r['killed']} | {r['survived']} | {_score_text(r['score'])} |"
              for r in record["by_function"]]
    mutants = record["mutants"]
    survivors = [m for m in mutants if m["status"] == "survived"]
    lines += ["", f"## Survivors ({len(survivors)})", ""]
    for m in survivors:
        note = f" ({m['reason']})" if m.get("reason") else ""
        lines += [f"### `{m['id']}`{note}", "", "```diff", m["diff"], "```", ""]
    killed = [m for m in mutants if m["status"] in KILLED]
    lines += [f"## Killed ({len(killed)})", "", "| mutant | line | killed by | properties | shortest run |",
              "|---|---:|---|---|---:|"]
    for m in killed:
        how, props, run = _how(m)
        if m["status"] != "failed":
            props = m["reason"].splitlines()[0] if m["reason"] else ""
        lines.append(f"| `{m['id']}` | {m['line']} | {how} | {props.replace('|', '/')} | {run} |")
    equivalent = [m for m in mutants if m["status"] == "equivalent"]
    lines += ["", f"## Recorded equivalent ({len(equivalent)})", ""]
    lines += [f"- `{m['id']}`: {m['reason']}" for m in equivalent]
    if record.get("stale_equivalents"):
        lines += ["", "Stale entries of the equivalence file (no such mutant any more):", ""]
        lines += [f"- `{i}`: {r}" for i, r in record["stale_equivalents"].items()]
    skipped = Counter(m["reason"] for m in mutants if m["status"] == "skipped")
    lines += ["", f"## Skipped up front ({sum(skipped.values())})", ""]
    lines += [f"- {n} x {reason}" for reason, n in skipped.most_common()]
    return "\n".join(lines) + "\n"


def print_summary(record: dict[str, Any], console: Console, *, diffs: bool = True) -> None:
    """The score, the per-file table, the kills by property, and each survivor with its diff."""
    meta, sc = record["meta"], record["score"]
    table = Table(title=f"flightcheck mutate: {meta['run']} mutants run in {meta.get('seconds', 0):.0f} s")
    for col in ("file", "killed", "survived", "score"):
        table.add_column(col, justify="left" if col == "file" else "right", no_wrap=col == "file", overflow="fold")
    for r in record["by_file"]:
        table.add_row(r["file"], str(r["killed"]), str(r["survived"]), _score_text(r["score"]))
    console.print(table)
    mutants = record["mutants"]
    props = Counter(p for m in mutants if m["status"] == "failed"
                    for p in sorted({p for k in m["kills"] for p in k.get("properties", [])}) or ["(no property)"])
    other = Counter(m["status"] for m in mutants if m["status"] in ("crashed", "timeout"))
    if props or other:
        console.print("killed by: " + ", ".join(f"{p} {n}" for p, n in props.most_common())
                      + "".join(f", {s} {n}" for s, n in other.items()), highlight=False)
    survivors = [m for m in mutants if m["status"] == "survived"]
    for m in survivors:
        console.print(f"\n[bold yellow]survived[/] {escape(m['id'])}", highlight=False, soft_wrap=True)
        if diffs:
            console.print(Syntax(m["diff"], "diff", theme="ansi_dark", background_color="default"))
    if record.get("stale_equivalents"):
        console.print(f"[yellow]{len(record['stale_equivalents'])} stale equivalence entries[/] (no such mutant)")
    colour = "green" if sc["survived"] == 0 else "yellow"
    console.print(f"[{colour}]mutation score {_score_text(sc['score'])}[/]: {sc['killed']} killed, "
                  f"{sc['survived']} survived, {sc['equivalent']} equivalent, {sc['skipped']} skipped", highlight=False)


# --- reading saved results back (``flightcheck mutate --from-results``) -----------------------------------
# A failed row of a killed mutant (results.Kill): exactly its fields.
KILL = record({"stage": required(STR), "item": required(STR), "detail": required(STR),
               "properties": optional(list_of(STR)), "run_length": optional(nullable(COUNT)),
               "rules": optional(list_of(STR))}, closed=True)
# One mutant of results.json's "mutants" or one line of results.jsonl: what Outcome.from_json reads (the
# mutant's own fields beside it are allowed and ignored).
OUTCOME_FIELDS = {"id": required(STR), "status": required(one_of(*STATUSES)), "seconds": optional(SECONDS),
                  "reason": optional(STR), "kills": optional(list_of(KILL)), "imported": optional(nullable(BOOL))}
# The saved run's meta that the report reads (the rest is kept as it is).
META = record({"seconds": optional(SECONDS), "baseline_seconds": optional(SECONDS),
               "timeout": optional(SECONDS), "command": optional(STR), "date": optional(STR),
               "stages": optional(list_of(STR)), "files": optional(list_of(STR)), "operators": optional(list_of(STR)),
               "quick": optional(nullable(BOOL)), "jobs": optional(nullable(COUNT)), "seconds_summed": optional(BOOL),
               "all_rows": optional(nullable(BOOL)), "sample": optional(nullable(COUNT)), "seed": optional(nullable(Kind(
                   "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))))})
RESULTS = record({"mutants": required(list_of(record(OUTCOME_FIELDS))), "meta": optional(META)})


def rescore_saved(p: Plan, source: str, read: tuple[list[Outcome], dict[str, Any]], meta: dict[str, Any],
                  run_meta: dict[str, Any]) -> dict[str, Any]:
    """The record of saved outcomes ``read`` (:func:`read_saved_results` of ``source``) re-scored against
    today's plan ``p``: only mutants that still exist and are neither skipped nor equivalent now count.
    ``meta`` (this run's command, date, files, operators...) overrides the saved run's; ``run_meta`` (what
    this run would run) fills in what the saved results do not say. ``p.to_run`` is cut to the mutants
    the saved results hold."""
    entries, saved_meta = read
    saved = {o.id: o for o in entries if o.status not in ("skipped", "equivalent")}
    outcomes = [saved[m.id] for m in p.to_run if m.id in saved]
    current = {m.id for m in p.mutants}
    command, date = meta.get("command"), meta.get("date")
    meta = dict(saved_meta, **{k: v for k, v in meta.items() if k not in ("command", "date")}, source=source,
                not_run=len(p.to_run) - len(outcomes), stale_results=sum(i not in current for i in saved))
    if "seconds" not in meta:   # a results.jsonl has no wall time: the mutants' own seconds, summed
        meta.update(seconds=round(sum(o.seconds for o in outcomes), 1), seconds_summed=True)
    meta.setdefault("command", command)   # the saved run's own command and date come first
    meta.setdefault("date", date)
    if "stages" in saved_meta:   # a saved run's stages are its own: today's per-file choice would not match
        run_meta = {k: v for k, v in run_meta.items() if k != "stages_by_file"}
    for key, value in run_meta.items():   # what the saved run ran, when a results.jsonl does not say
        meta.setdefault(key, value)
    p.to_run = [m for m in p.to_run if m.id in saved]
    return build_record(p, outcomes, meta)


def read_saved_results(path: str | os.PathLike[str]) -> tuple[list[Outcome], dict[str, Any]]:
    """The outcomes and the meta of a saved run: a ``results.json`` (one JSON object) or an interrupted
    run's ``results.jsonl`` (one mutant a line, no meta), read by the strict readers
    (:mod:`flightcheck.checks.inputs`: a regular UTF-8 file within its size, JSON nested at most
    :data:`~flightcheck.checks.inputs.MAX_JSON_DEPTH` deep) and checked field by field. Raises
    :class:`~flightcheck.checks.inputs.InputError` naming the file, the line and the field; an empty
    file is one too (nothing saved is nothing to score).

    For example::

        >>> import json, tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        ...     _ = f.write(json.dumps({"id": "m1", "status": "survived"}) + "\\n")
        >>> [o.status for o in read_saved_results(f.name)[0]]
        ['survived']
        >>> os.unlink(f.name)
    """
    source = str(path)
    what = "a results.json or results.jsonl of flightcheck mutate"
    if source.endswith(".jsonl"):
        lines = read_lines(path, "mutation results (results.jsonl)", max_bytes=MAX_DOCUMENT_BYTES)
        entries = json_records(lines, source, what)
        for number, entry in entries:
            found = check_fields(entry, OUTCOME_FIELDS)
            if found is not None:
                raise InputError(source, number, found[0], f"{found[1]}: not {what}")
        return [Outcome.from_json(e) for _n, e in entries], {}
    obj = read_json_file(path, what)
    found = RESULTS.problem(obj)
    if found is not None:
        raise InputError(source, None, found[0].lstrip(".") or None, f"{found[1]}: not {what}")
    return [Outcome.from_json(e) for e in obj["mutants"]], dict(obj.get("meta") or {})
