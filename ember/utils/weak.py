"""``ember.utils.weak``: weak references and dictionaries keyed by object identity
(``torch.utils.weak``).

A tensor's ``==`` is elementwise and its hash is its id, so a plain
``weakref.WeakKeyDictionary`` cannot hold tensors as keys reliably.
:class:`WeakIdKeyDictionary` compares keys by identity instead: any object that can be
weakly referenced may be a key, and its entry goes away when the key dies.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, MutableMapping

__all__ = ["TensorWeakRef", "WeakIdKeyDictionary", "WeakIdRef", "WeakTensorKeyDictionary"]


class WeakIdRef(weakref.ref):
    """A weak reference hashed and compared by the identity of its referent.

    Two references are equal when they point to the same live object; once the object
    dies a reference equals only itself. The hash (the referent's ``id``) is fixed at
    creation, so it stays valid in a dictionary after the referent is gone.

    Args:
        key: the object to refer to.
        callback (callable, optional): called with the reference when the object dies.

    Example:
        >>> import ember
        >>> from ember.utils.weak import WeakIdRef
        >>> t = ember.ones(2)
        >>> WeakIdRef(t) == WeakIdRef(t), WeakIdRef(t)() is t
        (True, True)
    """

    __slots__ = ("_id",)

    def __init__(self, key, callback=None):
        self._id = id(key)
        super().__init__(key, callback)

    def __call__(self):
        return super().__call__()

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        if not isinstance(other, WeakIdRef):
            return NotImplemented
        a, b = self(), other()
        if a is not None and b is not None:
            return a is b
        return self is other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


class _StrongIdRef:
    """A lookup key with :class:`WeakIdRef`'s hash and equality that holds its object
    strongly: used to probe a dictionary without creating weak references."""

    __slots__ = ("_obj", "_id")

    def __init__(self, obj):
        self._obj = obj
        self._id = id(obj)

    def __call__(self):
        return self._obj

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        if not isinstance(other, (WeakIdRef, _StrongIdRef)):
            return NotImplemented
        return self._obj is other()


class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held weakly and compared by identity (``is``), never by
    ``==``; an entry disappears when its key is garbage collected.

    Args:
        dict (mapping or iterable of pairs, optional): initial entries.
        ref_type (type): the weak reference class used for keys. Default:
            :class:`WeakIdRef`.

    Example:
        >>> import ember
        >>> from ember.utils.weak import WeakIdKeyDictionary
        >>> d = WeakIdKeyDictionary()
        >>> a, b = ember.zeros(2), ember.zeros(2)
        >>> d[a] = "a"
        >>> d[b] = "b"
        >>> len(d), d[a]
        (2, 'a')
        >>> del a
        >>> len(d)
        1
    """

    def __init__(self, dict=None, ref_type=WeakIdRef):
        self.data = {}
        self.ref_type = ref_type
        self._pending_removals = []
        self._iterating = set()
        self_ref = weakref.ref(self)

        def remove(k, selfref=self_ref):
            owner = selfref()
            if owner is None:
                return
            if owner._iterating:
                owner._pending_removals.append(k)
            else:
                owner.data.pop(k, None)

        self._remove = remove
        if dict is not None:
            self.update(dict)

    def _commit_removals(self):
        pop, data = self._pending_removals.pop, self.data
        while self._pending_removals:
            data.pop(pop(), None)

    def _key_refs(self):
        """Iterate over the key references, deferring removals while iterating."""
        marker = object()
        self._iterating.add(marker)
        try:
            yield from list(self.data)
        finally:
            self._iterating.discard(marker)
            if not self._iterating:
                self._commit_removals()

    def __getitem__(self, key):
        return self.data[_StrongIdRef(key)]

    def __setitem__(self, key, value):
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key):
        del self.data[_StrongIdRef(key)]

    def __contains__(self, key):
        try:
            probe = _StrongIdRef(key)
        except TypeError:
            return False
        return probe in self.data

    def __len__(self):
        return len(self.data) - len(self._pending_removals)

    def __iter__(self):
        for ref in self._key_refs():
            obj = ref()
            if obj is not None:
                yield obj

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"

    def __copy__(self):
        return type(self)(self.items(), ref_type=self.ref_type)

    copy = __copy__

    def __deepcopy__(self, memo):
        from copy import deepcopy

        new = type(self)(ref_type=self.ref_type)
        for key, value in self.items():
            new[key] = deepcopy(value, memo)
        return new

    def keys(self):
        """The live keys (a view-like iterable)."""
        return list(iter(self))

    def items(self):
        """The ``(key, value)`` pairs whose keys are alive."""
        out = []
        for ref in self._key_refs():
            obj = ref()
            if obj is not None:
                out.append((obj, self.data[ref]))
        return out

    def values(self):
        """The values whose keys are alive."""
        return [v for _, v in self.items()]

    def keyrefs(self):
        """The weak references to the keys (which may die while held)."""
        return list(self.data)

    def get(self, key, default=None):
        """``self[key]`` if present, else ``default``."""
        return self.data.get(_StrongIdRef(key), default)

    def pop(self, key, *args):
        """Remove ``key`` and return its value (or ``default`` if given and absent)."""
        return self.data.pop(_StrongIdRef(key), *args)

    def popitem(self):
        """Remove and return some ``(key, value)`` pair whose key is alive."""
        while True:
            ref, value = self.data.popitem()
            obj = ref()
            if obj is not None:
                return obj, value

    def setdefault(self, key, default=None):
        """``self[key]``, first setting it to ``default`` if absent."""
        probe = _StrongIdRef(key)
        if probe in self.data:
            return self.data[probe]
        self[key] = default
        return default

    def update(self, dict=None, **kwargs):
        """Add the entries of a mapping or an iterable of pairs (and of ``kwargs``)."""
        if dict is not None:
            pairs = dict.items() if isinstance(dict, Mapping) else dict
            for key, value in pairs:
                self[key] = value
        for key, value in kwargs.items():
            self[key] = value

    def __ior__(self, other):
        self.update(other)
        return self

    def __or__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        new = self.copy()
        new.update(other)
        return new

    def __eq__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        return {id(k): v for k, v in self.items()} == {id(k): v for k, v in other.items()}


#: the name PyTorch code uses when the keys are tensors
WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor, dereferenced with ``()``.

    Args:
        tensor (Tensor): the tensor.

    Example:
        >>> import ember
        >>> from ember.utils.weak import TensorWeakRef
        >>> t = ember.ones(1)
        >>> TensorWeakRef(t)() is t
        True
    """

    __slots__ = ("ref",)

    def __init__(self, tensor):
        from .._core.tensor import Tensor

        if not isinstance(tensor, Tensor):
            raise AssertionError(f"TensorWeakRef expects a Tensor, got {type(tensor).__name__}")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()
