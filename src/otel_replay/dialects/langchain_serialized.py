"""LangChain's serialized messages, as instrumentations record a chat model's input and output.

LangChain (Python and JavaScript) serializes a message as ``{"lc": 1,
"type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}``; a chat
model callback's input is ``{"messages": [[message, ...]]}`` (a batch of
prompts) and its output ``{"generations": [[{"text": ..., "message":
message}]]}``.  OpenInference records both in ``input.value`` and
``output.value``.  They are read as data: the class name only picks the
role, nothing is constructed.

``kwargs``: ``content`` (text or content blocks), ``tool_calls`` (LangChain's
``{name, args, id}``), ``additional_kwargs.tool_calls`` (the provider's own,
when LangChain kept them), ``tool_call_id`` (a ``ToolMessage``), ``role``
(a ``ChatMessage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import messages as M

#: LangChain's message classes -> roles (a chunk is read as its message).
_ROLES = {
    "SystemMessage": "system",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
}


def is_message(value: Any) -> bool:
    """A serialized LangChain message."""
    return (
        isinstance(value, Mapping)
        and value.get("lc") == 1
        and value.get("type") == "constructor"
        and isinstance(value.get("kwargs"), Mapping)
        and _class(value).endswith(("Message", "MessageChunk"))
    )


def _class(value: Mapping[str, Any]) -> str:
    path = value.get("id")
    return str(path[-1]) if isinstance(path, list) and path else ""


def message(value: Mapping[str, Any]) -> dict[str, Any]:
    """A serialized LangChain message in the GenAI shape."""
    kwargs: Mapping[str, Any] = value["kwargs"]
    name = _class(value).removesuffix("Chunk")
    role = _ROLES.get(name) or str(kwargs.get("role") or "user")
    chat: dict[str, Any] = {"role": role, "content": kwargs.get("content")}
    if role == "tool":
        chat["tool_call_id"] = kwargs.get("tool_call_id")
    calls = _tool_calls(kwargs)
    content = kwargs.get("content")
    if calls and isinstance(content, list):
        # A Responses answer keeps its calls among its content blocks too (``function_call``
        # items, by ``call_id``, their arguments' text as sent): each call once, as a block.
        blocks = {b.get("call_id") for b in content if isinstance(b, Mapping)}
        calls = [c for c in calls if c.get("id") not in blocks or not c.get("id")]
    if calls:
        chat["tool_calls"] = calls
    return M.normalize_message(chat)


def _tool_calls(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The calls (``{id, name, arguments}``, as :func:`~otel_replay.messages.normalize_message`
    reads them): LangChain's own list, else the provider's it kept."""
    own = kwargs.get("tool_calls")
    if isinstance(own, list) and own:
        return [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("args")}
            for c in own
            if isinstance(c, Mapping)
        ]
    extra = kwargs.get("additional_kwargs")
    kept = extra.get("tool_calls") if isinstance(extra, Mapping) else None
    return [dict(c) for c in kept if isinstance(c, Mapping)] if isinstance(kept, list) else []


def prompt(body: Any) -> list[dict[str, Any]] | None:
    """The messages of ``{"messages": [[message, ...]]}`` (the first prompt of the batch)."""
    batch = body.get("messages") if isinstance(body, Mapping) else None
    first = batch[0] if isinstance(batch, list) and batch else None
    if isinstance(first, list) and first and all(is_message(m) for m in first):
        return [message(m) for m in first]
    return None


def generations(body: Any) -> list[dict[str, Any]] | None:
    """The answer of ``{"generations": [[{"message": message}, ...]]}`` (the first prompt's)."""
    batch = body.get("generations") if isinstance(body, Mapping) else None
    first = batch[0] if isinstance(batch, list) and batch else None
    if not isinstance(first, list):
        return None
    found = [g["message"] for g in first if isinstance(g, Mapping) and is_message(g.get("message"))]
    return [message(m) for m in found] or None


def tool_message_content(value: Mapping[str, Any]) -> tuple[Any] | None:
    """``(content,)`` of a LangChain ``ToolMessage`` as a framework's tool span records its
    result; None for any other value.

    Read: the serialized message (``{"lc": 1, "type": "constructor", ...,
    "kwargs": {"content": ...}}``) and its ``{"type": "tool", "data":
    {"content": ...}}`` form (``message_to_dict``).
    """
    kwargs = value.get("kwargs")
    if value.get("lc") == 1 and isinstance(kwargs, Mapping) and "content" in kwargs:
        return (kwargs["content"],)
    data = value.get("data")
    if value.get("type") == "tool" and isinstance(data, Mapping) and "content" in data:
        return (data["content"],)
    return None


def tool_message_call_id(value: Any) -> str | None:
    """The ``tool_call_id`` of a LangChain ``ToolMessage`` (either form
    :func:`tool_message_content` reads): the model's id of the call the tool ran
    for, which LangGraph's ``ToolNode`` copies from the call.  None for any other
    value, and for an empty id (a call that came without one)."""
    if not isinstance(value, Mapping):
        return None
    kwargs = value.get("kwargs")
    data = value.get("data")
    if value.get("lc") == 1 and isinstance(kwargs, Mapping):
        found = kwargs.get("tool_call_id")
    elif value.get("type") == "tool" and isinstance(data, Mapping):
        found = data.get("tool_call_id")
    else:
        return None
    return found if isinstance(found, str) and found else None


