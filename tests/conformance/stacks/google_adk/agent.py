"""Google ADK (2.x) with its built-in OpenTelemetry tracing: the agent of ``google_adk_agent``."""

from google_adk_agent import main

if __name__ == "__main__":
    main(__doc__)
