"""What a dialect sees of a span, and what a dialect is."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import json_text

#: GenAI attributes computed for a span: semconv name -> value.
GenAI = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class SpanView:
    """A span as plain data: enough to normalize it, whether stored or being exported.

    ``events`` are ``{"name": str, "attributes": Mapping}`` dicts.
    """

    attributes: Mapping[str, Any]
    name: str = ""
    scope: str = ""
    events: Sequence[Mapping[str, Any]] = ()
    #: The instrumentation scope's version (the instrumenting library's, for most).
    scope_version: str = ""

    def get(self, key: str) -> Any:
        return self.attributes.get(key)

    def text(self, key: str) -> str | None:
        value = self.attributes.get(key)
        return value if isinstance(value, str) and value else None

    def json(self, key: str) -> Any:
        """The attribute as a JSON value: a JSON string is parsed, other values kept."""
        return loads(self.attributes.get(key))


@dataclasses.dataclass(frozen=True)
class Dialect:
    """One tracing stack's attribute scheme.

    ``fill`` returns GenAI attributes the span may lack (the span's own win);
    ``repair`` those whose recorded value the stack is known to write wrongly
    (they replace the span's own in the normalized view).
    """

    name: str
    matches: Callable[[SpanView], bool]
    fill: Callable[[SpanView], GenAI]
    repair: Callable[[SpanView], GenAI] | None = None
    #: ``matches`` reads attribute values, not only the scope and attribute names
    #: (whose verdicts are remembered per scope and set of names).
    reads_values: bool = False
    #: Of a dialect that reads values: whether ``matches`` can be true of a span of this
    #: scope with these attribute names (None: it may be of any).  Remembered like the
    #: verdicts by names, it spares most spans the reading of their values.
    could_match: Callable[[str, frozenset[str]], bool] | None = None


def in_scope(name: str) -> Callable[[SpanView], bool]:
    """The ``matches`` of a dialect that is the spans of one instrumentation scope."""
    return lambda span: span.scope == name


def fills_nothing(span: SpanView) -> GenAI:
    """The ``fill`` of a dialect that only repairs."""
    return {}


def loads(value: Any) -> Any:
    """A JSON string parsed (None when it is not JSON); other values kept."""
    if isinstance(value, (str, bytes)):
        try:
            return json_text.loads(value)
        except ValueError:
            return None
    return value


def put(out: GenAI, key: str, value: Any) -> None:
    """Set ``key`` unless ``value`` is empty or ``key`` is already set."""
    if value is None or value == "" or value == [] or value == {}:
        return
    out.setdefault(key, value)
