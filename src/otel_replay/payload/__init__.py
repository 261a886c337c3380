"""Payload bytes: the codec of recorded values (:mod:`.codec`), their span attributes
(:mod:`.attributes`), blobs kept beside a trace (:mod:`.blobs`, :mod:`.store`) and
references to content stored elsewhere (:mod:`.references`).
"""
