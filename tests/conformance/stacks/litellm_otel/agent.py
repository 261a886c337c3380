"""A LiteLLM tool loop traced by LiteLLM's own OpenTelemetry integration (``callbacks=["otel"]``).

Set up as LiteLLM documents it: ``litellm.callbacks = ["otel"]``, the
exporter chosen by ``OTEL_EXPORTER_OTLP_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``
(LiteLLM makes its own TracerProvider with the SDK's OTLP/HTTP exporter in a
BatchSpanProcessor), shut down (flushed) at exit.
"""

import litellm
from litellm_agent import main
from opentelemetry import trace

litellm.callbacks = ["otel"]


def flush() -> None:
    # The provider LiteLLM made (and set as the global one) on its first call.
    trace.get_tracer_provider().shutdown()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(flush=flush)
