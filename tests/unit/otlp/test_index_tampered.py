"""A trace index that does not hold for its dump is never believed: the dump is read instead.

The index travels beside the dump, so it may be crafted, or left over from a
dump rewritten since.  Each test takes a real dump and the index our code
wrote for it, spoils the index, and checks that ``load(dump, trace_id=...)``,
``show --trace`` and a windowed ``check`` give exactly what they give for the
same dump with no index beside it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.otlp import index
from otel_replay.otlp.sniff import iter_be32
from otel_replay.runs import stream
from otel_replay.sources.reader import SpanReader
from tests.fixtures.cli import cli_process
from tests.unit.otlp.test_index import write_dump


def runs_of(dump: Path, trace_id: str) -> list[dict[str, Any]]:
    out = [r.to_json() for r in otel_replay.load(dump, trace_id=trace_id, strict=True)]
    for run in out:
        run.pop("sources")
    return out


def cli_json(*args: str | Path) -> Any:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    for run in doc["runs"]:
        run.pop("sources", None)
    return doc


@pytest.fixture
def dumps(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A dump with the index our code writes, and the same dump elsewhere with none."""
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 30)
    clean = tmp_path / "clean" / "dump.otlp"
    clean.parent.mkdir()
    shutil.copyfile(dump, clean)
    list(SpanReader(dump, trace_ids=[ids[0]]))  # writes the index
    assert index.load(dump) is not None
    return dump, clean, ids


def entries(dump: Path) -> tuple[bytearray, int, int]:
    """The index file's bytes, where its entries start, and how many there are."""
    idx = index.load(dump)
    assert idx is not None
    return bytearray(index.index_path(dump).read_bytes()), index._HEADER.size, len(idx)


def entry(data: bytearray, start: int, i: int) -> tuple[bytes, int, int]:
    at = start + i * index._ENTRY.size
    return index._ENTRY.unpack(bytes(data[at : at + index._ENTRY.size]))


def put_entry(data: bytearray, start: int, i: int, value: tuple[bytes, int, int]) -> None:
    at = start + i * index._ENTRY.size
    data[at : at + index._ENTRY.size] = index._ENTRY.pack(*value)


def the_same_as_without_an_index(dump: Path, clean: Path, ids: list[str]) -> None:
    for tid in ids:
        assert runs_of(dump, tid) == runs_of(clean, tid), tid
    assert cli_json("show", "--json", "--trace", ids[7], dump) == cli_json(
        "show", "--json", "--trace", ids[7], clean
    )


def told(caplog: pytest.LogCaptureFixture, dump: Path) -> list[str]:
    """The log lines saying the index beside ``dump`` was not used."""
    name = f"{index.index_path(dump)} is not used"
    return [r.getMessage() for r in caplog.records if name in r.getMessage()]


def test_an_index_pointing_a_trace_at_another_record(
    dumps: tuple[Path, Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    dump, clean, ids = dumps
    data, start, count = entries(dump)
    wanted = bytes.fromhex(ids[7])
    i = next(i for i in range(count) if entry(data, start, i)[0] == wanted)
    other = next(
        e for j in range(count) if (e := entry(data, start, j))[1] != entry(data, start, i)[1]
    )
    put_entry(data, start, i, (wanted, other[1], other[2]))
    index.index_path(dump).write_bytes(data)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        the_same_as_without_an_index(dump, clean, ids)
    (line,) = told(caplog, dump)
    assert "not written on this machine for this dump, or was altered" in line


def test_an_index_missing_a_record_of_a_trace(dumps: tuple[Path, Path, list[str]]) -> None:
    """Batches cut across traces: drop one of the two records a trace spans."""
    dump, clean, ids = dumps
    data, start, count = entries(dump)
    split = [
        i for i in range(count - 1) if entry(data, start, i)[0] == entry(data, start, i + 1)[0]
    ]
    i = split[0]
    tid = entry(data, start, i)[0].hex()
    put_entry(data, start, i, entry(data, start, i + 1))  # the same record twice, one lost
    index.index_path(dump).write_bytes(data)
    assert len(runs_of(clean, tid)[0]["steps"]) == 3
    the_same_as_without_an_index(dump, clean, ids)


def test_an_index_of_the_dump_before_it_was_rewritten(dumps: tuple[Path, Path, list[str]]) -> None:
    """Rewritten with other traces of the same size, its modification time set back."""
    dump, clean, _ = dumps
    before = dump.stat()
    dump.unlink()
    clean.unlink()
    ids = write_dump(dump, 30)
    shutil.copyfile(dump, clean)
    assert dump.stat().st_size == before.st_size
    os.utime(dump, ns=(before.st_atime_ns, before.st_mtime_ns))
    the_same_as_without_an_index(dump, clean, ids)


def test_an_index_sealed_here_that_names_the_wrong_records(
    dumps: tuple[Path, Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    """Even an index sealed on this machine is checked against the records it names."""
    dump, clean, ids = dumps
    swap = {
        bytes.fromhex(ids[3]): bytes.fromhex(ids[20]),
        bytes.fromhex(ids[20]): bytes.fromhex(ids[3]),
    }

    def lying(body: bytes, source: str, offset: int) -> tuple[list[bytes], int]:
        found, loose = index.proto_facts(body, source, offset)
        return [swap.get(t, t) for t in found], loose

    with open(dump, "rb") as f:
        index.save(dump, index.build(dump, iter_be32(f, str(dump)), lying))
    assert index.load(dump) is not None  # believed as far as the seal goes
    with caplog.at_level(logging.WARNING, "otel_replay"):
        the_same_as_without_an_index(dump, clean, ids)
    (line,) = told(caplog, dump)
    assert f"does not match {dump}: the record holds no trace" in line
    assert "reading the dump instead" in line


def test_a_windowed_check_reads_what_the_dump_holds(
    dumps: tuple[Path, Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    dump, clean, _ = dumps
    data, start, count = entries(dump)
    put_entry(data, start, 0, entry(data, start, count - 1))  # the first trace's record lost
    index.index_path(dump).write_bytes(data)
    monkeypatch.setattr(stream, "WINDOW_BYTES", 512)  # read a window at a time
    assert stream.windows([str(dump)]) is not None
    assert cli_json("check", "--json", "-j", "1", dump) == cli_json(
        "check", "--json", "-j", "1", clean
    )
    assert len(cli_json("check", "--json", "-j", "1", dump)["runs"]) == 30


def test_an_index_from_another_machine_is_rebuilt(
    dumps: tuple[Path, Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another key (another machine, another user): its seal does not verify."""
    dump, _, ids = dumps
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-home"))
    assert index.load(dump) is None
    reader = SpanReader(dump, trace_ids=[ids[5]])
    assert len(list(reader)) == 3 and reader.used_index  # indexed again, with this key
    assert index.load(dump) is not None


def test_without_a_key_no_index_is_kept_or_believed(
    dumps: tuple[Path, Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump, clean, ids = dumps
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # the key cannot be kept
    assert index.load(dump) is None
    index.index_path(dump).unlink()
    assert runs_of(dump, ids[9]) == runs_of(clean, ids[9])
    assert not index.index_path(dump).exists()


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_an_index_that_is_not_a_regular_file(
    dumps: tuple[Path, Path, list[str]], kind: str
) -> None:
    dump, _, ids = dumps
    target = index.index_path(dump)
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    done = cli_process("show", "--json", "--trace", ids[4], dump, timeout=30)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["run_id"] == ids[4] and len(run["steps"]) == 3
