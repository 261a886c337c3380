"""The pydantic-ai agent (``_shared/pydantic_ai_agent.py``), traced by pydantic-ai's own instrumentation."""

from pydantic_ai_agent import main

if __name__ == "__main__":
    main()
