"""Runs whose message content was stored by reference (``gen_ai.*_ref``), read back.

``tests/data/genai_refs`` is a real trace of ``opentelemetry-util-genai``'s
``TelemetryHandler`` with its ``upload`` completion hook writing to a local
fsspec store (its README and ``make.py`` say how): the spans carry only
``gen_ai.input.messages_ref`` and the like, ``file:///tmp/genai_refs/uploads/...``,
and the files are in ``uploads/`` beside it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.payload import references as content_refs
from otel_replay.replay.engine import ReplayEngine
from tests.fixtures.cli import cli_run
from tests.fixtures.data import TESTS

DATA = TESTS / "data" / "genai_refs"
TRACE = DATA / "trace.otlp"
#: Where the hook stored the files, and where they are now.
STORE, HERE = "file:///tmp/genai_refs/uploads", DATA / "uploads"
INPUTS = "cb0d4fdb-00e2-4b88-980c-c45a38030b18_inputs.json"
SYSTEM = "0f148fc37bac489bba295df2dc8c8bfe43048505caeec958d663cd189b59aa2a_system_instruction.json"


@pytest.fixture(autouse=True)
def _no_stores(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(content_refs.OTEL_REPLAY_CONTENT_REFS, raising=False)
    content_refs.use_content_refs(None)
    yield
    content_refs.use_content_refs(None)


def _stored(name: str) -> object:
    return json.loads((HERE / name).read_text())


def test_references_are_not_read_unless_their_store_is_allowed() -> None:
    (run,) = otel_replay.load(TRACE)
    assert run.kit.verdict == "inspect-only" and not run.replayable
    refused = [p for p in run.kit.problems if "is not read" in p]
    assert len(refused) == 6  # two per chat call, two for the agent
    assert all(STORE in p and "--refs" in p for p in refused)
    assert "steps[1].input_messages" in run.kit.missing


def test_a_run_stored_by_reference_rebuilds_whole_from_its_store() -> None:
    content_refs.use_content_refs([f"{STORE}={HERE}"])
    (run,) = otel_replay.load(TRACE)
    assert run.kit.verdict == "full", run.kit.problems
    agent, first, tool, second = run.steps
    assert [s.kind for s in run.steps] == ["agent", "model", "tool", "model"]
    inputs = _stored("cb0d4fdb-00e2-4b88-980c-c45a38030b18_inputs.json")
    assert second.model is not None and len(second.model.input_messages or []) == 3
    stored_result = inputs[2]["parts"][0]["response"]  # type: ignore[index]
    assert second.model.input_messages[2]["parts"][0]["response"] == stored_result  # type: ignore[index]
    assert tool.tool is not None and tool.tool.result == stored_result
    assert tool.tool.arguments == {"city": "Paris"}
    system = _stored(SYSTEM)[0]["content"]  # type: ignore[index]
    assert first.model is not None
    assert first.model.system_instructions == [{"type": "text", "content": system}]
    assert run.final_output() == "It is 18 °C and sunny in Paris."
    assert agent.model is not None and agent.model.input_payload is not None
    assert agent.model.input_payload.status == "unverified"  # the hook records no digest


def test_a_run_stored_by_reference_replays_its_model_calls() -> None:
    """The requests the agent sent are answered with what the model answered."""
    content_refs.use_content_refs([f"{STORE}={HERE}"])
    (run,) = otel_replay.load(TRACE)
    engine = ReplayEngine([run])
    system = (
        "You are a weather assistant. Call get_weather to look up the weather before you answer."
    )
    question = [
        {"role": "system", "content": system},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    call = {
        "id": "call_w1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    bodies = [
        {"model": "gpt-4o-mini", "messages": question},
        {
            "model": "gpt-4o-mini",
            "messages": [
                *question,
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {
                    "role": "tool",
                    "tool_call_id": "call_w1",
                    "content": '{"city": "Paris", "temperature_c": 18, "sky": "sunny"}',
                },
            ],
        },
    ]
    answers = []
    for body in bodies:
        answer = engine.handle("POST", "/v1/chat/completions", json.dumps(body).encode(), {})
        assert answer.status == 200, b"".join(answer.chunks)
        answers.append(json.loads(b"".join(answer.chunks)))
    first, second = (a["choices"][0]["message"] for a in answers)
    assert first["tool_calls"][0]["function"]["name"] == "get_weather"
    assert second["content"] == "It is 18 °C and sunny in Paris."


def test_a_reference_outside_its_store_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside.json"
    secret.write_text('[{"role": "user", "parts": [{"type": "text", "content": "private"}]}]')
    store = tmp_path / "store"
    store.mkdir()
    content_refs.use_content_refs([f"file://{store}"])
    for ref in (
        f"file://{store}/../outside.json",
        f"file://{store}/%2e%2e/outside.json",
        f"file://{tmp_path}/outside.json",
        f"file://elsewhere{store}/x.json",
        f"{secret}",
    ):
        with pytest.raises(content_refs.RefUnavailable, match="is not read"):
            content_refs.read(ref)
    (store / "in.json").write_text("[]")
    assert content_refs.read(f"file://{store}/in.json") == b"[]"


def test_a_jsonl_store_file_is_read_as_its_array() -> None:
    lines = b'{"role":"user","parts":[],"index":1}\n{"role":"system","parts":[],"index":0}\n'
    assert json.loads(content_refs.as_json(lines)) == [
        {"role": "system", "parts": []},
        {"role": "user", "parts": []},
    ]


def test_the_cli_reads_references_under_the_stores_it_is_given() -> None:
    refused = cli_run("check", TRACE)
    assert refused.returncode == 1 and "--refs" in refused.stdout
    allowed = cli_run("--refs", f"{STORE}={HERE}", "check", TRACE)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "full" in allowed.stdout


def test_a_run_stored_by_reference_in_an_object_store_rebuilds_from_it() -> None:
    """The store moved to one that is no directory (fsspec's in-memory filesystem, as S3
    or GCS would be), read through fsspec: the same run as from the local copy."""
    import fsspec

    memory = fsspec.filesystem("memory")
    for stored in HERE.iterdir():
        memory.pipe(f"/genai-refs-moved/{stored.name}", stored.read_bytes())
    content_refs.use_content_refs([f"{STORE}=memory://genai-refs-moved"])
    moved = otel_replay.load(TRACE, strict=True)
    content_refs.use_content_refs([f"{STORE}={HERE}"])
    local = otel_replay.load(TRACE, strict=True)
    assert moved[0].kit.verdict == "full"
    assert [r.to_json() for r in moved] == [r.to_json() for r in local]


# --- what a store may hold besides its files: links, FIFOs, sockets, directories, giants ---

#: A credential file outside every store (what a planted link would show).
CREDENTIAL = '[{"role": "user", "parts": [{"type": "text", "content": "aws_secret=AKIAFAKE"}]}]'


def _plant(at: Path, kind: str, outside: Path) -> None:
    """Put at ``at`` a ``kind`` of thing a reference must not be read through."""
    import socket

    at.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link out":
        at.symlink_to(outside)
    elif kind == "relative link out":
        at.symlink_to(os.path.relpath(outside, at.parent))
    elif kind == "link in":  # to a good file of the store: still not followed
        (at.parent / "real.json").write_text("[]")
        at.symlink_to(at.parent / "real.json")
    elif kind == "fifo":
        os.mkfifo(at)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(at))
    elif kind == "directory":
        at.mkdir()
    elif kind == "too large":
        with at.open("wb") as f:
            f.truncate(content_refs.limits.MAX_RECORD_BYTES.bytes() + 1)


KINDS = ["link out", "relative link out", "link in", "fifo", "socket", "directory", "too large"]
_NAME = st.text("abcxyz019_-.", min_size=1, max_size=8).filter(lambda n: n not in (".", ".."))


def _read_within(ref: str, seconds: float = 10) -> BaseException | bytes:
    """What reading ``ref`` raised or gave, from a thread: a read blocked on a FIFO fails
    the test instead of hanging it."""
    import threading

    got: list[BaseException | bytes] = []

    def reading() -> None:
        try:
            got.append(content_refs.read(ref))
        except BaseException as exc:
            got.append(exc)

    worker = threading.Thread(target=reading, daemon=True)
    worker.start()
    worker.join(seconds)
    assert got, f"reading {ref} still blocks after {seconds} s"
    return got[0]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    kind=st.sampled_from(KINDS),
    dirs=st.lists(_NAME, max_size=3),
    name=_NAME,
    linked_dir=st.booleans(),
)
def test_a_reference_through_anything_but_a_regular_file_in_its_store_is_refused(
    tmp_path_factory: pytest.TempPathFactory,
    kind: str,
    dirs: list[str],
    name: str,
    linked_dir: bool,
) -> None:
    """Every kind of non-file, at any depth of the store, and a link as a directory on
    the way: refused at once with a reason naming the reference, nothing read out."""
    top = tmp_path_factory.mktemp("refs")
    outside = top / "credentials.json"
    outside.write_text(CREDENTIAL)
    store = top / "store"
    store.mkdir()
    content_refs.use_content_refs([f"file://{store}"])
    inner = store.joinpath(*dirs)
    if linked_dir and dirs:  # the last directory on the way is a link, to a real one
        real = top / "elsewhere"
        real.mkdir()
        inner.parent.mkdir(parents=True, exist_ok=True)
        inner.symlink_to(real)
        (real / name).write_text(CREDENTIAL)
    else:
        _plant(inner / name, kind, outside)
    ref = f"file://{inner / name}"
    got = _read_within(ref)
    assert isinstance(got, content_refs.RefUnavailable), (kind, got)
    assert ref in str(got) and "\n" not in str(got)
    if (linked_dir and dirs) or kind.startswith("link"):
        assert "symbolic link" in str(got)
    # The store's own files are still read, however deep.
    if not (linked_dir and dirs):
        (inner / "good.json").write_text("[1]")  # no name drawn spells it
        assert content_refs.read(f"file://{inner / 'good.json'}") == b"[1]"


def _hostile_store(tmp_path: Path, kind: str) -> Path:
    """The genai_refs uploads, the second model call's input replaced by a ``kind``."""
    uploads = tmp_path / "uploads"
    shutil.copytree(HERE, uploads)
    outside = tmp_path / "credentials.json"
    outside.write_text(CREDENTIAL)
    (uploads / INPUTS).unlink()
    _plant(uploads / INPUTS, kind, outside)
    return uploads


