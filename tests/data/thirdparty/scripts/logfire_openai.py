#!/usr/bin/env python3
"""openai_loop.py's hand-written agent loop on the openai SDK, traced by Logfire's OpenAI integration.

logfire.configure(send_to_logfire=False, ...) + logfire.instrument_openai(); the spans (and log records,
if any) go through corpus_otel's OTLP file writers, added as Logfire's additional processors.
No spans are created by this script itself.

  --mode    sync | stream | async | async_stream
  --api     chat | responses
  --version logfire semconv version for instrument_openai: 1 | 2 | latest | 1,2 (default: Logfire's, 2)
"""
import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_otel import FileLogExporter, FileSpanExporter  # noqa: E402
from openai_loop import _NoSpans, chat_async, chat_sync, responses_async, responses_sync  # noqa: E402


def _version(v):
    out = [int(x) if x.isdigit() else x for x in v.split(",")]
    return out[0] if len(out) == 1 else out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="sync", choices=["sync", "stream", "async", "async_stream"])
    ap.add_argument("--api", default="chat", choices=["chat", "responses"])
    ap.add_argument("--version", default=None)
    ap.add_argument("--out", required=True)
    ap.add_argument("--base-url", default="http://127.0.0.1:18080/v1")
    ap.add_argument("--service-name", default="order-agent")
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    for stem in ("traces", "logs"):
        for ext in ("otlp.jsonl", "otlp.ldpb", "otlp.pb"):
            p = os.path.join(a.out, f"{stem}.{ext}")
            if os.path.exists(p):
                os.remove(p)

    import logfire
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    logfire.configure(
        send_to_logfire=False,
        service_name=a.service_name,
        console=False,
        metrics=False,
        inspect_arguments=False,
        additional_span_processors=[BatchSpanProcessor(FileSpanExporter(a.out))],
        advanced=logfire.AdvancedOptions(log_record_processors=[BatchLogRecordProcessor(FileLogExporter(a.out))]),
    )
    kw = {} if a.version is None else {"version": _version(a.version)}
    logfire.instrument_openai(**kw)

    import openai
    spans = _NoSpans()
    stream = a.mode in ("stream", "async_stream")
    if a.mode in ("sync", "stream"):
        client = openai.OpenAI(base_url=a.base_url, api_key="sk-fake-corpus", max_retries=0)
        (chat_sync if a.api == "chat" else responses_sync)(client, stream, spans)
    else:
        client = openai.AsyncOpenAI(base_url=a.base_url, api_key="sk-fake-corpus", max_retries=0)
        asyncio.run((chat_async if a.api == "chat" else responses_async)(client, stream, spans))
    logfire.force_flush()
    logfire.shutdown()


if __name__ == "__main__":
    main()
