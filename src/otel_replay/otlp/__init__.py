"""The file format, both halves: OTLP records in protobuf and JSON, framed in files.

Reading (:mod:`.proto_reader`, :mod:`.json_reader`, :mod:`.framing`,
:mod:`.bounded`, :mod:`.envelopes` for a backend's answer) gives
:mod:`.records`; writing (:mod:`.proto_writer`, :mod:`.json_writer`) groups
spans the same way for both encodings.  The trace-id :mod:`.index` beside a
dump and the names of rotated files (:mod:`.rotation`) belong to the format
too; :mod:`.errors` says what a reader met.
"""