@pytest.mark.parametrize("kind", ["link out", "fifo"])
def test_a_run_with_a_refused_reference_names_it_and_keeps_the_rest(
    tmp_path: Path, kind: str
) -> None:
    uploads = _hostile_store(tmp_path, kind)
    content_refs.use_content_refs([f"{STORE}={uploads}"])
    (run,) = otel_replay.load(TRACE)
    assert run.kit.verdict != "full"
    (refused,) = [p for p in run.kit.problems if INPUTS in p]
    assert ("symbolic link" if kind == "link out" else "not a regular file") in refused
    assert "AKIAFAKE" not in json.dumps(run.to_json())
    assert run.final_output() == "It is 18 °C and sunny in Paris."  # the other files read


@pytest.mark.parametrize("kind", ["link out", "fifo"])
def test_the_cli_neither_shows_a_linked_file_nor_waits_on_a_fifo(tmp_path: Path, kind: str) -> None:
    """ls, show, check and report as a user runs them (a hang fails on the timeout)."""
    uploads = _hostile_store(tmp_path, kind)
    refs = ("--refs", f"{STORE}={uploads}")
    for command in (["ls", "--no-cache"], ["show"], ["check"], ["report", "-o", tmp_path / "r"]):
        done = cli_run(*refs, *command, TRACE)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in (0, 1), (command, done.stdout, done.stderr)
        page = tmp_path / "r"
        shown = done.stdout + "".join(p.read_text() for p in page.rglob("*.html"))
        assert "AKIAFAKE" not in shown, command
        if command[0] in ("show", "check"):
            assert INPUTS in done.stdout, (command, done.stdout)