#: ``llm.invocation_parameters._type`` of langchain-openai's ``ChatOpenAI``.
OPENAI_CHAT_TYPE = "openai-chat"


def openai_sent_blocks(content: Any) -> Any:
    """A LangChain message's content blocks as langchain-openai sends them.

    ``ChatOpenAI`` formats a message's content list before the request
    (``_format_message_content``): an Anthropic-style image block
    (``{"type": "image", "source": {...}}``, which a tool may return) becomes an
    ``image_url`` part, a data URL for base64 data (``data:<media_type>;base64,<data>``)
    or the source's URL, and one with any other source is left out.  Other blocks
    are sent as they are, and so is content that is not a list.
    """
    if not isinstance(content, list):
        return content
    out: list[Any] = []
    for block in content:
        source = block.get("source") if isinstance(block, Mapping) else None
        if not (isinstance(block, Mapping) and block.get("type") == "image" and source):
            out.append(block)
            continue
        if not isinstance(source, Mapping):
            out.append(block)
        elif source.get("type") == "base64" and source.get("media_type") and source.get("data"):
            url = f"data:{source['media_type']};base64,{source['data']}"
            out.append({"type": "image_url", "image_url": {"url": url}})
        elif source.get("type") == "url" and source.get("url"):
            out.append({"type": "image_url", "image_url": {"url": source["url"]}})
    return out


#: The block types langchain-openai sends in a Responses tool output as blocks of that API
#: (``_ensure_valid_tool_message_content``): a list of these alone is converted.
_RESPONSES_BLOCKS = frozenset(
    {"input_text", "input_image", "input_file", "text", "image_url", "file"}
)


def responses_sent_result(content: Any) -> Any:
    """A tool result's content blocks (as :func:`openai_sent_blocks` gives them) as
    ``ChatOpenAI`` sends them in a Responses ``function_call_output``
    (``_convert_chat_completions_blocks_to_responses``): a ``text`` block as
    ``input_text``, an ``image_url`` one as ``input_image`` with the URL (and its
    ``detail``), a ``file`` one as ``input_file``; a list holding any other block is
    kept (langchain-openai sends it as its JSON text, the same value), as is content that
    is not a list."""
    if not isinstance(content, list) or not all(
        isinstance(b, Mapping) and b.get("type") in _RESPONSES_BLOCKS for b in content
    ):
        return content
    return [_responses_block(b) for b in content]


def _responses_block(block: Mapping[str, Any]) -> Any:
    kind = block.get("type")
    if kind == "text" and "text" in block:
        return {"type": "input_text", "text": block["text"]}
    image = block.get("image_url")
    if kind == "image_url" and isinstance(image, Mapping) and "url" in image:
        out = {"type": "input_image", "image_url": image["url"]}
        if image.get("detail"):
            out["detail"] = image["detail"]
        return out
    file = block.get("file")
    if kind == "file" and isinstance(file, Mapping):
        return {"type": "input_file", **file}
    return dict(block)


def responses_answered(*bodies: Any) -> bool:
    """Whether ``ChatOpenAI`` called the Responses API, told by the serialized answers in
    a call's recorded ``bodies`` (its prompt's and its generations'): a Responses answer's
    ``response_metadata.id`` is the response's (``resp_...``)."""
    for body in bodies:
        if not isinstance(body, Mapping):
            continue
        found = [*(body.get("messages") or [[]])[:1], *(body.get("generations") or [[]])[:1]]
        for batch in found:
            for m in batch if isinstance(batch, list) else []:
                m = m.get("message", m) if isinstance(m, Mapping) else m
                if not is_message(m) or not _class(m).startswith("AIMessage"):
                    continue
                meta = m["kwargs"].get("response_metadata")
                answer = meta.get("id") if isinstance(meta, Mapping) else None
                if isinstance(answer, str) and answer.startswith("resp_"):
                    return True
    return False


def openai_sent_messages(messages: Any, *, responses: bool = False) -> Any:
    """GenAI messages read from a ``ChatOpenAI`` call's record with their content blocks
    (tool results' and the messages' own parts) as langchain-openai sent them
    (:func:`openai_sent_blocks`; ``responses``: to the Responses API, a tool result's
    blocks as :func:`responses_sent_result` makes them); anything else as it is."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    for m in messages:
        parts = m.get("parts") if isinstance(m, Mapping) else None
        if not isinstance(parts, list):
            out.append(m)
            continue
        sent = []
        for part in openai_sent_blocks(parts):
            if isinstance(part, Mapping) and part.get("type") == "tool_call_response":
                sent_result = openai_sent_blocks(part.get("response"))
                if responses:
                    sent_result = responses_sent_result(sent_result)
                part = {**part, "response": sent_result}
            sent.append(part)
        out.append({**m, "parts": sent})
    return out
