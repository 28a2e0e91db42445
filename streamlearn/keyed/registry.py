"""The keyed models held in memory, least recently used first, within two bounds.

:class:`ResidentModels` holds one :class:`Resident` per key: its model, how far in the
stream the model has come, and whether it changed since it was last written to the
state topic. It bounds the number of models and their bytes (:func:`model_bytes`), and
says which models to spill to stay within both (:meth:`ResidentModels.victims`): the
least recently used first, never the model in use. It does no I/O: the caller writes
the victims away.

>>> from streamlearn.learn import PDM
>>> resident = ResidentModels(max_models=2, max_bytes=1 << 30)
>>> for key in (b"a", b"b", b"c"):
...     resident.add(key, Resident(PDM(delta=1.0), partition=0))
>>> resident.get(b"a") is not None      # a is used: b is now the least recent
True
>>> resident.victims(keep=b"a")
[b'b']
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from streamlearn.errors import InvalidParameterError
from streamlearn.learn import Model


def model_bytes(model: Model) -> int:
    """Bytes a model holds in memory (:meth:`Model.allocated_bytes`): its weights and its
    replay buffer as allocated, not only what is filled.

    >>> import numpy as np
    >>> from streamlearn.learn import PDM, ModelBank
    >>> small, large = PDM(delta=1.0), PDM(delta=1.0).learn(np.eye(5000)[-3:], [1, -1, 1])
    >>> model_bytes(large) - model_bytes(small) >= 8 * (5000 - 16)
    True
    >>> bank = ModelBank(PDM(delta=1.0)).learn(np.eye(3), [[1], [2], [3]])
    >>> model_bytes(bank) < 3 * model_bytes(PDM(delta=1.0).learn(np.eye(3), [1, -1, -1]))
    True
    """
    return model.allocated_bytes()


@dataclass(eq=False)
class Resident:
    """One key's model in memory."""

    model: Model
    #: the partition the key's messages come from (its record goes to the same one)
    partition: int
    #: per partition, the offset after the last message of the key the model has taken
    positions: dict[int, int] = field(default_factory=dict)
    #: stream examples the model has learned (its replay schedule's count)
    examples: int = 0
    #: changed since its record was last written
    dirty: bool = False
    #: :func:`model_bytes`, as last measured
    size: int = 0
    #: a number that changes whenever the model does (copies for answers compare it)
    version: int = 0
    #: when the model last learned, or came into memory (seconds since the epoch)
    active_at: float = 0.0

    def skips(self, partition: int, offset: int) -> bool:
        """Whether the message at ``offset`` of ``partition`` is in the model already."""
        return offset < self.positions.get(partition, 0)


class ResidentModels:
    """Models in memory by key, least recently used first (see the module doc)."""

    def __init__(self, max_models: int, max_bytes: int) -> None:
        if isinstance(max_models, bool) or not isinstance(max_models, int) or max_models < 1:
            raise InvalidParameterError(f"--max-models must be an integer >= 1, got {max_models!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise InvalidParameterError(
                f"--max-model-bytes must be an integer >= 1, got {max_bytes!r}"
            )
        self.max_models = max_models
        self.max_bytes = max_bytes
        self._models: OrderedDict[bytes, Resident] = OrderedDict()
        #: the sum of the residents' sizes
        self.bytes = 0
        #: the last version given (:meth:`stamp`)
        self.tick = 0

    def __len__(self) -> int:
        return len(self._models)

    def __contains__(self, key: bytes) -> bool:
        return key in self._models

    def __iter__(self) -> Iterator[bytes]:
        """The keys, least recently used first."""
        return iter(list(self._models))

    def items(self) -> list[tuple[bytes, Resident]]:
        """Keys and models, least recently used first."""
        return list(self._models.items())

    def get(self, key: bytes) -> Resident | None:
        """The model of ``key``, now the most recently used (None: not in memory)."""
        found = self._models.get(key)
        if found is not None:
            self._models.move_to_end(key)
        return found

    def lru_access(
        self,
    ) -> tuple[Callable[[bytes], Resident | None], Callable[[bytes], None]]:
        """:meth:`peek`, and what makes a key the most recently used, as two plain
        functions (for a loop over many keys: :meth:`get` is the two in turn)."""
        return self._models.get, self._models.move_to_end

    def peek(self, key: bytes) -> Resident | None:
        """The model of ``key``, its place in the order left as it is."""
        return self._models.get(key)

    def add(self, key: bytes, resident: Resident) -> None:
        """Hold ``resident`` as the most recently used, measured now."""
        self.pop(key)
        resident.size = model_bytes(resident.model)
        self._models[key] = resident
        self.bytes += resident.size

    def measure(self, key: bytes) -> None:
        """Measure the model of ``key`` again (it learned: its arrays may have grown)."""
        resident = self._models[key]
        size = model_bytes(resident.model)
        self.bytes += size - resident.size
        resident.size = size

    def stamp(self, resident: Resident, now: float, *, changed: bool = True) -> None:
        """``resident`` changed (or, with ``changed`` false, came into memory) at ``now``:
        a new version, and with ``changed`` a record to write."""
        self.tick += 1
        resident.version = self.tick
        resident.active_at = now
        if changed:
            resident.dirty = True

    def pop(self, key: bytes) -> Resident | None:
        """Forget the model of ``key`` (returned; None when it was not held)."""
        resident = self._models.pop(key, None)
        if resident is not None:
            self.bytes -= resident.size
        return resident

    def over_bounds(self) -> bool:
        """Whether the models exceed a bound: :meth:`victims` has keys to spill."""
        return len(self._models) > self.max_models or self.bytes > self.max_bytes

    def victims(self, keep: bytes | None = None, room: int = 0) -> list[bytes]:
        """The keys to spill, least recently used first, for the models to fit both
        bounds with ``room`` more models; never ``keep`` (a model larger than the byte
        bound stays alone)."""
        count, held = len(self._models), self.bytes
        chosen = []
        for key, resident in self._models.items():
            if count + room <= self.max_models and held <= self.max_bytes:
                break
            if key == keep:
                continue
            chosen.append(key)
            count -= 1
            held -= resident.size
        return chosen
