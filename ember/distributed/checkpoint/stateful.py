"""``Stateful``: an object a checkpoint saves through its ``state_dict()`` and restores
through its ``load_state_dict()`` (modules, optimizers, or an application's own class)."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Stateful", "StatefulT"]


@runtime_checkable
class Stateful(Protocol):
    """Anything with ``state_dict()`` and ``load_state_dict(state_dict)``: a top-level
    value of a state dict passed to ``save``/``load`` that is ``Stateful`` is saved as its
    ``state_dict()`` and, after a load, given back through ``load_state_dict``.

    Example::

        >>> from ember.distributed.checkpoint.stateful import Stateful
        >>> isinstance(ember.nn.Linear(1, 1), Stateful)
        True
    """

    def state_dict(self) -> dict[str, Any]:
        """The object's state.

        Returns:
            dict
        """
        ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the object's state.

        Args:
            state_dict (dict): as ``state_dict()`` returned it.
        """
        ...


StatefulT = TypeVar("StatefulT", bound=Stateful)
