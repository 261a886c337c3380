"""Run a callback once a module is imported: patch a framework only if the app uses it.

Importing every installed framework to patch it would cost the app seconds
and run their import-time side effects for frameworks it never uses.  A
framework already imported is patched at once; otherwise a finder on
``sys.meta_path`` waits for its module and patches it right after the module
has run, before the importer gets it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from ..spans import warn_once

Callback = Callable[[], None]


class _Loader(importlib.abc.Loader):
    """The module's own loader, then the callbacks."""

    def __init__(self, loader: Any, name: str, callbacks: list[Callback]) -> None:
        self._loader = loader
        self._name = name
        self._callbacks = callbacks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for callback in self._callbacks:
            try:
                callback()
            except Exception as exc:  # never break the app's import
                warn_once(f"import-hook-{self._name}", "otel-replay: %s: %r", self._name, exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Watcher(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.waiting: dict[str, list[Callback]] = {}
        self.lock = threading.Lock()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.waiting:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        with self.lock:
            callbacks = self.waiting.pop(fullname, None)
        if callbacks is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, fullname, callbacks)
        return spec


_watcher = _Watcher()


def when_imported(module: str, callback: Callback) -> bool:
    """Call ``callback`` now if ``module`` is imported (True), else once it is (False)."""
    if module in sys.modules:
        callback()
        return True
    with _watcher.lock:
        _watcher.waiting.setdefault(module, []).append(callback)
    if _watcher not in sys.meta_path:
        sys.meta_path.insert(0, _watcher)
    return False


def forget(module: str, callback: Callback) -> None:
    """Do not call ``callback`` when ``module`` is imported (it was not yet)."""
    with _watcher.lock:
        callbacks = _watcher.waiting.get(module, [])
        if callback in callbacks:
            callbacks.remove(callback)
        if not callbacks:
            _watcher.waiting.pop(module, None)
        idle = not _watcher.waiting
    if idle and _watcher in sys.meta_path:
        sys.meta_path.remove(_watcher)
