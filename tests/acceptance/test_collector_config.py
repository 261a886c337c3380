"""collector-config/: every key is one its component documents, and the dump it writes loads.

collector-config/documented-keys.json lists, per component, the keys the
pinned Collector-contrib sources document (and which file versions say so).
No Collector binary runs here, so the second half writes a dump exactly as
the pinned file exporter would (proto records, each zstd-compressed inside
its 4-byte length, rotated files named by timberjack beside the live file)
and loads the directory.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
import zstandard
from examples.order_support.agent import run_agent
from examples.order_support.scripted_model import ScriptedModel

import otel_replay
from otel_replay.otlp import framing
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.sources.files import expand
from tests.fixtures.data import ROOT, found
from tests.fixtures.recording import in_memory

CONFIG_DIR = ROOT / "collector-config"
DOCUMENTED: dict[str, Any] = json.loads((CONFIG_DIR / "documented-keys.json").read_text())
VERSION = DOCUMENTED["collector_contrib_version"]
CONFIGS = found(CONFIG_DIR, "*.yaml")
SECTIONS = ("receivers", "processors", "exporters")


def load_config(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), f"{path.name} is not a YAML mapping"
    return doc


def key_paths(block: Any, prefix: str = "") -> Iterator[str]:
    """Every key of a component block as a dotted path, intermediate mappings included."""
    if not isinstance(block, dict):
        return
    for key, value in block.items():
        path = f"{prefix}{key}"
        yield path
        yield from key_paths(value, path + ".")


def config_problems(doc: dict[str, Any]) -> list[str]:
    """What in a Collector configuration the pinned sources do not document."""
    problems: list[str] = []
    for section in SECTIONS:
        for component_id, block in (doc.get(section) or {}).items():
            ctype = component_id.split("/", 1)[0]
            component = DOCUMENTED[section].get(ctype)
            if component is None:
                problems.append(f"{section}.{component_id}: no documented component {ctype!r}")
                continue
            documented = component["keys"]
            for path in key_paths(block):
                if not any(d == path or d.startswith(path + ".") for d in documented):
                    problems.append(f"{section}.{component_id}: undocumented key {path!r}")
    service = doc.get("service") or {}
    known = DOCUMENTED["service"]
    problems += [f"service: undocumented key {k!r}" for k in service if k not in known["keys"]]
    for pipeline_id, pipeline in (service.get("pipelines") or {}).items():
        if pipeline_id.split("/", 1)[0] not in known["pipeline_types"]:
            problems.append(f"pipeline {pipeline_id}: unknown signal")
        for key, refs in (pipeline or {}).items():
            if key not in known["pipeline_keys"]:
                problems.append(f"pipeline {pipeline_id}: undocumented key {key!r}")
                continue
            defined = doc.get(key) or {}
            problems += [
                f"pipeline {pipeline_id}: {key} names undefined {ref!r}"
                for ref in refs
                if ref not in defined
            ]
    return problems


def uncommented_blocks(text: str) -> list[str]:
    """Component blocks (and sections) with no comment right above them."""
    lines = text.splitlines()
    missing = []
    for i, line in enumerate(lines):
        if re.fullmatch(r"( {2})?[A-Za-z][\w/.-]*:", line) and not line.startswith("service"):
            above = next((p for p in reversed(lines[:i]) if p.strip()), "")
            if line.startswith("  ") and not above.lstrip().startswith("#"):
                missing.append(line.strip())
    return missing


def test_there_are_configs_to_check() -> None:
    assert {p.name for p in CONFIGS} >= {
        "dump-and-forward.yaml",
        "reingest-json-dump.yaml",
        "dump-and-clickhouse.yaml",
    }


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_key_is_documented_and_pipelines_are_wired(path: Path) -> None:
    doc = load_config(path)
    assert config_problems(doc) == []
    assert doc["service"]["pipelines"], "a configuration with no pipeline does nothing"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_each_file_names_the_pinned_version_and_comments_its_blocks(path: Path) -> None:
    text = path.read_text()
    assert VERSION in text.split("\n\n", 1)[0], "the header names the pinned version"
    assert uncommented_blocks(text) == []


def test_the_readme_names_the_same_version() -> None:
    assert VERSION in (CONFIG_DIR / "README.md").read_text()


def test_the_checker_catches_a_misspelt_key_an_unknown_component_and_a_dangling_reference() -> None:
    doc = copy.deepcopy(load_config(CONFIG_DIR / "dump-and-forward.yaml"))
    rotation = doc["exporters"]["file/traces"]["rotation"]
    rotation["max_megabyte"] = rotation.pop("max_megabytes")
    doc["exporters"]["fiel/spare"] = {"path": "x"}
    doc["service"]["pipelines"]["traces"]["exporters"].append("otlp/nowhere")
    assert config_problems(doc) == [
        "exporters.file/traces: undocumented key 'rotation.max_megabyte'",
        "exporters.fiel/spare: no documented component 'fiel'",
        "pipeline traces: exporters names undefined 'otlp/nowhere'",
    ]
    # A key nested under a documented leaf is not documented either.
    doc = copy.deepcopy(load_config(CONFIG_DIR / "dump-and-forward.yaml"))
    doc["exporters"]["otlphttp/backend"]["retry_on_failure"] = {"enabled": True}
    assert config_problems(doc) == [
        "exporters.otlphttp/backend: undocumented key 'retry_on_failure.enabled'"
    ]


def test_an_uncommented_block_is_caught() -> None:
    text = (CONFIG_DIR / "reingest-json-dump.yaml").read_text()
    stripped = re.sub(r"(\n  #[^\n]*)+(?=\n  otlpjsonfile:)", "", text)
    assert stripped != text
    assert uncommented_blocks(stripped) == ["otlpjsonfile:"]


# --- the dump dump-and-forward.yaml writes --------------------------------------


# What the pinned file exporter writes with `format: proto` + `compression: zstd`
# (documented-keys.json, exporters.file.facts): each request is compressed on
# its own and written as a 4-byte big-endian length and the compressed bytes.
def collector_record(body: bytes) -> bytes:
    compressed = zstandard.ZstdCompressor().compress(body)
    return framing.HEADER.pack(len(compressed)) + compressed


# Rotated files keep the live name with the rotation time (UTC, millisecond
# layout 2006-01-02T15-04-05.000) and, since the move to timberjack, a reason
# before the extension; older releases (lumberjack) wrote no reason.
NAMINGS = {
    "timberjack": "traces-{ts}-size.binpb",
    "lumberjack": "traces-{ts}.binpb",
}


def record_a_run() -> list[Any]:
    with in_memory() as exporter:
        answer = run_agent("Where is my order?", model=ScriptedModel(), user_id="u_7710")
    spans = list(exporter.get_finished_spans())
    assert answer and len(spans) >= 4
    return spans


@pytest.mark.parametrize("naming", sorted(NAMINGS))
def test_a_rotated_zstd_dump_loads_and_replays(tmp_path: Path, naming: str) -> None:
    spans = record_a_run()
    dump = tmp_path / "otel-dump"
    dump.mkdir()
    # Batches in the order the Collector received them, cut by two rotations:
    # the trace is spread over three files.
    cut = [spans[:2], spans[2:4], spans[4:]]
    names = [
        NAMINGS[naming].format(ts="2026-05-11T09-30-12.345"),
        NAMINGS[naming].format(ts="2026-05-11T10-02-00.007"),
        "traces.binpb",
    ]
    for name, batch in zip(names, cut, strict=True):
        # Two requests per file (the batch processor flushes more than once).
        half = len(batch) // 2
        (dump / name).write_bytes(
            b"".join(
                collector_record(encode_request(part)) for part in (batch[:half], batch[half:])
            )
        )

    assert expand([dump]) == [str(dump / n) for n in names]  # oldest first, live file last
    runs = otel_replay.load(dump, strict=True)
    (run,) = runs
    assert len(run.steps) == len(spans)
    assert run.replayable
    with otel_replay.replay(run) as session:
        answer = run_agent("Where is my order?", model=session.model, user_id="u_7710")
        assert session.check_output(answer)
    assert session.report().matched

    # One trace out of the dump goes through the trace index.
    (again,) = otel_replay.load(dump, trace_id=run.trace_ids[0])
    assert len(again.steps) == len(spans)
