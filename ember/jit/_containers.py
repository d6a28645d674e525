"""Typed lists and dicts, as ``torch.jit.script([...])`` and ``torch.jit.script({...})`` return
them (``torch.ScriptList``, ``torch.ScriptDict``): the element types are inferred once from
the contents (NOTE [ JIT types ]) and every later write is checked against them.

An empty list is a ``List[Tensor]`` and an empty dict a ``Dict[str, Tensor]``, TorchScript's
defaults; contents of mixed types raise ``ember.jit.Error`` as scripting them does.
"""

from __future__ import annotations

from . import _types as T

__all__ = ["ScriptDict", "ScriptDictIterator", "ScriptDictKeyIterator", "ScriptList",
           "ScriptListIterator", "infer_type"]


def infer_type(value) -> T.Type:
    """The TorchScript type of a Python value (ints, floats, bools, strings, tensors, None,
    devices, and lists, tuples and dicts of them).

    Args:
        value: the value.

    Returns:
        Type: its type; ``ember.jit.Error`` when it has none (mixed lists, other objects).
    """
    from .._core.device import device
    from .._core.tensor import Tensor
    from . import Error

    if isinstance(value, bool):
        return T.BoolType.get()
    if isinstance(value, int):
        return T.IntType.get()
    if isinstance(value, float):
        return T.FloatType.get()
    if isinstance(value, complex):
        return T.ComplexType.get()
    if isinstance(value, str):
        return T.StringType.get()
    if value is None:
        return T.NoneType.get()
    if isinstance(value, Tensor):
        return T.TensorType.get()
    if isinstance(value, device):
        return T.DeviceObjType.get()
    if isinstance(value, (ScriptList, ScriptDict)):
        return value._type
    if isinstance(value, tuple):
        return T.TupleType([infer_type(v) for v in value])
    if isinstance(value, list):
        if not value:
            return T.ListType(T.TensorType.get())
        types = [infer_type(v) for v in value]
        for t in types[1:]:
            if t != types[0]:
                raise Error("Unable to infer type of list: List inputs to traced functions "
                            f"must have consistent element type. Found {types[0]} and {t}")
        return T.ListType(types[0])
    if isinstance(value, dict):
        if not value:
            return T.DictType(T.StringType.get(), T.TensorType.get())
        keys = {infer_type(k).annotation_str: infer_type(k) for k in value}
        vals = {infer_type(v).annotation_str: infer_type(v) for v in value.values()}
        if len(keys) > 1 or len(vals) > 1:
            raise Error("Unable to infer type of dictionary: Dictionary inputs to traced "
                        "functions must have consistent type. Found "
                        f"{' and '.join(keys) if len(keys) > 1 else ' and '.join(vals)}")
        return T.DictType(next(iter(keys.values())), next(iter(vals.values())))
    raise Error(f"Unable to infer the TorchScript type of a {type(value).__name__}")


def _fits(value, t: T.Type) -> bool:
    try:
        return infer_type(value).isSubtypeOf(t)
    except Exception:  # noqa: BLE001  (a value without a type fits nothing)
        return False


def _checked(value, t: T.Type, what: str):
    # TorchScript's implicit conversions: a bool is an int, an int a float or a complex
    if isinstance(t, T.IntType) and isinstance(value, bool):
        return int(value)
    if isinstance(t, T.FloatType) and isinstance(value, int):
        return float(value)
    if isinstance(t, T.ComplexType) and isinstance(value, (int, float)):
        return complex(value)
    if not _fits(value, t):
        raise TypeError(f"{what}: expected a value of type {t}, got "
                        f"{type(value).__name__} ({value!r})")
    return value


class ScriptListIterator:
    """An iterator over a ``ScriptList``.

    Args:
        none: made by ``iter(script_list)``.

    Returns:
        ScriptListIterator: yields the elements in order.

    Example::

        >>> next(iter(ember.jit.script([7, 8])))
        7
    """

    def __init__(self, items):
        self._it = iter(list(items))

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)


