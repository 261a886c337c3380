"""Where records come from: files and rotated sets, URLs, Tempo, Jaeger, Phoenix and
ClickHouse, read through :mod:`.reader` into the records of :mod:`otel_replay.otlp`.
"""
