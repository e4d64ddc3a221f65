"""The server stage runs the server under every ``flightcheck serve`` option that changes what it does, a row
per option (and per value of the policy options), and each row fails on a server that ignores its option.

The options are read from the ``serve`` command's declaration: one the table of checks/server/options.py
neither checks nor lists as changing nothing observable fails here. Each row is then run on a server
patched to ignore its option where the server reads it (its default read instead; for a row of the
default value, another value), and must fail, naming what the server did.
"""

import dataclasses

import pytest

from flightcheck.checks.server import options as table
from flightcheck.checks.server.campaign import server_stage
from flightcheck.checks.server.probe_server import BASELINE
from flightcheck.checks.suite.context import Context
from flightcheck.impl.config import EngineConfig

ROWS = {row.item: row for row in table.ROWS}
# For a row of an option's default value, the value a wrong server reads instead.
OTHER = {"coordination": "none", "release": "on-completion", "publication": "on-completion", "leader_loss": "promote"}


def serve_parameters():
    """The ``serve`` command's declared parameters (click's, after typer assembled them)."""
    import typer.main

    from flightcheck.checks.cli.app import build_app

    return {p.name: p for p in typer.main.get_command(build_app()).commands["serve"].params}


def test_every_declared_serve_option_has_a_row_or_a_reason():
    declared = set(serve_parameters())
    checked = {row.option for row in table.ROWS}
    assert not checked & set(table.NOT_BEHAVIOUR), "an option is both checked and said to change nothing"
    assert all(len(reason) > 40 for reason in table.NOT_BEHAVIOUR.values())
    missing = declared - checked - set(table.NOT_BEHAVIOUR)
    assert not missing, (f"serve options with no row in checks/server/options.py ROWS and no reason in "
                         f"NOT_BEHAVIOUR: {sorted(missing)}")
    assert checked | set(table.NOT_BEHAVIOUR) == declared, "the table names options serve does not declare"
    assert len(ROWS) == len(table.ROWS), "two rows share a name"


def test_every_value_of_the_policy_options_has_a_row():
    """Every value of every string knob (spec/knobs.py), on the serve option its ``engine`` names."""
    from flightcheck.spec.knobs import KNOBS

    for knob in KNOBS:
        if knob.kind is str:
            assert {r.settings[knob.engine] for r in table.ROWS if r.option == knob.engine} == set(knob.choices), knob


def test_rows_run_every_other_option_at_serves_declared_default():
    for name, param in serve_parameters().items():
        if name in ("model", "port"):  # the tiny model, any free port
            continue
        assert BASELINE[name] == param.default, name
    for row in table.ROWS:
        assert next(iter(row.settings)) == row.option, row.item
        # A row of a default value is one of several values' rows (OTHER names the value it is told from).
        assert row.settings[row.option] != BASELINE[row.option] or row.option in OTHER, row.item


def test_every_row_passes_on_todays_server(tmp_path):
    rows = server_stage(Context(quick=True, save_dir=tmp_path), options=sorted({r.option for r in table.ROWS}))
    assert [r.item for r in rows] == list(ROWS)
    assert all(r.ok for r in rows), "\n".join(f"{r.item}: {r.detail}" for r in rows if not r.ok)
    assert all(r.stage == "server" and r.evidence["option"] for r in rows)
    assert rows[0].item == "serve --api-key KEY: missing 401, wrong 401, right 200 (/v1/models, completions, chat)"


# --- servers that ignore one option each --------------------------------------------------------------
def _limits_read_as_default(monkeypatch, field, only_chunked=False):
    """read_body (the one place a body's limits are read) reads Limits' default for ``field`` (with
    ``only_chunked``, for bodies that declare no length only)."""
    from flightcheck.impl.server import Limits, app

    original = app.read_body

    async def read_body(request, limits):
        if not only_chunked or "content-length" not in request.headers:
            limits = dataclasses.replace(limits, **{field: getattr(Limits(), field)})
        return await original(request, limits)

    monkeypatch.setattr(app, "read_body", read_body)


def _uvicorn_default(monkeypatch, keyword, option):
    """uvicorn is configured with the option's default (the server reads the option into its Config)."""
    import flightcheck.impl.server as server

    original = server.uvicorn.Config
    monkeypatch.setattr(server.uvicorn, "Config", lambda *a, **k: original(*a, **{**k, keyword: BASELINE[option]}))


def _protocol_default(monkeypatch, position, option):
    """The connection limits of impl/server/protocol.py get the option's default (header deadline or per client)."""
    import flightcheck.impl.server as server

    original = server.with_header_deadline

    def deadline(seconds, per_client=None):
        values = [seconds, per_client]
        values[position] = BASELINE[option]
        return original(*values)

    monkeypatch.setattr(server, "with_header_deadline", deadline)


