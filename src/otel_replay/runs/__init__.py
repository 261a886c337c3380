"""Runs: the data model of a recorded agent run (:mod:`.model`), built from records
(:mod:`.build`, :mod:`.load`, :mod:`.stream`), with the replay-kit check (:mod:`.kit`),
the verdict, summaries, anomalies and diffs of runs.
"""
