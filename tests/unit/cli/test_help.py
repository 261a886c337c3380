"""``otel-replay --help`` says what each command does in whole sentences, at any width."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from otel_replay.cli.main import SUMMARIES, cli


def test_every_command_has_a_summary() -> None:
    assert set(SUMMARIES) == set(cli.commands)


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_the_top_level_help_cuts_no_description(width: int) -> None:
    done = CliRunner().invoke(cli, ["--help"], terminal_width=width)
    assert done.exit_code == 0
    listed = done.output.split("Commands:", 1)[1]
    assert "..." not in listed
    for name, summary in SUMMARIES.items():
        assert summary.endswith(".")
        # A summary is shown whole, however it wraps.
        assert " ".join(summary.split()) in " ".join(listed.split()), name
