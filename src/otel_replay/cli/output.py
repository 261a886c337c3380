"""How the commands end and what they write: an error line and exit 2, a JSON document
safe to print, HTML pages written."""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import click

from .printable import json_printable, printable

#: The exit code of a replay refused (``replay``, ``regress``): the trace lacks what the
#: replay needs, each item named; not a divergence (1), which is the agent's.
REFUSED = 4


def fail(message: str) -> NoReturn:
    """The command's error: one line on stderr, exit 2."""
    # Messages name files and runs a trace supplied: never raw control characters.
    click.echo(f"otel-replay: error: {printable(message)}", err=True)
    sys.exit(2)


def dumps(doc: Any) -> str:
    """``doc`` as one line of JSON safe to print: NaN and infinity as strings, bytes as
    text or base64, what a terminal acts on escaped."""
    try:
        text = json.dumps(doc, ensure_ascii=False, default=_default, allow_nan=False)
    except ValueError:  # NaN or infinity in an attribute: not JSON, so say it as a string
        text = json.dumps(_finite(doc), ensure_ascii=False, default=_default)
    return json_printable(text)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        # Attribute bytes that are text read as text; others as base64, as payload.plain does
        # (the payload codec imported only when there are bytes to say).
        from ..payload.codec import plain

        return plain(bytes(value))
    return repr(value)


@contextlib.contextmanager
def writing_pages(output: str) -> Iterator[None]:
    """HTML pages written to ``output``: no Jinja2, or a file that cannot be written, is
    the command's error."""
    from ..report import ReportUnavailable  # the report package: only for a page written

    try:
        yield
    except ReportUnavailable as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or output}: {exc.strerror or exc}")
