"""The blob store beside a dump, handed to us with the dump: only its own regular files are read.

Each test writes a trace (real SDK spans through our exporter) whose tool
result lives in a blob, then arranges the blob store the way a hostile
sender could: a symbolic link to a file elsewhere, a FIFO, a blob past the
size limit, bytes that are not what the name says.  ``show``, ``check`` and
``convert`` run as a user runs them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import otel_replay
from otel_replay import attributes as A
from otel_replay.payload.blobs import BlobStore
from tests.fixtures.cli import cli_run

SECRET = b"root:x:0:0:root:/root:/bin/bash\n"  # what a link to /etc/passwd would show
DIGEST = hashlib.sha256(SECRET).hexdigest()


def write_trace(path: Path, ref: str, digest: str | None = None) -> None:
    """An agent run whose tool result is the blob ``ref`` (no digest attribute unless given)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(otel_replay.FileSpanExporter(path)))
    tracer = provider.get_tracer("test")
    tool: dict[str, Any] = {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: "read_file",
        A.TOOL_CALL_ID: "c1",
        A.TOOL_CALL_ARGUMENTS: '{"name": "report"}',
        A.REF + A.TOOL_CALL_RESULT: ref,
    }
    if digest is not None:
        tool[A.SHA256 + A.TOOL_CALL_RESULT] = digest
    with tracer.start_as_current_span(
        "invoke_agent support", attributes={A.OPERATION_NAME: "invoke_agent"}
    ):
        with tracer.start_as_current_span("execute_tool read_file", attributes=tool):
            pass
    provider.shutdown()


def result_payload(path: Path) -> Any:
    (run,) = otel_replay.load(path)
    (step,) = run.tool_steps()
    assert step.tool is not None
    return step.tool.result_payload


def check_json(path: Path) -> dict[str, Any]:
    done = cli_run("check", "--json", path)
    assert done.returncode == 1, done.stderr  # the result is missing: not replayable
    (run,) = json.loads(done.stdout)["runs"]
    return dict(run)


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "runs.otlp"
    write_trace(path, "sha256:" + DIGEST)
    return path


def test_a_blob_kept_as_written_is_read(dump: Path) -> None:
    BlobStore(dump).put(SECRET)
    p = result_payload(dump)
    assert p.status == "unverified" and p.data == SECRET  # no digest attribute: all there is


def test_a_blob_that_is_a_link_is_not_followed(dump: Path, tmp_path: Path) -> None:
    """A link to a file outside the store (here a stand-in for /etc/passwd): never read."""
    outside = tmp_path / "passwd"
    outside.write_bytes(SECRET)
    store = BlobStore(dump).root
    store.mkdir()
    (store / DIGEST).symlink_to(outside)
    p = result_payload(dump)
    assert p.status == "missing" and p.data is None
    assert "is a symbolic link; not followed" in p.reason
    shown = cli_run("show", "--step", "1", dump)
    assert "root:x:0:0" not in shown.stdout + shown.stderr
    assert "is a symbolic link; not followed" in json.dumps(check_json(dump)["problems"])


def test_a_link_to_dev_zero_is_not_followed(dump: Path) -> None:
    store = BlobStore(dump).root
    store.mkdir()
    (store / DIGEST).symlink_to("/dev/zero")
    p = result_payload(dump)
    assert p.status == "missing" and "symbolic link" in p.reason


def test_a_fifo_does_not_block(dump: Path) -> None:
    store = BlobStore(dump).root
    store.mkdir()
    os.mkfifo(store / DIGEST)
    run = check_json(dump)  # a process of its own, with a timeout: a blocked read fails it
    assert "steps[1].result" in run["missing"]
    assert "is not a regular file; not read" in json.dumps(run["problems"])


def test_a_blob_past_the_size_limit_is_refused(dump: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    BlobStore(dump).put(SECRET)
    monkeypatch.setenv("OTEL_REPLAY_MAX_BLOB_BYTES", "16")
    p = result_payload(dump)
    assert p.status == "missing"
    assert f"holds {len(SECRET)} bytes, past the 16 bytes limit (OTEL_REPLAY_MAX_BLOB_BYTES)" in (
        p.reason
    )


def test_a_blob_whose_bytes_are_not_its_name_is_refused(dump: Path) -> None:
    """No digest attribute on the span: the blob's name is the only digest there is."""
    store = BlobStore(dump).root
    store.mkdir()
    (store / DIGEST).write_bytes(b"something else")
    p = result_payload(dump)
    assert p.status == "missing" and "does not hold the bytes its name is the digest of" in p.reason


def test_a_blob_store_that_is_a_link_is_not_followed(dump: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / DIGEST).write_bytes(SECRET)
    BlobStore(dump).root.symlink_to(elsewhere)
    p = result_payload(dump)
    assert p.status == "missing" and "is a symbolic link; not read" in p.reason


@pytest.mark.parametrize(
    "ref",
    [
        "sha256:../../passwd",
        "sha256:" + "../" * 21 + "x",
        "sha256:" + DIGEST.upper(),
        "md5:" + DIGEST,
    ],
)
def test_a_reference_that_is_not_a_digest_names_no_file(tmp_path: Path, ref: str) -> None:
    path = tmp_path / "runs.otlp"
    write_trace(path, ref)
    (tmp_path / "passwd").write_bytes(SECRET)
    BlobStore(path).put(SECRET)
    p = result_payload(path)
    assert p.status == "missing" and "is not of the form sha256:<64 hex digits>" in p.reason


def test_convert_copies_only_the_blobs_it_may_read(dump: Path, tmp_path: Path) -> None:
    outside = tmp_path / "passwd"
    outside.write_bytes(SECRET)
    store = BlobStore(dump)
    good = store.put(b"a payload of the recording")
    (store.root / DIGEST).symlink_to(outside)
    out = tmp_path / "out" / "runs.otlp"
    done = cli_run("convert", dump, "-o", out)
    assert done.returncode == 2  # an input fault: reported, after everything good was written
    assert f"{store.root / DIGEST}: blob is a symbolic link; not followed\n" in done.stderr
    copied = BlobStore(out)
    assert copied.digests() == [good.removeprefix("sha256:")]
    assert not any(SECRET in p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert out.exists() and result_payload(out).status == "missing"
