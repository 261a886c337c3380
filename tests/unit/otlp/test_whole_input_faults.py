"""A fault of an input as a whole names no place in it: never "no such file at byte 0".

A missing file, a folder that cannot be listed, a refused connection, a
missing extra, a malformed database URL: the message is the input and the
reason.  A fault inside an input still names its byte (or row).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.cli.main import cli
from otel_replay.otlp.errors import FormatError
from tests.fixtures.data import ROOT

NAMES = st.from_regex(r"[a-z][a-z0-9_.-]{0,12}", fullmatch=True)


def error_line(args: list[str]) -> str:
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2, done.output
    (line,) = [x for x in done.output.splitlines() if x.startswith("otel-replay: error:")]
    assert "Traceback" not in done.output
    return line


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@settings(max_examples=15, deadline=None)
@given(name=NAMES, command=st.sampled_from(["show", "check", "report", "convert"]))
def test_a_missing_file(name: str, command: str) -> None:
    missing = f"/nonexistent-dir/{name}.otlp"
    extra = {"report": ["-o", "/nonexistent-dir/page.html"], "convert": ["-o", "-"]}
    line = error_line([command, missing, *extra.get(command, [])])
    assert missing in line and " at byte" not in line


@settings(max_examples=10, deadline=None)
@given(port=st.from_regex(r"[a-z]{1,6}", fullmatch=True))
def test_a_malformed_database_url(port: str) -> None:
    line = error_line(["show", f"clickhouse://127.0.0.1:{port}/otel"])
    assert "not a number" in line and " at " not in line.split(":", 3)[-1]


def test_a_refused_connection() -> None:
    url = f"http://127.0.0.1:{closed_port()}/traces.json"
    line = error_line(["show", url])
    assert "refused" in line.lower() and " at byte 0" not in line


@pytest.mark.parametrize("unit", ["byte", "row"])
def test_a_fault_inside_an_input_still_names_its_place(unit: str) -> None:
    assert str(FormatError("f", 120, "corrupt record", unit=unit)).endswith(f" at {unit} 120")
    assert str(FormatError.whole("f", "no such file")) == "f: no such file"


def test_a_cut_file_names_the_byte(tmp_path: Path) -> None:
    example = ROOT / "examples/order_support/recordings/wrong_order.otlp"
    cut = tmp_path / "cut.otlp"
    data = example.read_bytes()
    cut.write_bytes(data + data[:40])
    done = CliRunner().invoke(cli, ["show", str(cut)])
    assert f"at byte {len(data)}" in done.output
