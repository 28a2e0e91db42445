"""What every river adapter does with its state: ``from_state``, river's ``clone`` with
attributes, and pickling.

An adapter's state (``state_dict()``) holds its model's own state under
``model_key``; the adapter names its state (``state_format``, ``state_version``,
``state_what``) and says how its model comes back from a state
(:meth:`StateRoundTrips.model_from_state`), which parameters the model gives the adapter
(:meth:`StateRoundTrips.params_of`) and what it does with a restored model
(:meth:`StateRoundTrips.restore`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self

from streamlearn.errors import InvalidParameterError, StateError, check_state_header
from streamlearn.learn.params import STATE_BUILT_WITH

#: parameters a learned state is built with, which ``clone(new_params,
#: include_attributes=True)`` cannot change: how names become indices, which label is
#: positive, and the learner's own (:data:`~streamlearn.learn.params.STATE_BUILT_WITH`)
FIXED_BY_STATE = ("n_features", "pos_label", *STATE_BUILT_WITH)


class StateRoundTrips:
    """State round trips for an adapter (see the module doc)."""

    state_format: ClassVar[str]
    state_version: ClassVar[int]
    state_what: ClassVar[str]
    model_key: ClassVar[str]

    if TYPE_CHECKING:  # given by the adapter, and by river's Estimator

        def state_dict(self) -> dict[str, Any]: ...
        def _get_params(self) -> dict[str, Any]: ...

    @classmethod
    def model_from_state(cls, model_state: dict[str, Any]) -> Any:
        """The adapter's model, rebuilt from its own state."""
        raise NotImplementedError

    @staticmethod
    def params_of(model: Any) -> dict[str, Any]:
        """The adapter parameters a model holds (its learner's)."""
        raise NotImplementedError

    def model_plain_params(self) -> dict[str, Any]:
        """The model's parameters as its state writes them."""
        raise NotImplementedError

    def restore(self, model: Any, state: dict[str, Any]) -> None:
        """Continue with ``model`` and the adapter's part of ``state``."""
        raise NotImplementedError

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """An adapter that continues exactly where the one that made ``state`` stopped."""
        check_state_header(state, cls.state_format, cls.state_version, cls.state_what)
        if state.get("adapter") != cls.__name__:
            raise StateError(f"state is for {state.get('adapter')!r}, not {cls.__name__!r}")
        try:
            model = cls.model_from_state(state[cls.model_key])
            adapter = cls(**cls.params_of(model), **state["options"])
            adapter.restore(model, state)
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"incomplete {cls.state_what} state: {exc}") from exc
        return adapter

    def clone(
        self, new_params: dict[str, Any] | None = None, include_attributes: bool = False
    ) -> Self:
        """river's clone: a fresh model with the same parameters (updated by
        ``new_params``); with ``include_attributes``, one that continues from this model's
        state (through :meth:`state_dict`: the arrays it shares with its model would not
        survive river's attribute-by-attribute copy). The learned state follows a new value
        of any parameter but those of :data:`FIXED_BY_STATE`, which it was built with:
        changing one of them with ``include_attributes`` is refused."""
        if include_attributes and new_params:
            fixed = sorted(
                name
                for name in FIXED_BY_STATE
                if name in new_params and new_params[name] != getattr(self, name, None)
            )
            if fixed:
                raise InvalidParameterError(
                    f"clone(include_attributes=True) cannot change {', '.join(fixed)}: the "
                    "learned state was built with the current value (clone without "
                    "include_attributes to start afresh)"
                )
        clone: Self = super().clone(new_params)  # type: ignore[misc]
        if include_attributes:
            state = self.state_dict()
            model_state = {**state[self.model_key], "params": clone.model_plain_params()}
            clone.restore(self.model_from_state(model_state), state)
        return clone

    def __getstate__(self) -> dict[str, Any]:
        return {"params": self._get_params(), "state": self.state_dict()}

    def __setstate__(self, pickled: dict[str, Any]) -> None:
        type(self).__init__(self, **pickled["params"])
        state = pickled["state"]
        self.restore(self.model_from_state(state[self.model_key]), state)
