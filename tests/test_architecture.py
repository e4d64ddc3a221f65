"""The import rule of docs/architecture.md: every import of a flightcheck module is one its room may make.

The allowed imports are read from the table in docs/architecture.md, so the rule and its picture are one
fact: a new import that the table does not allow fails here, and so does a table that names a room that
does not exist or leaves one out.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _table() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    rules = {}
    for line in text.splitlines():
        m = re.match(r"\| `([a-z/_]+)` \| .* \| (.*) \|$", line)
        if m:
            allowed = m.group(2)
            rules[m.group(1)] = {"*"} if allowed == "(every room)" else set(re.findall(r"`([a-z/_]+)`", allowed))
    return rules


RULES = _table()


def _room(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    if parts[0] != "checks":
        return parts[0]
    return "checks/" + (parts[1][:-3] if parts[1].endswith(".py") else parts[1])


def _target(module: str) -> str | None:
    q = module.split(".")
    if q[0] != "flightcheck" or len(q) < 2:
        return None
    if q[1] == "checks":
        return "checks/" + q[2] if len(q) > 2 else "checks"
    return q[1]


def _violations(room: str, source: str) -> list[tuple[int, str]]:
    """(line, room imported) for every import in ``source`` that ``room`` may not make."""
    allowed = RULES[room]
    out = []
    for node in ast.walk(ast.parse(source)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            target = _target(name)
            if target is not None and target != room and "*" not in allowed and target not in allowed:
                out.append((node.lineno, target))
    return out


def _sources():
    for top in ("spec", "impl", "checks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.parent == ROOT / "checks" and path.name == "__init__.py":
                continue  # the package's docstring, no imports
            yield path, _room(path)


def test_the_table_names_every_room_and_only_rooms():
    rooms = {"spec", "impl"} | {"checks/" + (p.stem if p.is_file() else p.name) for p in (ROOT / "checks").iterdir()
                                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert set(RULES) == rooms


def test_every_import_is_allowed_by_the_table():
    bad = [f"{path.relative_to(ROOT)}:{line}: {room} imports {target}"
           for path, room in _sources() for line, target in _violations(room, path.read_text())]
    assert bad == []


def test_a_forbidden_import_is_reported():
    assert _violations("impl", "import os\nfrom flightcheck.spec.model import FlightSpec\n") == [(2, "spec")]
    assert _violations("checks/report", "def f():\n    from flightcheck.checks.cli.app import app\n") == [(2, "checks/cli")]
    assert _violations("checks/cli", "from flightcheck.checks.mutate.runner import run_mutant\n") == []
    assert not any("checks/cli" in allowed for room, allowed in RULES.items() if room != "checks/cli")
