"""The recipe "Add a knob" of docs/architecture.md, done: a knob declared once is read everywhere.

:func:`test_adding_a_knob_to_the_table_reaches_every_reader` follows the recipe in a copy of the package: it
adds one entry to ``spec/knobs.py``'s table and the engine's field to ``impl/config.py``, touches no other
file, and finds the knob, derived, in Policy (fields, checks, label), the options and help of every command
that builds a design, the log header's schema, the spec-to-engine map, ``serve``'s flags, the browser
explorer's controls and query, and the all-sizes model (which says it does not model it). The server
stage's table is the one place left to fill, and its test says so.

:func:`test_no_file_restates_a_knobs_declaration` keeps it from regrowing: it counts the source files that
write an existing knob's declaration (its help, its choices as a literal list, its option flag) and fails on
one that is not listed, with the reason, here.
"""

import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

from flightcheck.impl.config import EngineConfig
from flightcheck.spec.knobs import KNOBS

ROOT = Path(__file__).resolve().parents[1]

# The recipe's step 1: one entry of the table (spec/knobs.py).
ENTRY = '''    Knob("drain", str, "off", choices=("off", "on"), help="Whether a lost leader's flight drains.",
         meaning="on: a flight whose leader is lost takes no new followers", engine="drain_flights"),
'''
# Step 3: the engine's option (impl/config.py), a field of EngineConfig with its line of help.
FIELD = '    drain_flights: str = "off"\n'
FIELD_HELP = '    - ``drain_flights``: "on" makes a flight whose leader is lost take no new followers;\n'

# What the recipe's copy checks, run in a fresh interpreter that imports the copy.
CHECKS = r'''
import asyncio, json
import typer.main
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app, build_app
from flightcheck.checks.conform.policy_map import config_of, policy_of
from flightcheck.checks.conform.schema import POLICY_FIELDS, check_header
from flightcheck.checks.inputs import InputError
from flightcheck.checks.interactive.app import ExplorerApp
from flightcheck.checks.interactive.design import design_from_query
from flightcheck.checks.server import options as table
from flightcheck.checks.unbounded.config import Config, unmodelled
from flightcheck.spec.scenario import SCENARIOS, Policy

# Policy: the field, its default, its check, its label
assert Policy().drain == "off" and Policy(drain="on").label().endswith(" on")
try:
    Policy(drain="sideways")
    raise AssertionError("Policy took a value the knob does not have")
except ValueError as error:
    assert str(error) == "unknown drain 'sideways'; expected one of off, on", error

# the commands that build a design: the option, its help, its check (exit 2 naming the option)
for name in ("explore", "export", "explorer", "validate", "replay"):
    params = {p.name: p for p in typer.main.get_command(app).commands[name].params}
    assert params["drain"].opts == ["--drain"] and params["drain"].help == "off | on", name
r = CliRunner().invoke(app, ["explore", "--scenario", "burst2", "--drain", "sideways"])
assert r.exit_code == 2 and "--drain must be one of off, on; got 'sideways'" in r.output, r.output
r = CliRunner().invoke(app, ["explore", "--scenario", "burst2", "--drain", "on", "--json"])
assert r.exit_code == 0 and json.loads(r.output)["stats"]["states"] > 0, r.output

# the log header's schema
assert "drain" in POLICY_FIELDS
try:
    check_header({"policy": {"drain": "sideways"}}, "run.jsonl", 1)
    raise AssertionError("the header schema took a value the knob does not have")
except InputError as error:
    assert "drain" in str(error) and "one of off, on" in str(error), error

# the spec <-> engine map, and serve's flag (from the engine's field, its help from its line)
config = config_of(Policy(drain="on"), num_pages=9)
assert config.drain_flights == "on" and policy_of(config).drain == "on"
serve = {p.name: p for p in typer.main.get_command(build_app()).commands["serve"].params}
assert serve["drain_flights"].opts == ["--drain-flights"] and "take no new followers" in serve["drain_flights"].help
from flightcheck.checks.conform.program import _engine_config_fields
assert "drain_flights" in _engine_config_fields()  # a conformance program's engine options
# ... and the server stage's table is the one place left to fill: its test names the option
assert "drain_flights" not in set(table.OPTIONS) | set(table.NOT_BEHAVIOUR)

# the browser explorer: its controls and its query
choices = json.loads(asyncio.run(ExplorerApp().choices(None)).body)
assert choices["drain"] == ["off", "on"]
assert {"name": "drain", "kind": "choice", "choices": ["off", "on"], "low": None, "default": "off",
        "help": "Whether a lost leader's flight drains.", "policy": True} in choices["knobs"]
design = design_from_query({"drain": "on"}, {})
assert design.policy.drain == "on" and design.query() == {"drain": "on"}

# the all-sizes model: not a field of its configuration, and a design using it lies outside the model
assert not hasattr(Config(), "drain")
assert "drain is not modelled" in unmodelled(SCENARIOS["burst2"], Policy(drain="on"))
assert unmodelled(SCENARIOS["burst2"], Policy()) is None
print("derived everywhere")
'''


