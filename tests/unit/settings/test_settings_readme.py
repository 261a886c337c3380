"""The settings page's table of environment variables is the one the settings make."""

from __future__ import annotations

import subprocess
import sys

from otel_replay import settings
from tests.fixtures.data import ROOT

START, END = "<!-- settings:start -->", "<!-- settings:end -->"


def test_the_settings_page_table_is_generated_from_the_list() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert START in text and END in text, f"docs/settings.md has no {START} ... {END} block"
    block = text[text.index(START) : text.index(END) + len(END)]
    made = subprocess.run(
        [sys.executable, "-m", "otel_replay.settings", "--markdown"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "", "PYTHONPATH": str(ROOT / "src")},
    ).stdout
    assert block + "\n" == made, "run: python -m otel_replay.settings --markdown"
    assert block == f"{START}\n{settings.markdown()}{END}"
