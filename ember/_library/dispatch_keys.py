"""``torch._C.DispatchKey``, ``torch._C.DispatchKeySet`` and the guards that exclude keys.

ember has no per-key dispatcher (NOTE [ Dispatch ] in ember/_dispatch.py): an op's layers are
its autocast rule, its autograd formula and its kernel per device type. These names exist
so that libraries which build key sets at import time (torchvision registers autocast
kernels and runs them under ``_ExcludeDispatchKeyGuard``) run unchanged. The one exclusion
with an effect is of an autocast key: it suspends autocast for the block, as torch's guard
keeps the op inside an autocast kernel from being cast again.
"""

from __future__ import annotations

import enum

__all__ = ["DispatchKey", "DispatchKeySet", "_ExcludeDispatchKeyGuard",
           "_IncludeDispatchKeyGuard"]

_NAMES = (
    "Undefined", "CPU", "CUDA", "HIP", "XLA", "MPS", "IPU", "XPU", "HPU", "Lazy", "Meta",
    "MTIA", "PrivateUse1", "QuantizedCPU", "QuantizedCUDA", "SparseCPU", "SparseCUDA",
    "BackendSelect", "Python", "PythonTLSSnapshot", "PythonDispatcher", "PreDispatch",
    "Functionalize", "ADInplaceOrView", "FuncTorchBatched", "Batched", "Conjugate",
    "Negative", "ZeroTensor", "Named", "AutogradOther", "AutogradCPU", "AutogradCUDA",
    "AutogradXLA", "AutogradMPS", "AutogradXPU", "AutogradMeta", "AutogradPrivateUse1",
    "AutocastCPU", "AutocastCUDA", "AutocastXPU", "AutocastMPS", "AutocastPrivateUse1",
    "Autograd", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional", "FuncTorchDynamicLayerBackMode",
    "FuncTorchDynamicLayerFrontMode",
)

#: torch's dispatch keys by name (``DispatchKey.AutocastCPU.name == "AutocastCPU"``)
DispatchKey = enum.IntEnum("DispatchKey", {name: i for i, name in enumerate(_NAMES)},
                           module=__name__)
DispatchKey.__doc__ = """torch's dispatch key names, as an enum (``torch._C.DispatchKey``).

Example::

    >>> from ember._library.dispatch_keys import DispatchKey
    >>> DispatchKey.AutocastCPU.name
    'AutocastCPU'
"""


class DispatchKeySet:
    """A set of dispatch keys (``torch._C.DispatchKeySet``), combined with ``|``, ``&``, ``-``.

    Args:
        key: a ``DispatchKey`` (or its name) to start from; none for the empty set.

    Returns:
        The set.

    Example::

        >>> from ember._library.dispatch_keys import DispatchKey, DispatchKeySet
        >>> s = DispatchKeySet(DispatchKey.AutocastCPU) | DispatchKeySet(DispatchKey.CPU)
        >>> s.has(DispatchKey.CPU), s.has(DispatchKey.CUDA)
        (True, False)
    """

    def __init__(self, key=None):
        if key is None:
            self._keys = frozenset()
        elif isinstance(key, (set, frozenset)):
            self._keys = frozenset(key)
        else:
            self._keys = frozenset([_key(key)])

    def __or__(self, other):
        return DispatchKeySet(self._keys | other._keys)

    def __and__(self, other):
        return DispatchKeySet(self._keys & other._keys)

    def __sub__(self, other):
        return DispatchKeySet(self._keys - other._keys)

    def __eq__(self, other):
        return isinstance(other, DispatchKeySet) and self._keys == other._keys

    def __hash__(self):
        return hash(self._keys)

    def has(self, key) -> bool:
        """Whether ``key`` (a ``DispatchKey`` or its name) is in the set."""
        return _key(key) in self._keys

    def empty(self) -> bool:
        """Whether the set holds no key."""
        return not self._keys

    def __iter__(self):
        return iter(sorted(self._keys))

    def __repr__(self):
        return "DispatchKeySet(" + ", ".join(k.name for k in self) + ")"


def _key(key):
    if isinstance(key, DispatchKey):
        return key
    if isinstance(key, str) and key in DispatchKey.__members__:
        return DispatchKey[key]
    raise TypeError(f"DispatchKeySet: expected a DispatchKey, got {key!r}")


_AUTOCAST = frozenset(k for k in DispatchKey if k.name.startswith("Autocast"))


class _ExcludeDispatchKeyGuard:
    """Run a block with dispatch keys excluded (``torch._C._ExcludeDispatchKeyGuard``).

    Only autocast keys have an effect in ember: excluding any of them suspends autocast for
    the block. Other keys are accepted and change nothing.

    Args:
        keyset: the ``DispatchKeySet`` to exclude.

    Example::

        >>> import ember
        >>> from ember._library.dispatch_keys import (
        ...     DispatchKey, DispatchKeySet, _ExcludeDispatchKeyGuard)
        >>> with ember.autocast("cpu"):
        ...     with _ExcludeDispatchKeyGuard(DispatchKeySet(DispatchKey.AutocastCPU)):
        ...         (ember.ones(2, 2) @ ember.ones(2, 2)).dtype
        ember.float32
    """

    def __init__(self, keyset):
        if isinstance(keyset, DispatchKey):
            keyset = DispatchKeySet(keyset)
        self._suspends = bool(keyset._keys & _AUTOCAST)

    def __enter__(self):
        if self._suspends:
            from ..amp import autocast_mode

            autocast_mode._state.suspended += 1
        return self

    def __exit__(self, *exc):
        if self._suspends:
            from ..amp import autocast_mode

            autocast_mode._state.suspended -= 1
        return False


class _IncludeDispatchKeyGuard:
    """Accepted for compatibility (``torch._C._IncludeDispatchKeyGuard``); changes nothing
    in ember, which has no per-key dispatch.

    Args:
        keyset: the keys torch would include.

    Example::

        >>> from ember._library.dispatch_keys import DispatchKey, _IncludeDispatchKeyGuard
        >>> with _IncludeDispatchKeyGuard(DispatchKey.CPU):
        ...     pass
    """

    def __init__(self, keyset):
        self.keyset = keyset

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
