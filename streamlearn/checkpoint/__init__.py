"""Checkpoints: the msgpack format (:mod:`.codec`, pure) and the files (:mod:`.store`, I/O)."""

from __future__ import annotations

from streamlearn.checkpoint.codec import FORMAT, VERSION, Checkpoint, decode, encode
from streamlearn.checkpoint.store import CheckpointStore, read_checkpoint, write_checkpoint

__all__ = [
    "FORMAT",
    "VERSION",
    "Checkpoint",
    "CheckpointStore",
    "decode",
    "encode",
    "read_checkpoint",
    "write_checkpoint",
]