def _copy_with_recipe(tmp_path: Path) -> Path:
    """A copy of the package with the recipe's two edits; checks/ and data/ are the worktree's own."""
    pkg = tmp_path / "flightcheck"
    pkg.mkdir()
    shutil.copy(ROOT / "flightcheck" / "__init__.py", pkg)
    for room in ("checks", "data"):
        (pkg / room).symlink_to(ROOT / room)
    for room in ("spec", "impl"):
        shutil.copytree(ROOT / room, pkg / room, ignore=shutil.ignore_patterns("__pycache__"))
    knobs = (pkg / "spec" / "knobs.py").read_text()
    end = "\n]\n\n#: The knobs by name."
    assert knobs.count(end) == 1, "the table's end moved: update the recipe test"
    (pkg / "spec" / "knobs.py").write_text(knobs.replace(end, "\n" + ENTRY.rstrip("\n") + end))
    config = (pkg / "impl" / "config.py").read_text()
    last_help, last_field = "    - ``seed``:", "    seed: int = 0\n"
    assert config.count(last_help) == 1 and config.count(last_field) == 1, "EngineConfig moved: update the test"
    config = config.replace(last_help, FIELD_HELP + last_help).replace(last_field, last_field + FIELD)
    (pkg / "impl" / "config.py").write_text(config)
    return tmp_path


def test_adding_a_knob_to_the_table_reaches_every_reader(tmp_path):
    root = _copy_with_recipe(tmp_path)
    done = subprocess.run([sys.executable, "-c", CHECKS], cwd=root, env={"PYTHONPATH": str(root),
                          "PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "derived everywhere" in done.stdout, done.stdout + done.stderr


def test_every_knob_names_an_engine_option_with_the_same_values():
    """The engine (which cannot import the spec) keeps its own lists; each knob's engine option must exist and
    take exactly the knob's choices."""
    fields = {f.name for f in EngineConfig.__dataclass_fields__.values()}
    for knob in KNOBS:
        assert knob.engine in fields, knob.name
        for value in knob.choices:
            EngineConfig(**{knob.engine: value, **({"prefix_caching": True} if knob.engine == "coordination" else {})})
        if knob.kind is str:
            try:
                EngineConfig(**{knob.engine: "not-" + knob.choices[0]})
            except ValueError:
                continue
            raise AssertionError(f"EngineConfig.{knob.engine} takes a value the knob {knob.name} does not have")


# --- the files that may still write a knob's declaration, and why ------------------------------------------
ALLOWED = {
    "spec/knobs.py": "the declaration itself",
    "impl/config.py": "the engine's own options and their checks: impl/ imports nothing of spec/ "
                      "(test_every_knob_names_an_engine_option_with_the_same_values holds them equal)",
    "impl/coordinator.py": "the coordinator checks its own coordination (impl/ imports nothing of spec/)",
    "checks/cli/cmd_prove.py": "names the options a user gave in a usage error (--release ... with --engine)",
    "checks/cli/cmd_conform.py": "conform fixes a campaign's string knobs by its own options (--leader-loss)",
    "checks/cli/cmd_workload.py": "its --capacity is the workload's cache size, another option of the same name",
}


def _facts(knob) -> list[str]:
    """Patterns of a knob's declaration written out: its help's opening words, its option flag as a string, its
    choices as a literal sequence (in any order)."""
    out = [re.escape(knob.help[:30]), re.escape(f'"{knob.option}"')]
    for order in itertools.permutations(knob.choices) if knob.choices else ():
        out.append(r"""["']""" + r"""["'],\s*["']""".join(map(re.escape, order)) + r"""["']""")
    return out


def test_no_file_restates_a_knobs_declaration():
    files = [p for room in ("spec", "impl", "checks", "scripts") for p in (ROOT / room).rglob("*.py")]
    found: dict[str, list[str]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        for knob in KNOBS:
            if any(re.search(pattern, text) for pattern in _facts(knob)):
                found.setdefault(str(path.relative_to(ROOT)), []).append(knob.name)
    extra = {f: names for f, names in found.items() if f not in ALLOWED}
    assert not extra, (f"these files restate a knob's declaration (help, option flag or choices): {extra}; "
                       "derive them from spec/knobs.py (flightcheck.spec.knobs.KNOB) instead")
    assert set(found) == set(ALLOWED), f"no longer restated, drop from ALLOWED: {set(ALLOWED) - set(found)}"
