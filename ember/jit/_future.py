"""``ember.jit.Future`` is ``ember.futures.Future`` (as ``torch.jit.Future`` is
``torch.futures.Future``); ``ember.jit.fork`` runs its work eagerly and returns one
already complete."""

from __future__ import annotations

from ..futures import Future

__all__ = ["Future"]
