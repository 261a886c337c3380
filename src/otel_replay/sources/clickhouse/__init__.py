"""Spans and logs read from the OpenTelemetry Collector's ClickHouse tables."""
