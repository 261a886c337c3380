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
is not there is replaced by a stand-in of the same name.  So is one that is
there but would stop the replay itself rather than tell the agent its tool
failed (:func:`raised_as_is`): a ``SystemExit``, ``KeyboardInterrupt``,
pytest's ``Skipped`` or any other ``BaseException`` that is not an
``Exception``, and ``unittest.SkipTest``; its stand-in is a
:class:`RecordedBaseException`.

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
import pathlib
import sys
import typing
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, TypeGuard, TypeVar, get_args

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


class RecordedBaseException(Exception):
    """Raised by a replay in place of a recorded exception it will not raise as it is.

    A recording may say a tool failed with ``SystemExit``, ``KeyboardInterrupt``,
    ``GeneratorExit``, ``asyncio.CancelledError``, pytest's ``Exit``/``Skipped``/
    ``Failed`` or ``unittest.SkipTest``.  Raised for real, such an exception ends
    the replay instead of the agent's tool call: the CLI exits 0 with no report,
    a pytest session stops or the test counts as skipped.  The stand-in is an
    ``Exception``, so it travels through the agent like any tool error, with the
    recorded arguments; :attr:`recorded_type` is the recorded dotted type name,
    which its message starts with.
    """

    #: The dotted type name the recording gave.
    recorded_type: str = ""

    def __str__(self) -> str:
        return f"{self.recorded_type}: {super().__str__()}"

    def __repr__(self) -> str:
        # Not the recorded class: a reader of "the agent raised ..." must not think so.
        inner = ", ".join(map(repr, self.args))
        return f"RecordedBaseException[{self.recorded_type}]({inner})"


#: ``Exception`` classes that a test runner takes as an order, not a failure: raised
#: in a test, ``unittest.SkipTest`` makes pytest skip it and pytest's ``Exit``
#: ends the session (with the exit code it carries).
RUNNER_CONTROL: Final = ("unittest.case.SkipTest", "_pytest.outcomes.Exit")


def raised_as_is(cls: type[BaseException]) -> TypeGuard[type[Exception]]:
    """True when a replay may raise a recorded exception of class ``cls`` itself.

    Only ``Exception`` subclasses: anything else (``SystemExit``, ``KeyboardInterrupt``,
    ``GeneratorExit``, ``asyncio.CancelledError``, exception groups of those,
    pytest's ``Skipped`` and ``Failed``) is control flow the replay itself would
    obey.  Nor the ``Exception`` subclasses a test runner obeys the same way
    (:data:`RUNNER_CONTROL`: a skipped test, a stopped session).
    """
    if not issubclass(cls, Exception):
        return False
    for name in RUNNER_CONTROL:
        control = loaded_dotted(name)
        if isinstance(control, type) and issubclass(cls, control):
            return False
    return True


def stand_in(name: str, poisoning: bool = False) -> type[Exception]:
    """An ``Exception`` class that stands for the recorded dotted type name ``name``.

    One of the same name when the type is not loaded here; with ``poisoning``
    (the type is loaded but not :func:`raised_as_is`), a
    :class:`RecordedBaseException` that says so by its own name, lest a
    traceback reading ``SystemExit`` be taken for one.
    """
    if poisoning:
        return type(
            RecordedBaseException.__name__,
            (RecordedBaseException,),
            {"__module__": RecordedBaseException.__module__, "recorded_type": name},
        )
    module, _, qualname = _spelled(name).rpartition(".")
    return type(qualname or _spelled(name), (Exception,), {"__module__": module or "builtins"})


def _spelled(name: str) -> str:
    """``name`` as a class may be named: a NUL or a lone surrogate (which ``type()``
    refuses) written as its escape."""
    if name.isascii() and "\x00" not in name:
        return name
    return name.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")


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

    def exception(self, name: str) -> type[Exception]:
        """The class to raise a recorded exception of dotted type ``name`` with.

        The class itself when it is loaded (or allowed) and :func:`raised_as_is`;
        else a :func:`stand_in` of the same name, a :class:`RecordedBaseException`
        when the class is there but may not be raised.
        """
        cls: Any = self._known(name) or loaded_dotted(name)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            if raised_as_is(cls):
                return cls
            return stand_in(name, poisoning=True)
        # Not loaded here (or not an exception type): an exception of the same
        # name still tells the user what happened.
        return stand_in(name)
