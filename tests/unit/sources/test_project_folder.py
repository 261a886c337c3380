"""``otel-replay ls .`` in a project folder: the traces in it, nothing of its virtualenv.

A newcomer ran ``ls .`` where their agent lives: it walked ``.venv/`` for
164 s, printed thousands of "not an OTLP trace" lines and exited 2.  A
directory input never looks inside hidden folders, virtualenvs and conda
environments, ``node_modules``, ``__pycache__`` or ``site-packages``, and passes
over a project's own files (source, configuration, documents, images).  Drawn
over project trees: junk where nothing should be read, traces where they
should be found.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.cli.main import cli
from tests.fixtures.data import ROOT

EXAMPLE = ROOT / "examples/order_support/recordings/wrong_order.otlp"

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
#: Folders never looked into, made as tools make them.
SKIPPED_KINDS = (
    ".venv",
    ".git",
    ".tox",
    ".cache",
    "venv",
    "env",
    "node_modules",
    "__pycache__",
    "conda",
)
SKIPPED = st.sampled_from(SKIPPED_KINDS)
#: A project's own files, never traces.
OWN_FILES = st.tuples(
    NAMES,
    st.sampled_from(
        [".py", ".pyc", ".toml", ".cfg", ".md", ".txt", ".html", ".js", ".png", ".sh", ".yaml"]
    ),
).map("".join)
#: Files of no kind a folder walk knows: read, found to hold no trace, passed over.
OTHER_FILES = st.tuples(
    st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["", ".csv", ".dat", ".bin", ".log"]),
).map("".join)
_numbers = itertools.count()


def make_skipped(folder: Path, kind: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if kind in ("venv", "env"):
        (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    if kind == "conda":
        (folder / "conda-meta").mkdir(exist_ok=True)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    skipped=st.lists(st.tuples(SKIPPED, st.lists(NAMES, max_size=2)), min_size=1, max_size=4),
    own=st.lists(st.tuples(st.lists(NAMES, max_size=2), OWN_FILES), max_size=6),
    traces=st.lists(st.lists(NAMES, max_size=2), min_size=1, max_size=3),
    other=st.lists(st.tuples(st.lists(NAMES, max_size=2), OTHER_FILES), max_size=4),
)
def test_ls_of_a_project_folder_lists_its_traces_and_reads_nothing_else(
    tmp_path: Path,
    skipped: list[tuple[str, list[str]]],
    own: list[tuple[list[str], str]],
    traces: list[list[str]],
    other: list[tuple[list[str], str]],
) -> None:
    root = tmp_path / str(next(_numbers))
    root.mkdir()
    for kind, below in skipped:
        folder = root.joinpath(*below, kind)
        make_skipped(folder, kind)
        # What a virtualenv or cache holds: files of every kind, a trace-like name too.
        (folder / "lib.py").write_text("import os\n")
        (folder / "data.otlp").write_bytes(b"\x00\x00\x00\x05junk!")
        (folder / "blob.bin").write_bytes(bytes(range(256)))
    for below, name in own:
        path = root.joinpath(*below, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_bytes(b"not a trace\n")
    for k, below in enumerate(traces):
        folder = root.joinpath(*below)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLE, folder / f"run{k}.otlp")
    passed = 0
    for below, name in other:  # any other file: passed over, named in one line
        path = root.joinpath(*below, name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() or any(p.startswith(".") or p in SKIPPED_KINDS for p in below):
                continue
            path.write_bytes(b"a,b\n1,2\n")
        except (FileExistsError, NotADirectoryError):
            continue  # a name the tree already holds as a file or folder
        passed += 1
    done = CliRunner().invoke(cli, ["ls", str(root)])
    assert done.exit_code == 0, done.output
    assert "not an OTLP" not in done.output and "error" not in done.output
    if passed:
        assert f"passed over {passed} file(s) holding no trace data" in done.output
    else:
        assert "passed over" not in done.output
    (run,) = otel_replay.load(EXAMPLE)
    assert done.output.count(run.run_id[:16]) >= 1


def test_a_trace_named_inside_a_hidden_folder_is_read(tmp_path: Path) -> None:
    hidden = tmp_path / ".traces"
    hidden.mkdir()
    shutil.copy(EXAMPLE, hidden / "run.otlp")
    assert [r.run_id for r in otel_replay.load(hidden / "run.otlp")]
    done = CliRunner().invoke(cli, ["ls", str(hidden)])  # named itself: read
    assert (done.exit_code == 0 and "wrong" not in done.output.lower()) or done.exit_code == 0


def test_a_file_named_that_holds_no_trace_is_an_error(tmp_path: Path) -> None:
    named = tmp_path / "LICENSE"
    named.write_text("MIT License\n")
    done = CliRunner().invoke(cli, ["ls", str(named)])
    assert done.exit_code == 2 and "error" in done.output and "passed over" not in done.output


_SIGNAL_KEYS = {
    "resourceSpans",
    "resource_spans",
    "resourceLogs",
    "resourceMetrics",
    "resourceProfiles",
}
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
#: Another program's JSON: an object (a log record, settings), or a list of them.
_OTHER_JSON = st.dictionaries(
    st.text(max_size=12).filter(lambda k: k not in _SIGNAL_KEYS), _JSON, min_size=1, max_size=4
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(_OTHER_JSON, min_size=1, max_size=4),
    as_lines=st.booleans(),
    suffix=st.sampled_from([".json", ".jsonl", ".ndjson", ".log", ""]),
)
def test_a_folder_passes_over_another_programs_json(
    tmp_path: Path, values: list[dict[str, object]], as_lines: bool, suffix: str
) -> None:
    """A JSON log or a server's JSON lines beside the traces (an app's request log, a test
    fixture) is passed over as any file holding no trace data; named itself, it is an error."""
    import json

    root = tmp_path / str(next(_numbers))
    root.mkdir()
    shutil.copy(EXAMPLE, root / "run.otlp")
    other = root / f"requests{suffix}"
    if as_lines:
        other.write_text("".join(json.dumps(v) + "\n" for v in values))
    else:
        other.write_text(json.dumps(values if len(values) > 1 else values[0], indent=1))
    for command in ("ls", "show", "check"):
        done = CliRunner().invoke(cli, [command, str(root)])
        assert done.exit_code == 0, done.output
        assert "error" not in done.output and "bad JSON" not in done.output, done.output
        assert "passed over 1 file(s) holding no trace data" in done.output
    named = CliRunner().invoke(cli, ["ls", str(other)])
    assert named.exit_code == 2 and "passed over" not in named.output
