"""Content-addressed blob store beside a trace file, for payloads too large to inline.

``run.otlp`` keeps its blobs in ``run.otlp.blobs/<sha256 hex>``; a span refers to
one as ``"sha256:<hex>"``.  Blobs are written before the span that names them
and are immutable, so a crash can leave an unreferenced blob but never a
reference without its blob.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def blob_dir(trace_path: str | os.PathLike[str]) -> Path:
    return Path(os.fspath(trace_path) + ".blobs")


class BlobStore:
    def __init__(self, trace_path: str | os.PathLike[str]) -> None:
        self.root = blob_dir(trace_path)

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.root / digest
        if not target.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{digest}.{os.getpid()}.tmp")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, target)  # atomic: a reader never sees half a blob
        return "sha256:" + digest

    def get(self, ref: str) -> bytes | None:
        algo, _, digest = ref.partition(":")
        if (
            algo != "sha256"
            or len(digest) != 64
            or not all(c in "0123456789abcdef" for c in digest)
        ):
            return None
        try:
            return (self.root / digest).read_bytes()
        except OSError:
            return None
