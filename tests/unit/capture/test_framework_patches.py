"""Framework patching: checked before, undone exactly after, and only once the app imports it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from otel_replay.capture import frameworks
from otel_replay.capture.frameworks._imports import when_imported
from otel_replay.capture.frameworks._patch import WRAPPED, LayoutChanged, Patches


class Toolset:
    def call_tool(self, name: str, tool_args: dict[str, object]) -> str:
        return f"{name}({tool_args})"


def wrapper(original: object) -> object:
    def call_tool(self: Toolset, name: str, tool_args: dict[str, object]) -> str:
        return "wrapped " + original(self, name, tool_args)  # type: ignore[operator]

    return call_tool


def test_a_patch_is_checked_and_undone_exactly() -> None:
    original = Toolset.__dict__["call_tool"]
    patches = Patches("toy")
    patches.replace(Toolset, "call_tool", wrapper, expect=("self", "name", "tool_args"))
    assert Toolset().call_tool("t", {}) == "wrapped t({})"
    assert getattr(Toolset.__dict__["call_tool"], WRAPPED) is original
    patches.replace(Toolset, "call_tool", wrapper)  # already wrapped: left as it is
    assert Toolset().call_tool("t", {}) == "wrapped t({})"
    patches.undo()
    assert Toolset.__dict__["call_tool"] is original and len(patches) == 0


def test_a_version_laid_out_differently_is_left_alone_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    patches = Patches("toy")
    with pytest.raises(LayoutChanged, match=r"takes \(self, name, tool_args\)"):
        patches.replace(Toolset, "call_tool", wrapper, expect=("self", "name", "args", "ctx"))
    assert "call_tool" in Toolset.__dict__ and not hasattr(Toolset.call_tool, WRAPPED)
    with caplog.at_level(logging.WARNING):
        patches.warn(LayoutChanged("Toolset.call_tool takes (self, name)"))
        patches.warn(LayoutChanged("Toolset.call_tool takes (self, name)"))
    assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1


def test_a_framework_is_patched_and_put_back() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.toolsets.function import FunctionToolset

    original = FunctionToolset.__dict__["call_tool"]
    assert frameworks.instrument("pydantic_ai")  # imported already: patched at once
    assert FunctionToolset.__dict__["call_tool"] is not original
    assert "pydantic_ai" in frameworks.installed()
    frameworks.uninstrument_framework("pydantic_ai")
    assert FunctionToolset.__dict__["call_tool"] is original
    assert "pydantic_ai" not in frameworks.installed()


def test_a_framework_is_patched_only_once_the_app_imports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "toy_framework.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[bool] = []
    assert not when_imported("toy_framework", lambda: seen.append(True))
    assert seen == []
    import toy_framework  # noqa: F401  # the app imports it: the callback runs after it ran

    assert seen == [True]
    monkeypatch.delitem(sys.modules, "toy_framework")
    with pytest.raises(ValueError, match="unknown frameworks"):
        frameworks.instrument_framework("tensorflow")
