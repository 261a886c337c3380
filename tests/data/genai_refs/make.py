"""Record a small GenAI agent trace whose message content was uploaded by
opentelemetry-util-genai's ``upload`` completion hook to a local fsspec store.

Run it in a virtualenv that has (versions used for the files beside this script)::

    pip install 'opentelemetry-util-genai[upload]==1.3b0' \
        opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2
    python make.py OUTDIR

(``--format jsonl`` and ``--capture SPAN_ONLY`` etc. make the variants the
README describes; the files here were made with the defaults.) It writes:

``OUTDIR/trace.otlp``
    one ``ExportTraceServiceRequest`` framed as the Collector ``fileexporter``
    writes ``format: proto``: a 4-byte big-endian length, then the bytes.
``OUTDIR/trace.otlp.jsonl``
    the same request as one line of OTLP/JSON (hex ids, enums as numbers).
``OUTDIR/uploads/``
    the files that the upload hook wrote.

Nothing in the trace is typed by hand: the spans come from the package's own
``TelemetryHandler`` (``invoke_local_agent``, ``inference``, ``tool``) and the
``*_ref`` attributes and uploaded files from its ``upload`` hook, loaded with
``load_completion_hook()`` from the ``opentelemetry_genai_completion_hook``
entry point group exactly as the openai-v2, google-genai and vertexai
instrumentations load it. Only the conversation (messages, token counts, ids of
the fake model's responses) is scripted: no model is called.

The hook stamps every ref as an absolute fsspec URL (``file:///...``). So that
the stored refs name no machine-specific folder, the hook uploads to the fixed
staging folder ``STAGE/uploads`` (``--stage``, default ``/tmp/genai_refs``),
which is then copied to ``OUTDIR/uploads`` and removed. A ref
``file:///tmp/genai_refs/uploads/NAME`` therefore names ``OUTDIR/uploads/NAME``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import struct
import sys
from pathlib import Path

DEFAULT_STAGE = "/tmp/genai_refs"


def _configure_env(stage_uploads: Path, upload_format: str, capture: str) -> None:
    # Read by load_completion_hook() / upload_completion_hook() and by
    # TelemetryHandler() (content capturing mode), so set before either runs.
    os.environ["OTEL_INSTRUMENTATION_GENAI_COMPLETION_HOOK"] = "upload"
    os.environ["OTEL_INSTRUMENTATION_GENAI_UPLOAD_BASE_PATH"] = (
        stage_uploads.as_uri()
    )
    os.environ["OTEL_INSTRUMENTATION_GENAI_UPLOAD_FORMAT"] = upload_format
    # NO_CONTENT (the default here and in the package): content only through
    # the refs, nothing inline on the spans, no events. The hook is called
    # whatever the mode; SPAN_ONLY / SPAN_AND_EVENT also put it inline.
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = capture
    os.environ.pop("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", None)
    os.environ.pop("OTEL_RESOURCE_ATTRIBUTES", None)
    os.environ.pop("OTEL_SERVICE_NAME", None)


def _record(hook):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import (
        FunctionToolDefinition,
        InputMessage,
        OutputMessage,
        TextPart,
        ToolCallRequestPart,
        ToolCallResponsePart,
    )

    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "genai-refs-agent"})
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    handler = TelemetryHandler(
        tracer_provider=provider,
        completion_hook=hook,
        instrumentation_scope_name="genai_refs.make",
        instrumentation_scope_version="1",
    )

    model = "gpt-4o-mini"
    server = {"server_address": "api.openai.com", "server_port": 443}
    system = [
        TextPart(
            content="You are a weather assistant. Call get_weather to "
            "look up the weather before you answer."
        )
    ]
    tools = [
        FunctionToolDefinition(
            name="get_weather",
            description="Current weather for a city.",
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        )
    ]
    question = InputMessage(
        role="user",
        parts=[TextPart(content="What is the weather in Paris?")],
    )
    call = ToolCallRequestPart(
        arguments={"city": "Paris"}, name="get_weather", id="call_w1"
    )
    weather = {"city": "Paris", "temperature_c": 18, "sky": "sunny"}
    answer = OutputMessage(
        role="assistant",
        parts=[TextPart(content="It is 18 °C and sunny in Paris.")],
        finish_reason="stop",
    )

    with handler.invoke_local_agent(
        agent_name="weather_agent",
        request_model=model,
        conversation_id="conv_genai_refs_1",
    ) as agent:
        agent.system_instruction = system
        agent.tool_definitions = tools
        agent.input_messages = [question]

        # Call 1: the model answers with a tool call.
        with handler.inference("openai", request_model=model, **server) as llm:
            llm.system_instruction = system
            llm.tool_definitions = tools
            llm.input_messages = [question]
            llm.temperature = 0.0
            llm.output_messages = [
                OutputMessage(
                    role="assistant", parts=[call], finish_reason="tool_calls"
                )
            ]
            llm.response_model_name = "gpt-4o-mini-2024-07-18"
            llm.response_id = "chatcmpl-genairefs0001"
            llm.finish_reasons = ["tool_calls"]
            llm.input_tokens = 61
            llm.output_tokens = 15

        with handler.tool("get_weather", tool_type="function") as tool:
            tool.tool_call_id = call.id
            tool.tool_description = "Current weather for a city."
            # The package decides whether these go on the span (not with
            # NO_CONTENT); the upload hook is not called for tool spans.
            tool.arguments = call.arguments
            tool.tool_result = weather

        # Call 2: the model answers with text.
        with handler.inference("openai", request_model=model, **server) as llm:
            llm.system_instruction = system
            llm.tool_definitions = tools
            llm.input_messages = [
                question,
                InputMessage(role="assistant", parts=[call]),
                InputMessage(
                    role="tool",
                    parts=[ToolCallResponsePart(response=weather, id=call.id)],
                ),
            ]
            llm.temperature = 0.0
            llm.output_messages = [answer]
            llm.response_model_name = "gpt-4o-mini-2024-07-18"
            llm.response_id = "chatcmpl-genairefs0002"
            llm.finish_reasons = ["stop"]
            llm.input_tokens = 98
            llm.output_tokens = 12

        agent.output_messages = [answer]

    provider.force_flush()
    spans = exporter.get_finished_spans()
    provider.shutdown()
    return spans


def _hex_ids(request_dict: dict) -> None:
    """OTLP/JSON writes trace and span ids as hex, not proto3 JSON's base64."""

    def fix(obj: dict) -> None:
        for key in ("traceId", "spanId", "parentSpanId"):
            if obj.get(key):
                obj[key] = base64.b64decode(obj[key]).hex()

    for rs in request_dict.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                fix(span)
                for link in span.get("links", []):
                    fix(link)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--stage", type=Path, default=Path(DEFAULT_STAGE))
    parser.add_argument("--format", choices=("json", "jsonl"), default="json")
    parser.add_argument(
        "--capture",
        choices=("NO_CONTENT", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT"),
        default="NO_CONTENT",
        help="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (events, if "
        "any, are not written: only spans are exported)",
    )
    args = parser.parse_args(argv)

    outdir: Path = args.outdir.resolve()
    stage: Path = args.stage.resolve()
    if stage == outdir or stage in outdir.parents or outdir in stage.parents:
        parser.error("--stage and OUTDIR must not contain each other")
    stage_uploads = stage / "uploads"
    if stage_uploads.exists():
        shutil.rmtree(stage_uploads)
    stage_uploads.mkdir(parents=True)

    _configure_env(stage_uploads, args.format, args.capture)

    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
        encode_spans,
    )
    from opentelemetry.util.genai.completion_hook import load_completion_hook

    # As the instrumentations do: the hook named by
    # OTEL_INSTRUMENTATION_GENAI_COMPLETION_HOOK, from the entry point group.
    hook = load_completion_hook()
    uploader = getattr(hook, "_wrapped", hook)  # the UploadCompletionHook
    if not hasattr(uploader, "shutdown"):
        sys.exit(f"the upload hook did not load: {hook!r}")

    spans = _record(hook)
    uploader.shutdown()  # waits for the queued uploads to be written

    request = encode_spans(spans)
    body = request.SerializeToString()
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "trace.otlp").write_bytes(struct.pack(">I", len(body)) + body)

    as_dict = MessageToDict(request, use_integers_for_enums=True)
    _hex_ids(as_dict)
    (outdir / "trace.otlp.jsonl").write_text(
        json.dumps(as_dict, separators=(",", ":"), ensure_ascii=False) + "\n",
        encoding="utf-8",
    )

    out_uploads = outdir / "uploads"
    if out_uploads.exists():
        shutil.rmtree(out_uploads)
    shutil.copytree(stage_uploads, out_uploads)
    shutil.rmtree(stage_uploads)
    try:
        stage.rmdir()
    except OSError:
        pass

    for path in sorted(out_uploads.iterdir()):
        print(path.relative_to(outdir))
    print(f"{len(spans)} spans -> {outdir / 'trace.otlp'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
