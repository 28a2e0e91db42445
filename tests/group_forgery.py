"""Learning-group records forged from real ones, for the tests of what a group refuses."""

from __future__ import annotations

from typing import Any

import msgpack


def forged(value: bytes, **changes: Any) -> bytes:
    """A record written by a member with some fields changed (``share_*``: the share's)."""
    data = msgpack.unpackb(value, raw=False, strict_map_key=False)
    for name, changed in changes.items():
        if name.startswith("share_"):
            data["share"][name.removeprefix("share_")] = changed
        else:
            data[name] = changed
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    return packed
