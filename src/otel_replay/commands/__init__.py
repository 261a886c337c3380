"""What the commands do, apart from parsing options and printing: list, check, compare,
regress, rerun, serve, and a cohort of runs replayed against candidates.

Functions over :class:`~otel_replay.runs.model.Run` and the sources runs come from;
the CLI only parses options and prints.
"""
