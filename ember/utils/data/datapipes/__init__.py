"""``ember.utils.data.datapipes``: composable pipeline stages (see ``datapipe.py``)."""

from . import _decorator, datapipe, iter, map  # noqa: A004 - PyTorch's module names

__all__ = ["datapipe", "iter", "map"]
