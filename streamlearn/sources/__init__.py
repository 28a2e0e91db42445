"""Where examples come from and where answers go: files, standard input and Kafka.

:mod:`.files` reads the inputs of the command line. The daemon reads messages from a
:class:`~.base.Source` (:mod:`.stdin`, :mod:`.kafka`) and sends predictions and dead
letters to a :class:`~.base.Sink` (:mod:`.stdout`, :mod:`.kafka_sink`). Only the
``kafka*`` modules import kafka-python, and only a Kafka source or sink imports them.
"""

from __future__ import annotations

from streamlearn.sources.files import InputStream

__all__ = ["InputStream"]
