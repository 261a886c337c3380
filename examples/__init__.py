"""Runnable examples of otel-replay."""
