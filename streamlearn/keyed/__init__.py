"""Keyed models: one model per message key (per tenant, per product), memory bounded.

``serve --model-key`` learns each key's messages into a model of its own
(:mod:`~streamlearn.keyed.models`); the keys of a poll whose models learn a plain stream
are learned in one kernel call (:mod:`~streamlearn.keyed.together_poll`,
:mod:`~streamlearn.keyed.together`). Kafka routes a key to one partition, so in a
consumer group each key's model lives on the member that owns its partition. The least
recently used models leave memory (:mod:`~streamlearn.keyed.registry`) for a compacted
state topic keyed by model key (:mod:`~streamlearn.keyed.store`; the Kafka side is
:mod:`streamlearn.sources.kafka_state`), as records of their state
(:mod:`~streamlearn.keyed.records`, read and written by
:mod:`~streamlearn.keyed.state_records`), and come back with their next message. The
HTTP API answers from copies of the models requests name
(:mod:`~streamlearn.keyed.copies`); :mod:`~streamlearn.keyed.reports` says what the
daemon reports of them all.
"""

from __future__ import annotations

from streamlearn.keyed.copies import KeyCopy, KeyedPredictor
from streamlearn.keyed.models import Applied, KeyedBatch, KeyedModels
from streamlearn.keyed.records import ModelRecord, decode_record, encode_record
from streamlearn.keyed.registry import Resident, ResidentModels, model_bytes
from streamlearn.keyed.store import MemoryStates, StateStore

__all__ = [
    "Applied",
    "KeyCopy",
    "KeyedBatch",
    "KeyedModels",
    "KeyedPredictor",
    "MemoryStates",
    "ModelRecord",
    "Resident",
    "ResidentModels",
    "StateStore",
    "decode_record",
    "encode_record",
    "model_bytes",
]
