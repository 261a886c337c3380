"""Exact payloads kept in a store of the team's own, the traces elsewhere, read back exactly."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import otel_replay
from otel_replay import attributes as A
from otel_replay.payload import references as content_refs
from tests.fixtures.billing import billing_run
from tests.fixtures.recording import in_memory, recording

INVOICE = b"%PDF-1.7\xff\x00" + bytes(range(256)) * 4  # 1 KiB and some, not UTF-8


def _billing_run() -> None:
    billing_run(INVOICE)


@pytest.fixture(autouse=True)
def _no_stores_allowed() -> Iterator[None]:
    content_refs.use_content_refs(None)
    yield
    content_refs.use_content_refs(None)


def _result(run: otel_replay.Run) -> otel_replay.Payload | None:
    (tool,) = run.tool_steps()
    assert tool.tool is not None
    return tool.tool.result_payload


def _record_to(trace: Path, store: Path | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The billing run recorded to ``trace``, its large payloads to ``store`` (settings
    from the environment, as a deployment gives them)."""
    monkeypatch.setenv("OTEL_REPLAY_PAYLOAD_STORE", str(store))
    monkeypatch.setenv("OTEL_REPLAY_MAX_INLINE_BYTES", "512")
    with recording(trace):
        _billing_run()
    monkeypatch.delenv("OTEL_REPLAY_PAYLOAD_STORE")


def test_the_file_exporter_keeps_large_payloads_in_the_store_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "payloads"
    trace = tmp_path / "run.otlp"
    _record_to(trace, store, monkeypatch)
    digest = hashlib.sha256(INVOICE).hexdigest()
    assert (store / digest).read_bytes() == INVOICE
    assert not (tmp_path / "run.otlp.blobs").exists()

    (run,) = otel_replay.load(trace)
    missing = _result(run)
    assert missing is not None and missing.status == "missing"
    assert "--refs" in missing.reason and run.kit.verdict != "full"

    content_refs.use_content_refs([str(store)])
    (run,) = otel_replay.load(trace)
    found = _result(run)
    assert found is not None and found.status == "exact" and found.value() == INVOICE
    assert run.kit.verdict == "full" and run.replayable


def test_the_stores_allowed_at_load_are_those_read_when_the_run_is_first_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's steps are built when first used: its payloads still come from the stores
    allowed when it was loaded, not from those allowed by then."""
    store = tmp_path / "payloads"
    trace = tmp_path / "run.otlp"
    _record_to(trace, store, monkeypatch)
    content_refs.use_content_refs([str(store)])
    (allowed,) = otel_replay.load(trace)
    content_refs.use_content_refs(None)
    (refused,) = otel_replay.load(trace)
    content_refs.use_content_refs([str(store)])
    found, missing = _result(allowed), _result(refused)  # both built now
    assert found is not None and found.status == "exact" and found.value() == INVOICE
    assert missing is not None and missing.status == "missing" and "--refs" in missing.reason


def test_the_processor_moves_large_payloads_out_of_every_exporters_spans(tmp_path: Path) -> None:
    store = tmp_path / "payloads"
    with in_memory(payload_store=f"file://{store}", max_inline_bytes=512) as exporter:
        _billing_run()
        spans = exporter.get_finished_spans()
    (tool,) = [s for s in spans if s.name.startswith("execute_tool")]
    attrs = dict(tool.attributes or {})
    key = A.TOOL_CALL_RESULT
    assert A.BYTES + key not in attrs
    digest = hashlib.sha256(INVOICE).hexdigest()
    assert attrs[A.REF + key] == f"sha256:{digest}"
    # Uploaded by the processor's own thread; the provider's shutdown waited for it.
    assert (store / digest).read_bytes() == INVOICE


def test_a_payload_whose_bytes_do_not_match_its_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "payloads"
    trace = tmp_path / "run.otlp"
    _record_to(trace, store, monkeypatch)
    (blob,) = store.iterdir()
    blob.write_bytes(INVOICE[::-1])
    content_refs.use_content_refs([str(store)])
    (run,) = otel_replay.load(trace)
    refused = _result(run)
    assert refused is not None and refused.status == "missing"
    assert "does not hash to its name" in refused.reason and not run.replayable


def test_a_store_that_fails_costs_the_payload_never_the_app(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the store should be")
    with in_memory(payload_store=f"file://{blocked}", max_inline_bytes=512) as exporter:
        _billing_run()  # returns as usual
        spans = exporter.get_finished_spans()
    (tool,) = [s for s in spans if s.name.startswith("execute_tool")]
    assert (A.REF + A.TOOL_CALL_RESULT) in (tool.attributes or {})


def test_payloads_kept_in_an_object_store_read_back_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that is no directory (fsspec's in-memory filesystem, as S3 or GCS would
    be): the payloads go there, and come back exactly from there once it is allowed."""
    import fsspec

    store = "memory://payloads-of-billing"
    trace = tmp_path / "run.otlp"
    _record_to(trace, store, monkeypatch)
    digest = hashlib.sha256(INVOICE).hexdigest()
    assert fsspec.filesystem("memory").cat(f"/payloads-of-billing/{digest}") == INVOICE

    (run,) = otel_replay.load(trace)
    missing = _result(run)
    assert missing is not None and missing.status == "missing" and not run.replayable
    content_refs.use_content_refs([store])
    (run,) = otel_replay.load(trace, strict=True)
    kept = _result(run)
    assert kept is not None and kept.value() == INVOICE and run.replayable
