"""Every framework patch goes through :class:`Patches`: saved, checked, undone.

A framework integration replaces a few callables of the framework (the one
place it calls a tool).  Each replacement is checked first: the callable must
exist and take the parameters the wrapper was written for; a version laid out
differently is left alone, with one warning, rather than half-patched.  What
was replaced is kept, so :meth:`Patches.undo` puts the framework back exactly
as it was.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..spans import warn_once

#: Set on every wrapper: the callable it replaced.
WRAPPED = "__otel_replay_wrapped__"


class LayoutChanged(Exception):
    """The framework's callable is not what the wrapper was written for."""


def parameters(fn: Any) -> list[str]:
    """The parameter names of ``fn`` (of the function itself, ``self`` included)."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    return list(inspect.signature(fn).parameters)


def check_layout(fn: Any, expect: Sequence[str], where: str) -> None:
    """Raise :class:`LayoutChanged` unless ``fn`` takes ``expect`` first, in that order."""
    if fn is None or not callable(fn):
        raise LayoutChanged(f"{where} is missing")
    try:
        found = parameters(fn)
    except (TypeError, ValueError) as exc:
        raise LayoutChanged(f"{where}: no signature ({exc})") from None
    if found[: len(expect)] != list(expect):
        raise LayoutChanged(f"{where} takes ({', '.join(found)}), not ({', '.join(expect)}, ...)")


class Patches:
    """The replacements one framework integration made, in order, for :meth:`undo`."""

    def __init__(self, framework: str) -> None:
        self.framework = framework
        self._saved: list[tuple[Any, str, Any, bool]] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._saved)

    def replace(
        self,
        owner: Any,
        name: str,
        make: Callable[[Any], Any],
        expect: Sequence[str] | None = None,
    ) -> Any:
        """Replace ``owner.name`` by ``make(original)``; return the wrapper.

        ``expect``: the parameters the original must start with (else
        :class:`LayoutChanged`).  A callable already replaced is left as it is.
        """
        with self._lock:
            own = name in vars(owner)
            original = vars(owner)[name] if own else getattr(owner, name, None)
            if getattr(original, WRAPPED, None) is not None:
                return original
            if expect is not None:
                check_layout(original, expect, f"{_where(owner)}.{name}")
            elif original is None:
                raise LayoutChanged(f"{_where(owner)}.{name} is missing")
            wrapper = make(original)
            setattr(wrapper, WRAPPED, original)
            setattr(owner, name, wrapper)
            self._saved.append((owner, name, original, own))
            return wrapper

    def undo(self) -> None:
        """Put back everything replaced, last first."""
        with self._lock:
            while self._saved:
                owner, name, original, own = self._saved.pop()
                if own:
                    setattr(owner, name, original)
                else:
                    with contextlib.suppress(AttributeError):
                        delattr(owner, name)

    def warn(self, problem: Exception) -> None:
        """Say once that this framework's tool calls are not recorded, and why."""
        warn_once(
            f"framework-{self.framework}",
            "otel-replay: %s is laid out differently than expected (%s); its tool calls "
            "are not recorded or replayed",
            self.framework,
            problem,
        )


def _where(owner: Any) -> str:
    return str(getattr(owner, "__qualname__", None) or getattr(owner, "__name__", repr(owner)))
