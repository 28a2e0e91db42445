"""Example ids in msgpack and JSON messages: examples predicted now, labelled later.

An example to predict may carry ``"id"`` (a string, or an integer: compared as its
decimal text), under which the daemon keeps it until its label comes. A label for it is
an example with the id and ``label`` (or a bank's ``labels``) and no features:

    {"examples": [{"id": "a17", "label": 1}, {"id": 18, "labels": [2, 5]}]}

svmlight lines carry no id.

>>> examples_of({"examples": [{"id": "a", "label": 1}]})
[{'id': 'a', 'label': 1}]
>>> example_ids([{"id": 7, "indices": [1], "values": [1.0]}, {"indices": [], "values": []}])
['7', None]
>>> labels_by_id([{"id": "a", "label": -1}, {"id": 2, "labels": [3, 4]}])
([(1, 'a', [-1.0]), (2, '2', [3.0, 4.0])], [])
>>> labels_by_id([{"indices": [1], "values": [1.0], "label": 1}]) is None
True
"""

from __future__ import annotations

from streamlearn.parse.messages import BAD_MESSAGE, labels_of
from streamlearn.parse.svmlight import REASONS, TEXT_CHARS, Rejected

#: bytes that a body holding an ``"id"`` key holds (JSON's ``"id"``, msgpack's fixstr)
ID_MARKERS = (b'"id"', b"\xa2id")
#: the reason of an id that is neither a string nor an integer (or an empty string)
BAD_ID = "bad id"
#: keys of an example's features: a label by id has none
FEATURE_KEYS = ("indices", "values", "features")
#: the longest id, in characters
MAX_ID_CHARS = 256


def may_hold_ids(body: bytes) -> bool:
    """Whether ``body`` may hold an example with an id (a fast look for the key)."""
    return any(marker in body for marker in ID_MARKERS)


def examples_of(document: object) -> list[object]:
    """The examples of a decoded message, as :class:`~streamlearn.parse.messages.
    MessageDecoder` reads them: ``{"examples": [...]}``, a list, or one example."""
    if isinstance(document, dict) and "examples" in document:
        examples = document["examples"]
        return examples if isinstance(examples, list) else []
    if isinstance(document, list):
        return document
    return [document]


def id_of(example: object) -> str | None:
    """The id of an example as text (None: it has none); :class:`ValueError` for an id
    that is not a non-empty string or an integer of at most :data:`MAX_ID_CHARS`."""
    if not isinstance(example, dict) or "id" not in example:
        return None
    value = example["id"]
    if type(value) is int or (isinstance(value, str) and value):
        text = str(value)
        if len(text) <= MAX_ID_CHARS:
            return text
    raise ValueError(BAD_ID)


def example_ids(document: object) -> list[str | None]:
    """The id of each example of a message to predict (None where it has none);
    :class:`ValueError` for a bad id."""
    return [id_of(example) for example in examples_of(document)]


def labels_by_id(
    document: object,
) -> tuple[list[tuple[int, str, list[float]]], list[Rejected]] | None:
    """The labels a message gives by id: (line, id, labels) of each example, and the
    examples that break the form (a feature, no label, a bad id); None when no example
    of the message has an id (it gives examples to learn)."""
    examples = examples_of(document)
    if not any(isinstance(example, dict) and "id" in example for example in examples):
        return None
    joins: list[tuple[int, str, list[float]]] = []
    rejected: list[Rejected] = []
    for line, example in enumerate(examples, start=1):
        reason, found = _label_by_id(example)
        if found is None:
            rejected.append(Rejected(line, reason, repr(example)[:TEXT_CHARS]))
        else:
            joins.append((line, *found))
    return joins, rejected


def _label_by_id(example: object) -> tuple[str, tuple[str, list[float]] | None]:
    """An example's (id, labels), or the reason it is not a label by id."""
    if not isinstance(example, dict) or any(key in example for key in FEATURE_KEYS):
        return BAD_MESSAGE, None
    try:
        example_id = id_of(example)
    except ValueError:
        return BAD_ID, None
    labels = labels_of(example)
    if example_id is None or not labels:
        return (BAD_MESSAGE if example_id is None else REASONS[0]), None
    return "", (example_id, labels)