def test_an_object_store_keeps_references_inside_it() -> None:
    """Through fsspec (its in-memory filesystem): what lies below a store is a path on it,
    whatever it spells (``..``, an fsspec chain ``::``, another URL)."""
    import fsspec

    memory = fsspec.filesystem("memory")
    memory.pipe("/refs-store/in.json", b"[]")
    memory.pipe("/refs-secret/out.json", CREDENTIAL.encode())
    content_refs.use_content_refs(["memory://refs-store"])
    assert content_refs.read("memory://refs-store/in.json") == b"[]"
    for ref in (
        "memory://refs-store/../refs-secret/out.json",
        "memory://refs-store/%2e%2e/refs-secret/out.json",
        "memory://refs-store/x::memory://refs-secret/out.json",
        "memory://refs-store/in.json::file:///etc/passwd",
        "memory://refs-secret/out.json",
    ):
        with pytest.raises(content_refs.RefUnavailable):
            content_refs.read(ref)


#: fsspec filesystems a store of local files may be named through: its caches, and a
#: directory view (refused: it reads through fsspec's own local files).
_CACHES = ["simplecache", "filecache", "blockcache", "cached"]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    wrappers=st.lists(st.sampled_from([*_CACHES, "dir"]), min_size=1, max_size=2),
    local=st.sampled_from(["file", "local"]),
    kind=st.sampled_from(KINDS),
    dirs=st.lists(_NAME, max_size=2),
    name=_NAME,
)
def test_a_store_of_local_files_named_through_fsspec_is_read_as_local_files(
    tmp_path_factory: pytest.TempPathFactory,
    wrappers: list[str],
    local: str,
    kind: str,
    dirs: list[str],
    name: str,
) -> None:
    """``simplecache::file://STORE`` and the like: fsspec's local filesystem below them
    follows links and waits on FIFOs, so the store is read as a ``file://`` one (links
    and non-files refused, regular files read); through any other filesystem over local
    files (``dir::``) nothing is read."""
    top = tmp_path_factory.mktemp("chained")
    outside = top / "credentials.json"
    outside.write_text(CREDENTIAL)
    store = top / "store"
    store.mkdir()
    base = "::".join([*wrappers, f"{local}://{store}"])
    content_refs.use_content_refs([base])
    inner = store.joinpath(*dirs)
    _plant(inner / name, kind, outside)
    below = "/".join([*dirs, name])
    got = _read_within(f"{base}/{below}")
    assert isinstance(got, content_refs.RefUnavailable), (base, kind, got)
    assert "AKIAFAKE" not in str(got)
    (inner / "good.json").write_text("[1]")
    good = _read_within(f"{base}/{'/'.join([*dirs, 'good.json'])}")
    if wrappers[0] in _CACHES:
        assert good == b"[1]", (base, good)
    else:
        assert isinstance(good, content_refs.RefUnavailable) and "local files" in str(good)
