"""Test helper: a run whose tool returns bytes (kept in an ``otel_replay.bytes.*`` attribute)."""

from __future__ import annotations

import otel_replay


def billing_run(invoice: bytes) -> None:
    """The billing agent asks for an invoice; its ``fetch_invoice`` tool returns ``invoice``."""

    @otel_replay.tool
    def fetch_invoice(order: str) -> bytes:
        return invoice

    with otel_replay.agent_run("billing", input="invoice?") as run:
        with otel_replay.model_call(
            provider="openai", model="gpt-4o", messages=[{"role": "user", "content": "invoice?"}]
        ) as call:
            call.record(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "fetch_invoice", "arguments": "{}"}}
                    ],
                }
            )
        with otel_replay.tool_call_id("c1"):
            fetch_invoice("4421")
        run.record("Here it is.")
