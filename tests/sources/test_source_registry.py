"""The sources of ``serve --source`` by name: each made by its factory offers what its
entry says (a source that hands partitions over is one the daemon can listen to)."""

from __future__ import annotations

import pytest

from streamlearn.config import LearnerSpec
from streamlearn.errors import InvalidParameterError
from streamlearn.jobs.serve import ServeConfig
from streamlearn.jobs.sources import REBALANCES, SOURCES, source_kind
from streamlearn.sources.base import Rebalances

OPTIONS = {
    "stdin": {},
    "kafka": {"bootstrap_servers": "127.0.0.1:1", "topic": "examples"},
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_source_is_made_with_what_it_offers(name: str) -> None:
    assert sorted(OPTIONS) == sorted(SOURCES)
    config = ServeConfig(LearnerSpec("pdm", {"delta": 1.0}), source=name, **OPTIONS[name])  # type: ignore[arg-type]
    kind = source_kind(name)
    source = kind.make(config, None)  # a Kafka consumer connects at its first poll
    assert isinstance(source, Rebalances) == kind.offers(REBALANCES)


def test_an_unknown_source_names_the_others() -> None:
    with pytest.raises(InvalidParameterError, match="--source must be stdin or kafka"):
        source_kind("files")
