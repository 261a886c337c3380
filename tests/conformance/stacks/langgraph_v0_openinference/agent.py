"""LangGraph's previous major (0.x): the agent and tracing of ``langgraph_openinference``, in this stack's venv.

The shared LangGraph agent builds LangGraph 0.x's prebuilt ``create_react_agent``
where LangChain 1's ``create_agent`` is not installed.
"""

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(
        str(Path(__file__).parents[1] / "langgraph_openinference" / "agent.py"), run_name="__main__"
    )
