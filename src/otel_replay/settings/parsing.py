"""How a variable's text becomes its value: the one rule for flags, kinds and bounds.

One rule for flags: ``1``, ``true``, ``yes``, ``on`` (:data:`TRUE`) turn one
on and ``0``, ``false``, ``no``, ``off`` (:data:`FALSE`) turn it off, in any
case and with spaces around; unset or empty keeps the default.  Any other
value is said once (:func:`~.once.warn_once`) and keeps the default.  Numbers
that do not parse, or are out of their bound, are said once too, and are then
either brought within the bound or replaced by the default, as the
:class:`Variable` says.  Reading never raises.

A :class:`Variable` also says its type, default and bound in words, for the
settings page's table.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from typing import Any, Final, Literal

from .names import MiB, size_text
from .once import warn_once

__all__ = ["CONTENT_OFF", "FALSE", "TRUE", "Kind", "Variable", "parse_flag"]

#: What turns a flag on (any case, spaces around ignored).
TRUE: Final = ("1", "true", "yes", "on")
#: What turns a flag off (any case, spaces around ignored).
FALSE: Final = ("0", "false", "no", "off")
#: Values of :data:`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` that turn
#: content off (any case); any other value, or none, keeps it on.
CONTENT_OFF: Final = ("no_content", "false", "0", "none", "off")

#: The largest size in bytes a bound accepts (a file offset's range).
_MAX_BYTES: Final = (1 << 63) - 1
#: The longest wait a thread's timer accepts.
_MAX_SECONDS: Final = float(threading.TIMEOUT_MAX)
#: A rotation size whose bytes still fit a file offset.
_MAX_MEGABYTES: Final = float(_MAX_BYTES // MiB)
#: A thousand years: older dates than now minus this do not exist.
_MAX_DAYS: Final = 365_000.0

Kind = Literal["flag", "int", "number", "bytes", "seconds", "text", "list", "choice", "standard"]


def parse_flag(name: str, raw: str | None, default: bool | None) -> bool | None:
    """``raw`` as a flag by the one rule (:data:`TRUE`, :data:`FALSE`); ``default`` when
    unset, empty or unknown (an unknown value is said once)."""
    if raw is None or not raw.strip():
        return default
    text = raw.strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    warn_once(
        (name, raw),
        "otel-replay: %s=%r is not one of %s (on) or %s (off); using %s",
        name,
        raw,
        ", ".join(TRUE),
        ", ".join(FALSE),
        _shown(default),
    )
    return default


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclasses.dataclass(frozen=True)
class Variable:
    """One environment variable: its name, how its text is read, its default and bound."""

    name: str
    kind: Kind
    default: Any
    doc: str
    #: Numbers: the least and most accepted (None: no bound).
    least: float | None = None
    most: float | None = None
    #: Numbers: the least is excluded (``> least``).
    above: bool = False
    #: Numbers out of bound: brought to it (``clamp``) or replaced by the default.
    outside: Literal["clamp", "default"] = "clamp"
    #: Choices: the values accepted (lower case).
    choices: tuple[str, ...] = ()
    #: Set by OpenTelemetry's or another specification, read with its meaning.
    standard: bool = False
    #: Its value is a secret: never shown.
    secret: bool = False

    @property
    def field(self) -> str:
        """The :class:`Settings` field holding it."""
        return self.name.removeprefix("OTEL_REPLAY_").lower()

    def parse(self, raw: str | None) -> Any:
        """The value ``raw`` (the variable's text, None when unset) stands for; never raises."""
        kind = self.kind
        if kind == "text" or kind == "standard":
            return raw or None
        if kind == "list":
            return tuple(p.strip() for p in (raw or "").split(",") if p.strip())
        if kind == "flag":
            return parse_flag(self.name, raw, self.default)
        if raw is None or not raw.strip():
            return self.default
        if kind == "choice":
            text = raw.strip().lower()
            if text in self.choices:
                return text
            return self._refuse(raw, f"not one of {', '.join(self.choices)}")
        return self._number(raw)

    def _number(self, raw: str) -> Any:
        value: float
        try:
            value = int(raw) if self.kind == "int" else float(raw)
        except (ValueError, OverflowError):
            return self._refuse(raw, "not an integer" if self.kind == "int" else "not a number")
        if isinstance(value, float) and not math.isfinite(value):  # an int is always finite
            return self._refuse(raw, "not a finite number")
        low, high = self.least, self.most
        below = low is not None and (value <= low if self.above else value < low)
        if not below and (high is None or value <= high):
            return value
        if self.outside == "default":
            return self._refuse(raw, f"not {self.bound()}")
        kept = low if below else high
        warn_once(
            (self.name, raw),
            "otel-replay: %s=%r is not %s; using %s",
            self.name,
            raw,
            self.bound(),
            _shown(kept),
        )
        return int(kept) if self.kind == "int" and kept is not None else kept

    def _refuse(self, raw: str, why: str) -> Any:
        warn_once(
            (self.name, raw),
            "otel-replay: %s=%r is %s; using %s",
            self.name,
            raw,
            why,
            _shown(self.default),
        )
        return self.default

    def bound(self) -> str:
        """The bound in words (``> 0``, ``≥ 1``, ``≥ 0, ≤ 365000``); empty when there is none.

        The largest sizes and waits the system takes are not shown: no one sets them.
        """
        parts = []
        if self.least is not None:
            parts.append(f"{'>' if self.above else '≥'} {_shown(self.least)}")
        if self.most is not None and self.most not in (_MAX_BYTES, _MAX_SECONDS, _MAX_MEGABYTES):
            parts.append(f"≤ {_shown(self.most)}")
        return ", ".join(parts)

    def type_text(self) -> str:
        """The type in words, for the table."""
        if self.kind == "choice":
            return " / ".join(f"`{c}`" for c in self.choices)
        return {
            "flag": "flag",
            "int": "integer",
            "number": "number",
            "bytes": "bytes",
            "seconds": "seconds",
            "text": "text",
            "list": "comma-separated list",
            "standard": "text",
        }[self.kind]

    def default_text(self) -> str:
        """The default in words, for the table."""
        value = self.default
        if value is None or value == ():
            return "unset"
        if self.kind == "bytes" or (self.kind == "int" and self.name.endswith("_BYTES")):
            return size_text(int(value))
        if self.kind == "flag":
            return _shown(value)
        return f"`{_shown(value)}`" if self.kind == "choice" else _shown(value)
