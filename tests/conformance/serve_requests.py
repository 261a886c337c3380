"""Serve each case's recorded requests back from its own trace: how far does replay get?

    PYTHONPATH=src python -m tests.conformance.serve_requests [STACK ...]

For every case with content, the run(s) its trace rebuilds are served by
:class:`~otel_replay.replay.engine.ReplayEngine` (the default ``messages``
rung), and the exact request bodies the agent sent the model server
(``server.jsonl``) are sent to it in order, one conversation per agent run,
through the in-process transport.  A case passes when every request is
answered; otherwise the first refusal is printed (``test_serve_requests.py``
asserts it).  The agent's own code is not run: this measures the matching of
what an unchanged agent would send again, the first half of replaying it.

Each answer's tool calls are also compared with the fake server's answer as it
went on the wire (:func:`spelling_problems`): their ids, names and argument
texts (key order, spacing, escapes) must be the server's, or the answer must
name the call as re-spelled (``x-otel-replay-respelled``, which the replay's
report says too).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx

from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from tests.conformance.checks import Case, check, find_cases


def serve_case(
    case: Case,
    sent: Callable[[bytes], bytes] = bytes,
    answered: Callable[[dict[str, Any], httpx.Response], None] | None = None,
    ended: Callable[[dict[str, Any], httpx.Response], None] | None = None,
) -> str | None:
    """None when every recorded request of ``case`` is served; else the first refusal.

    ``sent``: what is sent for each recorded body (the body itself by default);
    ``answered``: told of each recorded request and the replay's answer to it;
    ``ended``: told of each run's last request, where the server failed it on an error
    status (not a cut) and the run ended there, and the replay's answer to it, sent after
    the run's other requests.
    """
    engine = ReplayEngine(check(case).runs)  # the runs the conformance check loaded
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for order, requests in case.conversations().items():
            conversation: dict[str, str] = {}
            # An answer cut partway through that the agent went on from is failed again.
            recovered = case.recovered(order)
            for r in sorted([*requests, *recovered], key=lambda r: int(r["seq"])):
                path = _served_path(r["path"])
                if str(r["turn"]) == "0" and recovered:
                    conversation = {}  # its task run again after a cut: it starts over
                headers = {"content-type": "application/json", **conversation}
                body = sent(r["body_raw"].encode())
                if r in recovered:
                    try:
                        answer = http.post(path, content=body, headers=headers)
                    except httpx.RemoteProtocolError:
                        continue
                    return f"{answer.status_code} at turn {r['turn']}: a cut answer served whole"
                answer = http.post(path, content=body, headers=headers)
                if answer.status_code != 200:
                    return f"{answer.status_code} at turn {r['turn']}: {answer.text}"
                if answered is not None:
                    answered(r, answer)
                conversation = {CONVERSATION_HEADER: answer.headers[CONVERSATION_HEADER]}
            last = failed_end(case, order)
            if ended is not None and last is not None:
                path = _served_path(last["path"])
                headers = {"content-type": "application/json", **conversation}
                ended(last, http.post(path, content=last["body_raw"].encode(), headers=headers))
    return None


def _served_path(logged: str) -> str:
    """The path a logged request is served at: as logged for Bedrock's (``/model/...``),
    under ``/v1`` for the others (a client may have sent it without)."""
    path = logged.split("?", 1)[0]
    if path.startswith(("/v1/", "/model/")):
        return path
    return "/v1/" + path.lstrip("/")


def served_text(answer: httpx.Response) -> str:
    """A served answer as the fake server logs one: its text, or an AWS event stream's
    events as ``event:`` / ``data: {type: payload}`` lines (its frames are binary)."""
    if not answer.headers.get("content-type", "").startswith(EVENT_STREAM):
        return answer.text
    from botocore.eventstream import EventStreamBuffer  # the decoder boto3 reads with

    frames = EventStreamBuffer()
    frames.add_data(answer.content)
    lines = []
    for frame in frames:
        kind = frame.headers.get(":event-type") or frame.headers.get(":exception-type")
        payload = json.dumps({kind: json.loads(frame.payload)}, ensure_ascii=False)
        lines.append(f"event: {kind}\ndata: {payload}\n\n")
    return "".join(lines)


#: The content type of an AWS event stream (Bedrock's ConverseStream answers).
EVENT_STREAM = "application/vnd.amazon.eventstream"


def failed_end(case: Case, order: str) -> dict[str, Any] | None:
    """The last request of the run about ``order``, where the server failed it on an error
    status (not a cut) and the run ended in that error."""
    last = case.cut(order)
    if last is None or not last.get("failed") or last.get("cut"):
        return None
    return last if int(last.get("status") or 0) >= 400 else None


def _events(raw: str) -> list[dict[str, Any]]:
    # SSE ends a line at CR, LF or CRLF only (a JSON event may hold U+2028 as it is).
    lines = re.split(r"\r\n|\r|\n", raw)
    return [
        json.loads(line[5:])
        for line in lines
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")
    ]


def call_texts(raw: str) -> list[tuple[str, str, str]]:
    """``(id, name, arguments as text)`` of each tool call of a model answer as it went on the
    wire: a JSON body, or an SSE stream's deltas joined (an Anthropic ``tool_use`` block of a
    JSON body holds its input as an object: its text is that object's, compact, in order)."""
    if raw.lstrip().startswith("{"):
        body = json.loads(raw)
        if "choices" in body:
            calls = body["choices"][0]["message"].get("tool_calls") or []
            return [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls]
        if isinstance(body.get("output"), dict):  # Bedrock Converse
            blocks = body["output"].get("message", {}).get("content") or []
            return [
                (u["toolUseId"], u["name"], _compact(u["input"]))
                for u in (b["toolUse"] for b in blocks if "toolUse" in b)
            ]
        if "output" in body:
            return [
                (i["call_id"], i["name"], i["arguments"])
                for i in body["output"]
                if i.get("type") == "function_call"
            ]
        return [
            (b["id"], b["name"], _compact(b["input"]))
            for b in body.get("content") or []
            if b.get("type") == "tool_use"
        ]
    joined: dict[int, list[str]] = {}
    for e in _events(raw):
        if e.get("type") == "response.completed":
            return call_texts(json.dumps(e["response"]))
        if e.get("type") == "content_block_start" and e["content_block"]["type"] == "tool_use":
            joined[e["index"]] = [e["content_block"]["id"], e["content_block"]["name"], ""]
        elif e.get("type") == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
            joined[e["index"]][2] += e["delta"]["partial_json"]
        # Bedrock's ConverseStream: each event keyed by its type.
        start = (e.get("contentBlockStart") or {}).get("start") or {}
        if "toolUse" in start:
            use = start["toolUse"]
            joined[e["contentBlockStart"]["contentBlockIndex"]] = [
                use["toolUseId"],
                use["name"],
                "",
            ]
        delta = e.get("contentBlockDelta") or {}
        if "toolUse" in (delta.get("delta") or {}):
            joined[delta["contentBlockIndex"]][2] += delta["delta"]["toolUse"]["input"]
        for choice in e.get("choices") or []:
            for tc in choice["delta"].get("tool_calls") or []:
                slot = joined.setdefault(tc["index"], ["", "", ""])
                fn = tc.get("function") or {}
                slot[0] = tc.get("id") or slot[0]
                slot[1] += fn.get("name") or ""
                slot[2] += fn.get("arguments") or ""
    return [(i, n, a) for i, n, a in (joined[k] for k in sorted(joined))]


