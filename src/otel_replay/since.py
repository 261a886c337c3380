"""``--since``: a time given as an ISO time or as a span ago, in nanoseconds since the epoch.

A leaf module: the listing, the backend searches (Tempo, Jaeger) and the run
filter all read ``--since`` the same way.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["parse_since"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)\s*$", re.I)
_UNIT_S = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: dt.datetime | None = None) -> int:
    """``--since``: an ISO time (UTC unless it has an offset) or ``30m``/``2h``/``3d``/``1w`` ago.

    Returns nanoseconds since the epoch; raises ValueError for anything else.
    """
    m = _RELATIVE.match(text)
    if m:
        now = now or dt.datetime.now(dt.timezone.utc)
        seconds = float(m[1]) * _UNIT_S[m[2].lower()]
        return int((now.timestamp() - seconds) * 1e9)
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(
            f"{text!r} is neither an ISO time nor a span like 30m, 2h, 3d, 1w"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    # Integer arithmetic: a float timestamp would lose the microseconds.
    return (when - _EPOCH) // dt.timedelta(microseconds=1) * 1000
