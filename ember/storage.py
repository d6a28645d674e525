"""``torch.storage``: the storage classes under PyTorch's module path
(``torch.storage.UntypedStorage``, ``torch.storage.TypedStorage``).

Example::

    >>> import ember.storage
    >>> ember.storage.UntypedStorage is ember.UntypedStorage
    True
"""

from ember._core.storage import TypedStorage, UntypedStorage
from ember.types import Storage  # noqa: F401  (torch.storage.Storage)

#: NumPy is always there for ember (PyTorch records whether it could import it)
HAS_NUMPY = True

__all__ = ["TypedStorage", "UntypedStorage"]