class ScriptList:
    """A list whose element type is fixed (``List[int]``, ``List[Tensor]`` ...): what
    ``ember.jit.script`` makes of a Python list. Writes of another type raise TypeError.

    Args:
        items (list): the initial contents (their common type becomes the element type).

    Returns:
        ScriptList: a typed copy of ``items``.

    Example::

        >>> xs = ember.ScriptList([1, 2])
        >>> xs.append(3); list(xs)
        [1, 2, 3]
        >>> try:
        ...     xs.append("four")
        ... except TypeError:
        ...     print("rejected")
        rejected
    """

    def __init__(self, items=()):
        items = list(items)
        self._type = infer_type(items)
        self._elem = self._type.getElementType()
        self._items = [_checked(v, self._elem, "ScriptList") for v in items]

    def _check(self, value):
        return _checked(value, self._elem, "ScriptList")

    def __len__(self):
        return len(self._items)

    def __getitem__(self, index):
        if isinstance(index, slice):
            out = ScriptList.__new__(ScriptList)
            out._type, out._elem, out._items = self._type, self._elem, self._items[index]
            return out
        return self._items[index]

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            self._items[index] = [self._check(v) for v in value]
        else:
            self._items[index] = self._check(value)

    def __delitem__(self, index):
        del self._items[index]

    def __contains__(self, value):
        return value in self._items

    def __iter__(self):
        return ScriptListIterator(self._items)

    def __repr__(self):
        return "[" + ", ".join(repr(v) for v in self._items) + "]"

    __str__ = __repr__

    def __bool__(self):
        return bool(self._items)

    def append(self, obj) -> None:
        """Add ``obj`` (of the element type) at the end."""
        self._items.append(self._check(obj))

    def extend(self, iterable) -> None:
        """Add every item of ``iterable`` (each of the element type) at the end."""
        self._items.extend([self._check(v) for v in iterable])

    def insert(self, index: int, obj) -> None:
        """Insert ``obj`` before position ``index``."""
        self._items.insert(index, self._check(obj))

    def pop(self, index: int = -1):
        """Remove and return the item at ``index`` (the last by default)."""
        return self._items.pop(index)

    def remove(self, obj) -> None:
        """Remove the first item equal to ``obj``."""
        self._items.remove(obj)

    def count(self, obj) -> int:
        """How many items equal ``obj``."""
        return self._items.count(obj)

    def clear(self) -> None:
        """Remove every item."""
        self._items.clear()


class ScriptDictKeyIterator:
    """An iterator over a ``ScriptDict``'s keys.

    Args:
        none: made by ``iter(script_dict)`` or ``script_dict.keys()``.

    Returns:
        ScriptDictKeyIterator: yields the keys in insertion order.

    Example::

        >>> list(ember.jit.script({"a": 1, "b": 2}).keys())
        ['a', 'b']
    """

    def __init__(self, keys):
        self._it = iter(list(keys))

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)


class ScriptDictIterator:
    """An iterator over a ``ScriptDict``'s ``(key, value)`` pairs.

    Args:
        none: made by ``script_dict.items()``.

    Returns:
        ScriptDictIterator: yields the pairs in insertion order.

    Example::

        >>> list(ember.jit.script({"a": 1}).items())
        [('a', 1)]
    """

    def __init__(self, pairs):
        self._it = iter(list(pairs))

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)


class ScriptDict:
    """A dict whose key and value types are fixed (``Dict[str, int]`` ...): what
    ``ember.jit.script`` makes of a Python dict. Writes of other types raise TypeError.

    Args:
        items (dict): the initial contents (their common types become the dict's types).

    Returns:
        ScriptDict: a typed copy of ``items``.

    Example::

        >>> d = ember.ScriptDict({"a": 1})
        >>> d["b"] = 2; d
        {a: 1, b: 2}
        >>> try:
        ...     d["c"] = "three"
        ... except TypeError:
        ...     print("rejected")
        rejected
    """

    def __init__(self, items=None):
        items = dict(items or {})
        self._type = infer_type(items)
        self._key, self._value = self._type.getKeyType(), self._type.getValueType()
        self._items = {_checked(k, self._key, "ScriptDict key"):
                       _checked(v, self._value, "ScriptDict value") for k, v in items.items()}

    def __len__(self):
        return len(self._items)

    def __getitem__(self, key):
        return self._items[key]

    def __setitem__(self, key, value):
        self._items[_checked(key, self._key, "ScriptDict key")] = \
            _checked(value, self._value, "ScriptDict value")

    def __delitem__(self, key):
        del self._items[key]

    def __contains__(self, key):
        return key in self._items

    def __iter__(self):
        return ScriptDictKeyIterator(self._items)

    def __repr__(self):
        return "{" + ", ".join(f"{k}: {v}" for k, v in self._items.items()) + "}"

    __str__ = __repr__

    def __bool__(self):
        return bool(self._items)

    def keys(self) -> ScriptDictKeyIterator:
        """An iterator over the keys."""
        return ScriptDictKeyIterator(self._items)

    def items(self) -> ScriptDictIterator:
        """An iterator over the ``(key, value)`` pairs."""
        return ScriptDictIterator(self._items.items())
