"""The debugging workflow over loaded runs: list, compare, find anomalies.

Pure functions over :class:`~otel_replay.runs.model.Run`; the CLI only
parses options and prints.
"""
