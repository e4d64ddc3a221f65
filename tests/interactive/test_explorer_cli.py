"""``flightcheck explorer``'s arguments: every bad one is exit 2 naming it, before anything is served."""

from __future__ import annotations

import socket

import pytest

from tests.cli.bad_input import flat, invoke


@pytest.mark.parametrize("args, message", [
    (["--scenario", "burst9"], "error: unknown scenario 'burst9'; known: burst2"),
    (["--variant", "sloppy"], "error: unknown variant 'sloppy'; known: correct"),
    (["--release", "later"], "error: --release must be one of after-prefill, on-completion; got 'later'"),
    (["--leader-loss", "never"], "error: --leader-loss must be one of release-all, promote; got 'never'"),
    (["--scenario", "nocache", "--coordination", "single-flight"], "error: not a policy: coordination single-flight needs prefix caching"),
    (["--log", "a.jsonl", "--path", "b.txt"], "error: give either --log or --path, not both"),
    (["--log", "missing.jsonl"], "error: missing.jsonl: no such file"),
    (["--path", "missing.txt"], "error: missing.txt: no such file"),
])
def test_bad_arguments_exit_2_naming_them(args, message):
    result = invoke("explorer", *args)
    assert result.exit_code == 2 and flat(result.output).startswith(message), result.output


def test_bad_files_exit_2_naming_the_line(tmp_path):
    log = tmp_path / "events.jsonl"
    log.write_text('{"seq": 0, "action": "arrive"}\n')
    result = invoke("explorer", "--log", log)
    assert result.exit_code == 2 and f"{log} line 1, field" in flat(result.output), result.output
    path = tmp_path / "cx.txt"
    path.write_text("arrive(0)\nprefill(0)\n")
    result = invoke("explorer", "--path", path)
    assert result.exit_code == 2 and "path step 2: prefill(0) is not enabled" in flat(result.output), result.output


def test_a_busy_port_exits_2():
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = invoke("explorer", "--port", port)
    assert result.exit_code == 2 and f"cannot bind 127.0.0.1:{port}" in flat(result.output), result.output
