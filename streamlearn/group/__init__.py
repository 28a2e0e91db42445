"""Learning groups: daemons of one Kafka consumer group that learn one model.

Each member learns its partitions into its own window and publishes its share of the
model on a compacted sync topic (:mod:`~streamlearn.group.records`); every member folds
the latest shares into the common model (:mod:`~streamlearn.group.table`), and publishes
its own when its model has drifted from the last published one
(:mod:`~streamlearn.group.policy`). The Kafka side is
:mod:`streamlearn.sources.kafka_sync`; the daemon wires them
(:mod:`~streamlearn.group.member`).
"""
