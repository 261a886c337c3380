"""The documentation's table of every variable: ``python -m otel_replay.settings --markdown``.

The settings page of the documentation holds the table between
``<!-- settings:start -->`` and ``<!-- settings:end -->``; :func:`main` prints
that block, made from :data:`~.variables.VARIABLES`, so the page is changed by
running it.
"""

from __future__ import annotations

import sys

from .parsing import FALSE, TRUE
from .variables import VARIABLES

__all__ = ["main", "markdown"]


def markdown() -> str:
    """The table of :data:`VARIABLES` in Markdown, as the settings page holds it."""
    rows = [
        "| Variable | Type | Default | Bound | What it does |",
        "|---|---|---|---|---|",
    ]
    for v in VARIABLES:
        name = f"`{v.name}`" + (" (standard)" if v.standard else "")
        default = "—" if v.standard else v.default_text()
        rows.append(f"| {name} | {v.type_text()} | {default} | {v.bound() or '—'} | {v.doc} |")
    flags = (
        f"Flags are on with {', '.join(f'`{t}`' for t in TRUE)} and off with "
        f"{', '.join(f'`{f}`' for f in FALSE)} (any case); unset or empty keeps the "
        "default, and any other value is said once and keeps the default.  A number "
        "that does not parse or is out of bound is said once, then brought within the "
        "bound (or, for the reading limits, replaced by the default)."
    )
    return "\n".join([*rows, "", flags]) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m otel_replay.settings --markdown``: print the settings page's block."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["--markdown"]:
        print("usage: python -m otel_replay.settings --markdown", file=sys.stderr)
        return 2
    print("<!-- settings:start -->")
    print(markdown(), end="")
    print("<!-- settings:end -->")
    return 0
