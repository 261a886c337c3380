"""Whether message and tool content is captured.

Content is captured by default (it is what a replay needs).  The official
GenAI instrumentations' switch turns it off:
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=NO_CONTENT`` (or ``false``).
Spans of such runs carry ``otel_replay.content = "NO_CONTENT"`` and load as
"inspect only".
"""

from __future__ import annotations

from .. import settings

ENV = settings.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT


def capture_content() -> bool:
    # Read on each call: cheap, and a test or app may flip it at run time.
    return settings.current().capture_message_content
