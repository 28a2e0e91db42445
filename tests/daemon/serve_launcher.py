"""``python serve_launcher.py ARGS`` runs ``streamlearn ARGS`` (as ``python -m streamlearn``
does) with the Kafka consumer's group timeouts set for the test broker.

Tansu holds a new member's JoinGroup for half its session timeout: 5 s with the default
10 s, 2 s (its floor) with 4 s. A daemon that starts (or restarts after kill -9) would
otherwise spend 5 s of every start waiting for its partitions. ``STREAMLEARN_TEST_CONSUMER``
(JSON) sets more of ``KafkaSource``'s keyword defaults, e.g. a short ``request_timeout_ms``
so that a paused broker is noticed within seconds. The daemon, its consumer and the broker
are the real ones; only these defaults differ.
"""

from __future__ import annotations

import json
import os

from streamlearn.cli import main
from streamlearn.sources.kafka import KafkaSource

#: each test daemon is the only member of its own group
TEST_CONSUMER = {"session_timeout_ms": 4000, "heartbeat_interval_ms": 1000}


def set_consumer_defaults(options: dict[str, int]) -> None:
    defaults = KafkaSource.__init__.__kwdefaults__
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise SystemExit(f"KafkaSource has no keyword options {unknown}")
    defaults.update(options)


if __name__ == "__main__":
    set_consumer_defaults(
        {**TEST_CONSUMER, **json.loads(os.environ.get("STREAMLEARN_TEST_CONSUMER", "{}"))}
    )
    main()
