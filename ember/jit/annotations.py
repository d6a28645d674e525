"""The type names TorchScript code annotates with (``torch.jit.annotations``).

Models written for TorchScript import ``List``, ``Tuple``, ``Dict``, ``Optional`` and the
``BroadcastingList`` forms from here rather than from :mod:`typing`; they are typing's own
names (ember's ``jit.script`` reads ordinary annotations).

Example::

    >>> from ember.jit.annotations import List, Optional
    >>> def total(xs: List[int], start: Optional[int] = None) -> int:
    ...     return sum(xs) + (start or 0)
    >>> total([1, 2], 3)
    6
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: UP035  (re-exported names)

from ..nn.functional import BroadcastingList1, BroadcastingList2, BroadcastingList3

__all__ = ["Any", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Dict", "List",
           "Optional", "Tuple", "Union"]
