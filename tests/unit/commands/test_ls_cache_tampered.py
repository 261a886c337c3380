"""The summaries ``ls`` keeps beside a dump are believed only when this machine wrote them for it.

A cache file travels with its dump, so it may be crafted: fake runs in a
well-formed document stamped for the dump, fields of the wrong type, a cache
from another machine, or one left over from a dump rewritten since.  In each
case ``ls`` lists what the dump holds, as it does with no cache at all.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from otel_replay import __version__, seal
from otel_replay.cli.main import cli
from otel_replay.commands import summary_cache
from tests.fixtures.agent import LOOKUP, record_run
from tests.fixtures.cli import cli_process

FAKE = {
    "run_id": "f" * 32,
    "trace_ids": ["f" * 32],
    "start_ns": 1_700_000_000_000_000_000,
    "end_ns": 1_700_000_001_000_000_000,
    "agent": "a run the dump does not hold",
    "user_id": "u_fake",
    "session_id": None,
    "tenant_id": None,
    "models": [],
    "steps": 1,
    "model_calls": 0,
    "tool_calls": 0,
    "tools": [],
    "errors": 0,
    "input_tokens": 0,
    "output_tokens": 0,
    "verdict": "full",
    "replayable": True,
    "anomalies": 0,
}


def ls_json(*args: str | Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["ls", "--json", *map(str, args)])
    assert result.exit_code == 0, result.output
    runs: list[dict[str, Any]] = json.loads(result.stdout)["runs"]
    return runs


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "runs.otlp"
    record_run(path, LOOKUP, user="u_1", session="s_1")
    record_run(path, LOOKUP, user="u_2", session="s_2")
    return path


def cache_of(dump: Path) -> Path:
    cache = summary_cache.cache_path(str(dump))
    assert cache is not None
    return cache


def crafted(dump: Path, runs: list[Any]) -> bytes:
    """A well-formed cache document stamped for ``dump`` as it is now."""
    doc = {
        "format": summary_cache._FORMAT,
        "version": __version__,
        "inputs": summary_cache._stamp(str(dump)),
        "runs": runs,
    }
    return json.dumps(doc).encode()


def test_a_crafted_cache_lists_no_fake_run(dump: Path) -> None:
    real = ls_json("--no-cache", dump)
    cache_of(dump).write_bytes(crafted(dump, [*real, FAKE]))
    assert ls_json(dump) == real
    # Its seal line forged too: still not this machine's.
    cache_of(dump).write_bytes(b"ab" * 32 + b"\n" + crafted(dump, [*real, FAKE]))
    assert ls_json(dump) == real
    done = cli_process("ls", dump)
    assert done.returncode == 0 and "u_fake" not in done.stdout and "u_2" in done.stdout


@pytest.mark.parametrize(
    "bad",
    [
        {**FAKE, "run_id": 7},
        {**FAKE, "start_ns": "yesterday"},
        {**FAKE, "models": "gpt-4o"},
        {**FAKE, "tools": [None]},
        {**FAKE, "replayable": 1},
        {**FAKE, "steps": True},
        {**FAKE, "end_ns": 10**30},
        {k: v for k, v in FAKE.items() if k != "verdict"},
        ["not", "an", "object"],
    ],
)
def test_a_cache_of_the_wrong_shape_is_read_as_none(dump: Path, bad: Any) -> None:
    """Sealed here (say by a bug of an older version): still checked field by field."""
    real = ls_json("--no-cache", dump)
    body = crafted(dump, [*real, bad])
    tag = seal.tag(summary_cache._SEAL_PURPOSE, body)
    assert tag is not None
    cache_of(dump).write_bytes(tag.hex().encode() + b"\n" + body)
    assert ls_json(dump) == real
    for shape in (b"[]", b'{"runs": {}}', b"null"):
        cache_of(dump).write_bytes(shape)
        assert ls_json(dump) == real


def test_a_cache_written_on_another_machine_is_rebuilt(
    dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ls_json(dump)  # cached with this machine's key
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    theirs = cache_of(dump).read_bytes()
    assert ls_json(dump) == real
    assert cache_of(dump).read_bytes() != theirs  # read from the dump, and sealed again here


def test_a_cache_of_the_dump_before_it_was_rewritten(dump: Path, tmp_path: Path) -> None:
    """The same size and modification time, other runs: the change time tells them apart."""
    ls_json(dump)
    before = dump.stat()
    other = tmp_path / "other.otlp"
    record_run(other, LOOKUP, user="u_8", session="s_8")
    record_run(other, LOOKUP, user="u_9", session="s_9")
    assert other.stat().st_size == before.st_size
    dump.write_bytes(other.read_bytes())  # in place: the same inode
    os.utime(dump, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [r["user_id"] for r in ls_json(dump)] == ["u_8", "u_9"]


def test_without_a_key_nothing_is_cached(
    dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # no directory can be made there
    assert len(ls_json(dump)) == 2
    assert not cache_of(dump).exists()


def test_the_key_is_the_users_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert seal.tag(b"test", b"data") is not None
    key = home / "otel-replay" / "key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) & 0o077 == 0
    # A key others could read (or have written) is not trusted, and not replaced.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-home"))
    shared = tmp_path / "other-home" / "otel-replay" / "key"
    shared.parent.mkdir(parents=True)
    shared.write_bytes(b"k" * 32)
    shared.chmod(0o644)
    assert seal.tag(b"test", b"data") is None
    assert shared.read_bytes() == b"k" * 32


def test_a_relative_cache_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the XDG spec says; the home's own .cache is used instead."""
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert seal.key_dir() == tmp_path / "home" / ".cache" / "otel-replay"


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "link to the dump", "directory"])
def test_a_cache_that_is_not_a_regular_file(dump: Path, kind: str) -> None:
    """Never waited on, never read through a link: ls reads the dump (a process of its own,
    with a timeout: a blocked open fails the test)."""
    real = ls_json("--no-cache", dump)
    cache = cache_of(dump)
    if kind == "fifo":
        os.mkfifo(cache)
    elif kind == "directory":
        cache.mkdir()
    else:
        cache.symlink_to("/dev/zero" if "zero" in kind else dump)
    done = cli_process("ls", "--json", dump, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"] == real
