"""``otel-replay ls .`` in a project folder passes over its text files, whatever their name.

A newcomer ran ``ls .`` in a checkout: the Apache ``LICENSE`` file, which
starts with a line end and spaces, was taken for a bare protobuf request
(a first byte 0x0a is field 1's tag) and reported as "corrupt record ... at
byte 0", so every reading command exited 2.  A file a folder walk found that is
text (no control byte but tab, line ends and form feed; UTF-8) holds no OTLP
request (every request holds a length-delimited field's 0x12 tag, a control
byte) and is passed over; named itself, it is still an error.  Drawn over text
files beside a real recording.
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

#: Text as a person writes it: any printable character, spaces, tabs, line ends.
_TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\x7f")
    | st.sampled_from(["\n", " ", "\t", "\r", "\f"]),
    max_size=200,
)
#: How such files start: a blank line, an indented title (a license), anything.
_START = st.sampled_from(["\n", "\n\n", "\n   ", "\r\n", " \n", ""])
#: Names a folder walk reads (no source or document suffix tells them apart).
_NAMES = st.sampled_from(["LICENSE", "NOTICE", "COPYING", "AUTHORS", "notes.log", "data.dat"])
_numbers = itertools.count()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=_START, text=_TEXT, name=_NAMES)
def test_a_text_file_in_a_folder_is_passed_over(
    tmp_path: Path, start: str, text: str, name: str
) -> None:
    body = start + text
    if body.lstrip()[:1] in ("{", "["):
        body = "\n" + body.lstrip().lstrip("{[")  # JSON-looking text is another class
    root = tmp_path / str(next(_numbers))
    root.mkdir()
    shutil.copy(EXAMPLE, root / "run.otlp")
    (root / name).write_bytes(body.encode("utf-8"))
    (run,) = otel_replay.load(EXAMPLE)
    for command in ("ls", "show", "check"):
        done = CliRunner().invoke(cli, [command, str(root)])
        assert done.exit_code == 0, (command, done.output)
        assert "error" not in done.output and "corrupt" not in done.output, done.output
        assert run.run_id[:16] in done.output
        if body:
            assert "passed over 1 file(s) holding no trace data" in done.output, done.output


def test_the_apache_license_text_in_a_folder_is_passed_over(tmp_path: Path) -> None:
    """The file as the newcomer met it: the Apache License's own first lines."""
    shutil.copy(EXAMPLE, tmp_path / "run.otlp")
    license_text = (
        "\n                                 Apache License\n"
        "                           Version 2.0, January 2004\n"
        "                        http://www.apache.org/licenses/\n"
    )
    (tmp_path / "LICENSE").write_text(license_text)
    done = CliRunner().invoke(cli, ["ls", "-v", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "LICENSE: text, not OTLP trace or log data" in done.output
    named = CliRunner().invoke(cli, ["ls", str(tmp_path / "LICENSE")])
    assert named.exit_code == 2 and "passed over" not in named.output
