"""The one error a reader raises or reports for bad input."""

from __future__ import annotations


class FormatError(ValueError):
    """Unreadable input: names the file and the byte offset of the fault.

    Every good record before ``offset`` has been kept by the reader.  A database's
    faults are placed by ``row`` rather than by ``byte``.
    """

    def __init__(self, path: str, offset: int, reason: str, unit: str = "byte") -> None:
        super().__init__(f"{_shown(path)}: {reason} at {unit} {offset}")
        self.path = path
        self.offset = offset
        self.reason = reason
        self.unit = unit

    @property
    def shown_path(self) -> str:
        """The path as messages name it (a URL's password and secret query values hidden)."""
        return _shown(self.path)

    def __reduce__(self) -> tuple[type[FormatError], tuple[str, int, str, str]]:
        # Rebuilt from its fields, not from the formatted message (worker processes send it back).
        return (type(self), (self.path, self.offset, self.reason, self.unit))


class OtherSignal(FormatError):
    """OTLP data of a signal the reader does not take (metrics, say).

    A file holds one signal, so what follows is that signal too: reading
    stops here rather than reporting every record.
    """


def _shown(path: str) -> str:
    """``path`` as a message names it: a URL's password and secret query values hidden."""
    if not path.startswith(("http://", "https://", "clickhouse://", "clickhouses://")):
        return path
    from ..redaction import redactor

    return redactor().text(path)