def _compact(value: Any) -> str:
    """A JSON body's tool input as text: the object's, compact, in order."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def spelling_problems(case: Case) -> list[str]:
    """Where a served answer's tool calls differ from the server's on the wire (id, name,
    argument text) without the answer naming the call as re-spelled; empty when none."""
    problems: list[str] = []

    def compare(request: dict[str, Any], answer: httpx.Response) -> None:
        wire, served = call_texts(request["response_raw"]), call_texts(served_text(answer))
        said = {n.strip() for n in answer.headers.get("x-otel-replay-respelled", "").split(",")}
        for i, sent in enumerate(wire):
            got = served[i] if i < len(served) else None
            if got == sent:
                continue
            if got is not None and got[:2] == sent[:2] and {got[0], got[1]} & said:
                continue  # re-spelled, and the answer says so
            if got is not None and not sent[0] and got[1] == sent[1] and got[1] in said:
                # No id on the wire (an empty one), which the trace cannot keep: the answer
                # made one up, and says so (its arguments as on the wire, or said re-spelled).
                continue
            where = f"request {request['seq']} (turn {request['turn']}), call {i + 1}"
            problems.append(f"{where}: served {got!r}, the wire carried {sent!r}")
        if len(served) > len(wire):
            problems.append(f"request {request['seq']}: served calls {served[len(wire) :]!r} more")

    refused = serve_case(case, answered=compare)
    return [refused] if refused is not None else problems


def main(argv: list[str]) -> int:
    cases = [c for c in find_cases() if c.meta["content"]]
    if argv:
        cases = [c for c in cases if c.path.parent.name in argv]
    counts: Counter[str] = Counter()
    for case in cases:
        refused = serve_case(case)
        counts["served" if refused is None else "refused"] += 1
        print(f"{case.id}: {'served' if refused is None else refused}")
    print(f"{counts['served']} of {len(cases)} cases served to the end")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
