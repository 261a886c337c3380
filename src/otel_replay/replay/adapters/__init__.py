"""Thin adapters over the replay engine: httpx transports and the HTTP server."""
