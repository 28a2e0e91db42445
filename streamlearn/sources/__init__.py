"""Where examples come from: files and standard input (Kafka comes later)."""

from __future__ import annotations

from streamlearn.sources.files import InputStream

__all__ = ["InputStream"]
