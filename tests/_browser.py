"""Headless Chromium on a page of ours: no network, a fresh profile (the report's tests and
its benchmark)."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: Chromium's flags for a headless start on this machine's closed network: without the
#: background-networking ones it keeps trying to reach Google's hosts.
HEADLESS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium(
    browser: str, page: Path, profile: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``browser`` (a Chromium) headless on ``page`` (as a file:// URL), ``args`` added."""
    return subprocess.run(
        [browser, *HEADLESS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
