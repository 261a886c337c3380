"""Zero-code recording: an already-traced agent, made replayable by environment variables."""
