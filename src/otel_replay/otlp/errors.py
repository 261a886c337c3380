"""The one error a reader raises or reports for bad input."""

from __future__ import annotations

from typing import Final

#: The ``unit`` of a fault of an input as a whole (no such file, a refused connection, a
#: missing extra): its message names no place in it.
WHOLE: Final = ""


class FormatError(ValueError):
    """Unreadable input: names the file and the byte offset of the fault.

    Every good record before ``offset`` has been kept by the reader.  A database's
    faults are placed by ``row`` rather than by ``byte``; a fault of the input as a
    whole (:meth:`whole`) by nothing.
    """

    def __init__(self, path: str, offset: int, reason: str, unit: str = "byte") -> None:
        super().__init__(f"{_shown(path)}: {reason}" + (f" at {unit} {offset}" if unit else ""))
        self.path = path
        self.offset = offset
        self.reason = reason
        self.unit = unit

    @classmethod
    def whole(cls, path: str, reason: str) -> FormatError:
        """A fault of the input as a whole: no such file, a refused connection, ..."""
        return cls(path, 0, reason, unit=WHOLE)

    @property
    def place(self) -> str:
        """Where in the input: ``byte 120``, ``row 3``; empty for the input as a whole."""
        return f"{self.unit} {self.offset}" if self.unit else ""

    @property
    def shown_path(self) -> str:
        """The path as messages name it (a URL's password and secret query values hidden)."""
        return _shown(self.path)

    def __reduce__(self) -> tuple[type[FormatError], tuple[str, int, str, str]]:
        # Rebuilt from its fields, not from the formatted message (worker processes send it back).
        return (type(self), (self.path, self.offset, self.reason, self.unit))


class NoTraceData(FormatError):
    """A file found in a folder given as input that holds no trace data (a project's
    ``LICENSE``, a CSV): passed over, counted, not an error."""


class OtherSignal(FormatError):
    """OTLP data of a signal the reader does not take (metrics, say).

    A file holds one signal, so what follows is that signal too: reading
    stops here rather than reporting every record.
    """


def _shown(path: str) -> str:
    """``path`` as a message names it: a URL's password and secret query values hidden."""
    if not path.startswith(("http://", "https://", "clickhouse://", "clickhouses://")):
        return path
    # The redactor (its patterns compiled) only for a URL in a message.
    from ..redaction import redactor

    return redactor().text(path)
