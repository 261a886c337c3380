"""A Strands Agents agent whose tools return every shape of result, traced by Strands itself.

Run with the Python of a Strands install: ``python strands_agent.py --base-url URL [--image]``
(``OTEL_EXPORTER_OTLP_ENDPOINT`` names the receiver; ``OTEL_SEMCONV_STABILITY_OPT_IN``
picks the conventions).  Each tool returns one shape a tool's result takes in
Strands: a string, a JSON object, a list, numbers, None, a boolean, an empty
string, Strands' own tool result (several text blocks, a ``json`` block, text
beside JSON, an ``error`` status, an image), and one tool raises.
"""

from __future__ import annotations

import sys
from typing import Any

from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.telemetry import StrandsTelemetry

telemetry = StrandsTelemetry().setup_otlp_exporter()
#: A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def _result(*blocks: dict[str, Any], status: str = "success") -> dict[str, Any]:
    return {"status": status, "content": list(blocks)}


SHAPES: dict[str, Any] = {
    "text": "Colis parti de Lyon — 3 × 2 €",
    "object": {"status": "shipped", "ville": "Zürich", "items": [1, 2], "note": None},
    "list": [1, "deux", {"drei": 3.5}, None, True],
    "integer": 42,
    "float": 2.5,
    "none": None,
    "boolean": False,
    "empty_text": "",
    "text_blocks": _result({"text": "first line"}, {"text": "second line é"}),
    "json_block": _result({"json": {"b": 1, "a": ["x", "ü"]}}),
    "text_and_json": _result({"text": "before"}, {"json": {"k": 1}}, {"text": "after"}),
    "error_status": _result({"text": "quota exceeded ✗"}, status="error"),
}


def _make(name: str, value: Any) -> Any:
    def run() -> Any:
        return value

    run.__name__ = f"get_{name}"
    return tool(name=f"get_{name}", description=f"Returns a {name.replace('_', ' ')}.")(run)


@tool(name="get_raising", description="Always raises.")
def get_raising() -> str:
    raise RuntimeError("carrier unreachable: délai dépassé")


@tool(name="get_image", description="Returns an image.")
def get_image() -> dict[str, Any]:
    return _result({"text": "a pixel"}, {"image": {"format": "png", "source": {"bytes": PNG}}})


def main() -> None:
    args = sys.argv[1:]
    base_url = args[args.index("--base-url") + 1]
    tools = [_make(n, v) for n, v in SHAPES.items()] + [get_raising]
    if "--image" in args:
        tools = [get_image]
    model = OpenAIModel(
        client_args={"api_key": "sk-shapes-dummy", "base_url": base_url},
        model_id="gpt-4o-mini",
        params={"temperature": 0},
    )
    agent = Agent(model=model, tools=tools, system_prompt="Call the tools.", callback_handler=None)
    print(str(agent("Call every tool.")).strip())
    telemetry.tracer_provider.shutdown()


if __name__ == "__main__":
    main()
