"""The Mooncake traces ship with the project: checksums, provenance and license, read by default."""

import hashlib
import re
from pathlib import Path

from flightcheck.checks.workload.trace import bundled_traces_dir, load_trace, shared_trace_path

NAMES = ("conversation", "synthetic")


def test_the_shipped_traces_match_their_checksums_and_provenance():
    folder = bundled_traces_dir()
    sums = dict(line.split()[::-1] for line in (folder / "SHA256SUMS").read_text().splitlines())
    source = (folder / "SOURCE.md").read_text()
    for name in NAMES:
        file = f"{name}_trace.jsonl"
        digest = hashlib.sha256((folder / file).read_bytes()).hexdigest()
        assert sums[file] == digest
        assert re.search(rf"\| {file} \| [\d,]+ \| {digest} \|", source), f"SOURCE.md's checksum of {file}"
    assert "Apache License" in (folder / "LICENSE-APACHE").read_text()
    assert "LICENSE-APACHE" in (folder / "NOTICE.md").read_text()


def test_named_traces_are_read_from_the_project_unless_overridden(tmp_path, monkeypatch):
    monkeypatch.delenv("FLIGHTCHECK_SHARED", raising=False)
    for name in NAMES:
        assert shared_trace_path(name) == bundled_traces_dir() / f"{name}_trace.jsonl"
    assert load_trace(shared_trace_path("synthetic")).num_requests == 3993
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "conversation_trace.jsonl").write_text(
        '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}\n')
    monkeypatch.setenv("FLIGHTCHECK_SHARED", str(tmp_path))
    assert shared_trace_path("conversation") == tmp_path / "traces" / "conversation_trace.jsonl"
    assert load_trace(shared_trace_path("conversation")).num_requests == 1


def test_the_traces_are_package_data():
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"flightcheck.data" = "data"' in text and '"traces/*.jsonl"' in text


def test_the_workload_stage_passes_with_no_shared_folder_beside_the_clone(tmp_path, monkeypatch, capsys):
    """A fresh clone has no ../shared: the check's workload stage reads the shipped traces."""
    import json

    from flightcheck.checks.suite import job as suite
    from flightcheck.checks.workload import trace

    monkeypatch.delenv("FLIGHTCHECK_SHARED", raising=False)
    monkeypatch.setattr(trace, "shared_dir", lambda: tmp_path / "no-shared-here")
    assert suite.run_suite(as_json=True, stages=["workload"]) == "ok"
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = {r["item"]: r for r in out["rows"]}
    assert set(rows) == {"conversation W_eff=1s", "synthetic W_eff=1s"} and all(r["ok"] for r in rows.values())
