"""An http(s) URL as a :class:`~.source.Source`: its answer read as a file is."""

from __future__ import annotations

from typing import IO

from .download import download
from .source import Source

__all__ = ["UrlSource"]


class UrlSource(Source):
    """An http(s) URL: its answer, fetched with a deadline and a size cap (see
    :func:`~.download.download`), read as a file is."""

    kind = "url"

    def open(self) -> tuple[IO[bytes], int | None]:
        return download(self.name)
