"""A keyed model as one record of the state topic: its key, its state, and how far in
the stream it has come.

The record is a checkpoint (:mod:`streamlearn.checkpoint.codec`: msgpack, arrays as
little-endian bytes, a CRC32) whose payload is ``{"kind": "streamlearn.keyed-model",
"key": bytes, "model": Model.state_dict(), "positions": {partition: offset},
"examples": int}``. ``positions`` says, per partition, the offset after the last message
of the key the model has taken: a message of the key below it is in the model already,
and is not learned again when it is read a second time (after a restart or a
rebalance). ``examples`` counts the stream examples the model learned, which its
count-based replay schedule follows.

>>> import numpy as np
>>> from streamlearn.learn import PDM
>>> model = PDM(delta=1.0).learn(np.eye(2), [1, -1])
>>> record = ModelRecord(b"tenant-7", model.state_dict(), {3: 120}, 2)
>>> back = decode_record(encode_record(record, created=0.0), b"tenant-7")
>>> back.key, back.positions, back.examples
(b'tenant-7', {3: 120}, 2)
>>> PDM.from_state(back.state).coef_.tolist() == model.coef_.tolist()
True
>>> decode_record(encode_record(record, created=0.0), b"tenant-8")  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
streamlearn.errors.StateError: the state record read for key b'tenant-8' is key b'tenant-7'...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamlearn.checkpoint.codec import decode, encode
from streamlearn.errors import CheckpointError, StateError

#: the ``kind`` of a keyed model's record
KEYED_KIND = "streamlearn.keyed-model"


@dataclass(frozen=True)
class ModelRecord:
    """One key's model as the state topic holds it (see the module doc)."""

    key: bytes
    #: ``Model.state_dict()``
    state: dict[str, Any]
    #: per partition, the offset after the last message of the key the model has taken
    positions: dict[int, int]
    #: stream examples the model has learned
    examples: int


def encode_record(record: ModelRecord, *, created: float, writer: str | None = None) -> bytes:
    """The bytes of ``record``, stamped with ``created`` (Unix seconds) and ``writer``."""
    payload = {
        "kind": KEYED_KIND,
        "key": record.key,
        "model": record.state,
        "positions": {str(p): int(o) for p, o in record.positions.items()},
        "examples": int(record.examples),
    }
    return encode(payload, created=created, writer=writer)


def decode_record(data: bytes, key: bytes) -> ModelRecord:
    """The record in ``data``, which the state topic holds for ``key``;
    :class:`StateError` says why when it is not a keyed model's record of that key."""
    try:
        payload = decode(data).payload
    except CheckpointError as exc:
        raise StateError(f"the state record of key {key!r} cannot be read: {exc}") from exc
    if payload.get("kind") != KEYED_KIND:
        raise StateError(
            f"the state record of key {key!r} is not a keyed model (kind {payload.get('kind')!r})"
        )
    if payload.get("key") != key:
        raise StateError(
            f"the state record read for key {key!r} is key {payload.get('key')!r}: is the "
            "state topic shared with another daemon?"
        )
    try:
        state = payload["model"]
        positions = {int(p): int(o) for p, o in payload["positions"].items()}
        examples = int(payload["examples"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StateError(f"the state record of key {key!r} is malformed ({exc})") from exc
    if not isinstance(state, dict):
        raise StateError(f"the state record of key {key!r} holds no model state")
    return ModelRecord(key, state, positions, examples)
