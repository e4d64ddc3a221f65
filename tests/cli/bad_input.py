"""Shared by the bad-input tests: run the command line in-process and insist that no exception escaped."""

from __future__ import annotations

import json
import traceback

from typer.testing import CliRunner, Result

from flightcheck.checks.cli.app import app

RUNNER = CliRunner()


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    """``flightcheck ARGS`` in this process; fails the test if a traceback would have reached the user."""
    result = RUNNER.invoke(app, [str(a) for a in args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"flightcheck {' '.join(map(str, args))} raised "
                             + "".join(traceback.format_exception(result.exception)))
    return result


def flat(text: str) -> str:
    """``text`` with every run of whitespace as one space and a table's column rules dropped (rich may wrap
    a table cell's text over several rows)."""
    return " ".join(text.replace("│", " ").split())


def jsonl(*records: object) -> bytes:
    """JSON lines: dicts are dumped, strings and bytes are taken as they are; one newline after each."""
    out = b""
    for r in records:
        out += (r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r)).encode()) + b"\n"
    return out


def without(record: dict, *fields: str) -> dict:
    """``record`` with ``fields`` left out."""
    return {k: v for k, v in record.items() if k not in fields}


def assert_names(result: Result, path, line: int | None, field: str | None, fragment: str) -> None:
    """Exit 2, and a message that names the file, the line, the field and what is wrong."""
    message = flat(result.output)
    assert result.exit_code == 2, (result.exit_code, message)
    assert message.startswith("error: "), message
    where = f"{path} line {line}" if line is not None else f"{path}:"
    assert where in message, (where, message)
    if field is not None:
        assert f"{where}, field {field!r}: " in message, (field, message)
    else:
        assert "field '" not in message, message
    assert fragment in message, (fragment, message)
    assert "Traceback" not in result.output
