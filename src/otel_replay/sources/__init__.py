"""Where records come from: files and rotated sets, folders, patterns, URLs, Tempo and
Jaeger searches, Phoenix answers and ClickHouse tables.

:func:`open_source` tells what kind of input a name is, once, and gives its
:class:`Source`; :mod:`.reader` reads any of them into the records of
:mod:`otel_replay.otlp`.
"""

from .files import open_source
from .source import SearchFilter, Source

__all__ = ["SearchFilter", "Source", "open_source"]
