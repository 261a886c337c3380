"""Google ADK 1.x, the previous major, with its built-in tracing: the agent of ``google_adk_agent``.

ADK 1.x writes its own ``call_llm`` / ``execute_tool`` spans (content in
``gcp.vertex.agent.*`` JSON attributes), the format ADK 2.x keeps behind
``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``.
"""

from google_adk_agent import main

if __name__ == "__main__":
    main(__doc__)
