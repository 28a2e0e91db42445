"""Parsers: raw bytes of a stream in, rows as arrays and rejected lines out."""

from __future__ import annotations

from streamlearn.parse.svmlight import (
    REASONS,
    ParsedRows,
    Rejected,
    SvmlightParser,
    binary_batch,
)

__all__ = ["REASONS", "ParsedRows", "Rejected", "SvmlightParser", "binary_batch"]