def _config_read_as(monkeypatch, row):
    """The engine is built with another value of the row's option (its default, or for a row of the default
    another one), as a server that dropped the option would build it."""
    from flightcheck.impl.engine import Engine

    value = row.settings[row.option]
    other = OTHER[row.option] if value == BASELINE[row.option] else BASELINE[row.option]
    original = Engine.tiny.__func__

    def tiny(cls, config=None, **kwargs):
        return original(cls, dataclasses.replace(config, **{row.option: other}), **kwargs)

    monkeypatch.setattr(Engine, "tiny", classmethod(tiny))


def _open_log(monkeypatch, path=True, keep=True):
    """The engine's event log opens without its file (``path``), or keeps serve's default number of events."""
    from flightcheck.impl.engine import Engine

    original = Engine._open_log

    def open_log(self, event_log_path, event_history):
        return original(self, event_log_path if path else None,
                        event_history if keep or event_history is None else BASELINE["event_history"])

    monkeypatch.setattr(Engine, "_open_log", open_log)


def _ignore(monkeypatch, row):
    import flightcheck.impl.server as server
    from flightcheck.impl.server import app

    option = row.option
    if option == "api_key":
        monkeypatch.setattr(server, "api_key_of", lambda api_key, name="api_key": None)
    elif option == "max_body_bytes":
        _limits_read_as_default(monkeypatch, "max_body_bytes")
    elif option == "body_timeout":
        _limits_read_as_default(monkeypatch, "body_timeout_s")
    elif option == "default_max_tokens":
        original = app.sampling_of
        monkeypatch.setattr(app, "sampling_of", lambda *a, **k: original(
            *a, **{**k, "default_max_tokens": BASELINE["default_max_tokens"]}))
    elif option in ("header_timeout", "max_connections_per_client"):
        _protocol_default(monkeypatch, 0 if option == "header_timeout" else 1, option)
    elif option in ("keep_alive", "max_connections", "shutdown_timeout"):
        keyword = {"keep_alive": "timeout_keep_alive", "max_connections": "limit_concurrency",
                   "shutdown_timeout": "timeout_graceful_shutdown"}[option]
        _uvicorn_default(monkeypatch, keyword, option)
    elif option == "history":
        original = server.EngineLoop
        monkeypatch.setattr(server, "EngineLoop", lambda engine, *, history, **k: original(
            engine, history=BASELINE["history"] if history is not None else None, **k))
    elif option == "event_history":
        _open_log(monkeypatch, keep=False)
    elif option == "events":
        _open_log(monkeypatch, path=False)
    elif option == "monitor":
        from flightcheck.checks.conform.monitor import Monitor

        monkeypatch.setattr(Monitor, "__init__", lambda self, engine, *a, **k: None)  # never attached
    elif option in {f.name for f in dataclasses.fields(EngineConfig)}:
        _config_read_as(monkeypatch, row)
    else:
        raise AssertionError(f"no server ignoring --{option.replace('_', '-')} is planted here: add one to _ignore")


@pytest.mark.parametrize("item", list(ROWS))
def test_a_row_fails_on_a_server_that_ignores_its_option(item, monkeypatch):
    row = ROWS[item]
    _ignore(monkeypatch, row)
    result = table.run_row(row)
    assert not result.ok and not result.error, (item, result.detail)
    assert result.item == item and not result.detail.startswith("serve refuses"), result.detail  # the probe failed


def test_max_body_bytes_fails_on_a_server_that_ignores_it_only_for_chunked_bodies(monkeypatch):
    row = next(r for r in table.ROWS if r.option == "max_body_bytes")
    _limits_read_as_default(monkeypatch, "max_body_bytes", only_chunked=True)
    result = table.run_row(row)
    assert not result.ok and not result.error
    assert result.detail == "a 2049 B body chunked in 64 B writes: 200, not 413", result.detail


def test_a_row_a_server_refuses_to_start_under_fails_naming_why():
    row = table.OptionRow("max_body_bytes", {"max_body_bytes": 0}, "nothing", lambda server: "unreachable")
    result = table.run_row(row)
    assert not result.ok and not result.error
    assert result.detail == "serve refuses these options: max_body_bytes must be an integer >= 1, got 0"


def test_only_the_rows_asked_for_run_and_the_stage_keeps_its_other_rows_apart(tmp_path):
    rows = server_stage(Context(quick=True, save_dir=tmp_path), options=["release"])
    assert [r.item for r in rows] == [r.item for r in table.ROWS if r.option == "release"]
    assert [r.item for r in server_stage(Context(quick=True, save_dir=tmp_path), seeds=[0])] == ["seed 0"]
