"""Which recorded classes a replay may rebuild.

A payload records an instance of a dataclass, pydantic model, enum, NamedTuple
or path by its class name, ``module:qualname``, and a recorded exception by
its dotted type name.  Those names come from the trace file, and a trace file
may come from anyone: importing the module a file names runs that module's
code, and calling the class it names runs whatever the file chose
(``os:system`` is a callable too).  So nothing here ever imports, and a class
is used only when it is

- a plain stdlib value type (pathlib's path classes);
- registered by the agent's own code with :func:`register_type`, or passed to
  the replay (``otel_replay.replay(..., trusted_types=[Order])``);
- named by the return annotation of the replayed tool function itself
  (``def lookup(...) -> list[Order]``: the agent's own code declared it);
- with ``type_trust="imported"`` (opt-in), a class of the recorded kind that a
  module the process has *already* imported defines.

For exceptions the last rule always applies (an exception type is only ever
raised, and a module already imported has run its code anyway); a type that
is not there is replaced by a stand-in of the same name.

Anything else comes back as its plain JSON value; :class:`TypeResolver` keeps
what it refused so that the replay report says so.  Looking a name up goes
through ``inspect.getattr_static``, so a module's ``__getattr__`` (which may
import) is never called either.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import functools
import inspect
import sys
import typing
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, TypeVar, get_args

#: The kinds of tagged objects the payload codec records by class name.
Kind = Literal["path", "enum", "dataclass", "pydantic", "namedtuple"]
#: ``registered``: stdlib value types and registered classes only (the default);
#: ``imported``: also classes defined in modules this process already imported.
TypeTrust = Literal["registered", "imported"]
TYPE_TRUSTS: Final = get_args(TypeTrust)

T = TypeVar("T", bound=type)

_registered: dict[str, type] = {}


def class_path(cls: type) -> str:
    """The name a payload records ``cls`` by: ``module:qualname``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def register_type(cls: T) -> T:
    """Let replays rebuild recorded values of ``cls``; usable as a class decorator.

    ::

        @otel_replay.register_type
        @dataclasses.dataclass
        class Order: ...

    A recorded ``Order`` then comes back from a stubbed tool as an ``Order``;
    without it, as the plain JSON of its fields (and the report says why).
    Exception classes may be registered too.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_type() takes a class, not {type(cls).__name__}")
    _registered[class_path(cls)] = cls
    return cls


def _by_name(classes: Iterable[type]) -> dict[str, type]:
    out: dict[str, type] = {}
    for cls in classes:
        out[class_path(cls)] = cls
        out[f"{cls.__module__}.{cls.__qualname__}"] = cls  # the exception spelling
    return out


@functools.cache
def _stdlib_by_name() -> dict[str, type]:
    # pathlib is imported when a recorded path is rebuilt, not with the capture API.
    import pathlib

    return _by_name(
        (
            pathlib.PurePath,
            pathlib.PurePosixPath,
            pathlib.PureWindowsPath,
            pathlib.Path,
            pathlib.PosixPath,
            pathlib.WindowsPath,
        )
    )


def is_kind(obj: object, kind: Kind) -> bool:
    """True when ``obj`` is a class a payload of ``kind`` may be rebuilt with."""
    if not isinstance(obj, type):
        return False
    if kind == "path":
        import pathlib

        return issubclass(obj, pathlib.PurePath)
    if kind == "enum":
        return issubclass(obj, enum.Enum)
    if kind == "dataclass":
        return dataclasses.is_dataclass(obj)
    if kind == "pydantic":
        return inspect.getattr_static(obj, "model_validate", None) is not None
    fields = inspect.getattr_static(obj, "_fields", None)
    return issubclass(obj, tuple) and isinstance(fields, tuple)


def loaded(module: str, qualname: str) -> object | None:
    """What ``module:qualname`` names in an already-imported module (nothing is imported)."""
    obj: object | None = sys.modules.get(module)
    for part in qualname.split("."):
        if obj is None or not part.isidentifier():
            return None
        obj = inspect.getattr_static(obj, part, None)
    return obj


def loaded_dotted(name: str) -> object | None:
    """What a dotted name (``pkg.mod.Class``) names in already-imported modules, or builtins."""
    parts = name.split(".")
    if len(parts) == 1:
        return inspect.getattr_static(builtins, name, None) if name.isidentifier() else None
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in sys.modules:
            return loaded(module, ".".join(parts[cut:]))
    return None


def declared_types(fn: Callable[..., Any]) -> tuple[type, ...]:
    """The classes ``fn``'s return annotation names (``list[Order] | None`` gives ``Order``).

    The annotation is the agent's own code, evaluated in its own module, as
    ``typing.get_type_hints`` does; one that cannot be evaluated names none.
    """
    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception:  # a forward reference that does not resolve, an odd callable
        return ()
    out: list[type] = []

    def walk(node: Any, depth: int) -> None:
        if depth > 8:
            return
        if isinstance(node, type) and node.__module__ != "builtins":
            out.append(node)
        for arg in typing.get_args(node):
            walk(arg, depth + 1)

    walk(hint, 0)
    return tuple(out)


class TypeResolver:
    """Resolves recorded class names to classes the replay may use; never imports.

    ``refused`` lists, in order, each recorded class it would not use.
    """

    def __init__(self, trust: TypeTrust = "registered", types: Iterable[type] = ()) -> None:
        if trust not in TYPE_TRUSTS:
            raise ValueError(f"type_trust must be one of {TYPE_TRUSTS}, not {trust!r}")
        self.trust = trust
        self.types = _by_name(types)
        self.refused: list[str] = []

    def including(self, types: Iterable[type]) -> TypeResolver:
        """This resolver with ``types`` allowed too (refusals still land in ``refused``)."""
        wider = TypeResolver(self.trust)
        wider.types = {**self.types, **_by_name(types)}
        wider.refused = self.refused
        return wider

    def _known(self, name: str) -> type | None:
        return self.types.get(name) or _registered.get(name) or _stdlib_by_name().get(name)

    def resolve(self, path: str, kind: Kind) -> type | None:
        """The class to rebuild a recorded ``kind`` of class ``path`` with, or None (refused)."""
        cls: object | None = self._known(path)
        if cls is None and self.trust == "imported":
            module, _, qualname = path.partition(":")
            cls = loaded(module, qualname)
        if is_kind(cls, kind):
            assert isinstance(cls, type)
            return cls
        self.refused.append(f"{path} ({kind})")
        return None

    def exception(self, name: str) -> type[BaseException] | None:
        """The exception type a recorded dotted name names, if it is allowed and loaded."""
        cls: Any = self._known(name) or loaded_dotted(name)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return cls
        return None
