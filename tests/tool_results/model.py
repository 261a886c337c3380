"""A tiny scripted model server (stdlib) for the tool-result recordings, with its ground truth.

``POST /v1/chat/completions`` (JSON, or SSE with ``"stream": true``) and
``POST /v1/responses`` (JSON).  A request that carries no tool result is
answered with one call of every tool it declares, all in parallel, with empty
arguments; a request that carries results gets the final text :data:`ANSWER`.
Every request is appended to a JSON-lines log in the conformance server's
record shape (``body_raw``, ``response_raw``, ``turn``), so
``tests/fixtures/ground_truth.py`` reads it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.conformance.server import Background

ANSWER = "All tools answered."
CREATED = 1767225600


def compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _declared(body: dict[str, Any]) -> list[str]:
    names = []
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        names.append(str(fn.get("name")))
    return names


def _has_results(body: dict[str, Any]) -> bool:
    items = body.get("messages", body.get("input"))
    if not isinstance(items, list):
        return False
    return any(
        isinstance(m, dict) and (m.get("role") == "tool" or m.get("type") == "function_call_output")
        for m in items
    )


def _call_id(n: int, name: str) -> str:
    return f"call_{n}_{name}"


def chat_json(calls: list[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None if calls else ANSWER}
    if calls:
        message["tool_calls"] = [
            {"id": _call_id(i, n), "type": "function", "function": {"name": n, "arguments": "{}"}}
            for i, n in enumerate(calls)
        ]
    finish = "tool_calls" if calls else "stop"
    return {
        "id": "chatcmpl-shapes",
        "object": "chat.completion",
        "created": CREATED,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chat_sse(calls: list[str]) -> Iterator[str]:
    base = {
        "id": "chatcmpl-shapes",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "gpt-4o-mini",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return (
            "data: "
            + compact({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            + "\n\n"
        )

    yield chunk({"role": "assistant", "content": None if calls else ""})
    for i, n in enumerate(calls):
        call = {
            "index": i,
            "id": _call_id(i, n),
            "type": "function",
            "function": {"name": n, "arguments": "{}"},
        }
        yield chunk({"tool_calls": [call]})
    if not calls:
        yield chunk({"content": ANSWER})
    yield chunk({}, "tool_calls" if calls else "stop")
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    yield "data: " + compact({**base, "choices": [], "usage": usage}) + "\n\n"
    yield "data: [DONE]\n\n"


def responses_json(calls: list[str]) -> dict[str, Any]:
    output: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": _call_id(i, n),
            "name": n,
            "arguments": "{}",
            "status": "completed",
        }
        for i, n in enumerate(calls)
    ]
    if not calls:
        output.append(
            {
                "type": "message",
                "id": "msg_shapes",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        )
    return {
        "id": "resp_shapes",
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "model": "gpt-4o-mini",
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        body = json.loads(raw)
        calls = [] if _has_results(body) else _declared(body)
        record: dict[str, Any] = {
            "method": "POST",
            "path": self.path,
            "body_raw": raw,
            "conversation": "shapes",
            "turn": 0 if calls else 1,
            "final": not calls,
        }
        if self.path.endswith("/responses"):
            record["response_raw"] = self._send(compact(responses_json(calls)))
        elif body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            events = list(chat_sse(calls))
            self.wfile.write("".join(events).encode())
            record["response_raw"] = "".join(events)
        else:
            record["response_raw"] = self._send(compact(chat_json(calls)))
        self.server.record(record)

    def _send(self, text: str) -> str:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return text


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, log_path: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.log_path = log_path
        self.lock = threading.Lock()

    def record(self, record: dict[str, Any]) -> None:
        with self.lock, self.log_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


class ModelServer(Background):
    """The server on a free port of 127.0.0.1 while the ``with`` lasts."""

    def __init__(self, log_path: Path) -> None:
        super().__init__(_Server(log_path))
