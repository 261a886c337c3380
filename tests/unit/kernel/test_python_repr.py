"""Python repr text of SDK objects reads as plain data, and nothing in it ever runs."""

from __future__ import annotations

import pytest

from otel_replay import python_repr


def test_dataclass_reprs_with_enums_and_functions() -> None:
    # As Haystack's ChatMessage and Tool print themselves.
    text = (
        "ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[ToolCall("
        "tool_name='lookup_order', arguments={'order_id': 'ORD-5521'}, id='call_1', extra=None)],"
        " _name=None, _meta={'index': 0, 'delta': -1.5})"
    )
    assert python_repr.loads(text, class_key="type") == {
        "type": "ChatMessage",
        "_role": "assistant",
        "_content": [
            {
                "type": "ToolCall",
                "tool_name": "lookup_order",
                "arguments": {"order_id": "ORD-5521"},
                "id": "call_1",
                "extra": None,
            }
        ],
        "_name": None,
        "_meta": {"index": 0, "delta": -1.5},
    }
    tool = "Tool(name='t', function=<function t at 0x7f6c7642cd60>, parameters={'a': (1, 2)})"
    assert python_repr.loads(tool) == {
        "name": "t",
        "function": "<function t at 0x7f6c7642cd60>",
        "parameters": {"a": [1, 2]},
    }


def test_text_that_looks_like_a_repr_inside_strings_is_left_alone() -> None:
    text = "TextContent(text=\"a <b> c <Role.X: 'x'> 'quoted' \\\" done\")"
    assert python_repr.loads(text) == {"text": "a <b> c <Role.X: 'x'> 'quoted' \" done"}


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('echo pwned')",  # a call of a call: refused
        "Model(*args)",  # positional arguments: not a dataclass repr
        "a + b",
        "lambda: 0",
        "[x for x in y]",
        "Model(field=open('/etc/passwd'))",
        "(" * 10_000,
        "[" * 200 + "]" * 200,
        "ChatMessage(_role=<ChatRole.USER: 'user'",
    ],
)
def test_anything_else_is_not_a_repr(text: str) -> None:
    with pytest.raises(ValueError):
        python_repr.loads(text)


def test_a_name_is_only_a_string(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading ``os.system(...)``-shaped reprs never imports or calls anything."""
    import builtins

    imported: list[str] = []
    real = builtins.__import__

    def spy(name: str, *args: object, **kwargs: object) -> object:
        imported.append(name)
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", spy)
    assert python_repr.loads("os.path.Thing(cmd='rm -rf /')", class_key="k") == {
        "k": "os.path.Thing",
        "cmd": "rm -rf /",
    }
    assert "os.path" not in imported and "os" not in imported
