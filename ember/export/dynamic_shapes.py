"""``ember.export.dynamic_shapes``: how ``dynamic_shapes`` are written -- ``Dim``,
``ShapesCollection`` (per tensor), ``AdditionalInputs`` (inferred from several example
inputs) -- and ``Constraint``, what a ``Dim`` becomes in an exported program.

Example::

    >>> from ember.export.dynamic_shapes import AdditionalInputs
    >>> ai = AdditionalInputs()
    >>> ai.add((ember.randn(2, 3),))
    >>> ai.add((ember.randn(5, 3),))
    >>> ai.dynamic_shapes(ember.nn.ReLU(), (ember.randn(2, 3),))
    {'input': (DimHint(DYNAMIC), None)}
"""

from __future__ import annotations

import enum
import logging

from .._core.tensor import Tensor

__all__ = ["AdditionalInputs", "Constraint", "Dim", "ShapesCollection", "dims"]

log = logging.getLogger("ember.export")


class _DimHint(enum.Enum):
    AUTO = "AUTO"
    STATIC = "STATIC"
    DYNAMIC = "DYNAMIC"

    def __repr__(self):
        return f"DimHint({self.value})"


class Dim:
    """A named dynamic dimension for ``dynamic_shapes``, with an optional range.

    ``Dim.AUTO``/``Dim.DYNAMIC`` mark a dimension dynamic without a name, ``Dim.STATIC``
    keeps it fixed.

    Args:
        name: the symbol's name.
        min: the smallest size allowed (default 0).
        max: the largest size allowed (default unbounded).

    Returns:
        Dim: the dimension.

    Example::

        >>> batch = ember.export.Dim("batch", min=2, max=64)
        >>> batch
        Dim('batch', min=2, max=64)
    """

    AUTO = _DimHint.AUTO
    STATIC = _DimHint.STATIC
    DYNAMIC = _DimHint.DYNAMIC

    def __init__(self, name, *, min=None, max=None):  # noqa: A002 - PyTorch's names
        if min is not None and max is not None and min > max:
            raise ValueError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min = 0 if min is None else int(min)
        self.max = max

    def __repr__(self):
        if self.max is None:
            return f"Dim('{self.__name__}', min={self.min})"
        return f"Dim('{self.__name__}', min={self.min}, max={self.max})"


def dims(*names, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Several ``Dim`` s with the same range.

    Args:
        *names: their names.
        min: the smallest size.
        max: the largest size.

    Returns:
        tuple[Dim, ...]: one per name.

    Example::

        >>> b, t = ember.export.dims("b", "t", max=512)
        >>> t.max
        512
    """
    return tuple(Dim(n, min=min, max=max) for n in names)


class ShapesCollection:
    """``dynamic_shapes`` given per tensor rather than per argument: ``sc[x] = {0: dim}``.

    Example::

        >>> x = ember.randn(4, 3)
        >>> sc = ember.export.ShapesCollection()
        >>> sc[x] = {0: ember.export.Dim("batch")}
        >>> sc.dynamic_shapes(ember.nn.ReLU(), (x,))
        ({0: Dim('batch', min=0)},)
    """

    def __init__(self):
        self._shapes = {}

    def __setitem__(self, t, shape):
        self._shapes[id(t)] = shape

    def __getitem__(self, t):
        return self._shapes[id(t)]

    def __contains__(self, t):
        return id(t) in self._shapes

    def dynamic_shapes(self, m, args, kwargs=None):
        """The collection as the per-argument ``dynamic_shapes`` of ``m(*args, **kwargs)``.

        Args:
            m: the module.
            args: its example positional inputs.
            kwargs: its example keyword inputs.

        Returns:
            The specs, shaped like the arguments.
        """
        def spec(x):
            if isinstance(x, Tensor):
                return self._shapes.get(id(x))
            if isinstance(x, (list, tuple)):
                return type(x)(spec(a) for a in x)
            if isinstance(x, dict):
                return {k: spec(v) for k, v in x.items()}
            return None

        out = spec(tuple(args))
        if kwargs:
            return out + (spec(kwargs),) if False else spec(dict(zip(
                _arg_names(m, len(args)), args), **kwargs))
        return out


def _arg_names(m, n):
    import inspect

    try:
        return [p.name for p in inspect.signature(m.forward).parameters.values()][:n]
    except (TypeError, ValueError):
        return [f"args_{i}" for i in range(n)]


class Constraint:
    """The range a dynamic dimension of an exported input may take: ``lo <= size <= hi``,
    for dimension ``dim`` of the input at position ``index``.

    Args:
        index: the flat position of the tensor input.
        dim: the dimension.
        lo: the smallest size allowed.
        hi: the largest size allowed (None: unbounded).
        name: the symbol's name.

    Example::

        >>> from ember.export import Constraint
        >>> Constraint(0, 0, 2, 64, "batch")
        Constraint(batch: 2 <= x0.size(0) <= 64)
    """

    def __init__(self, index: int, dim: int, lo: int = 0, hi: int | None = None,
                 name: str | None = None):
        self.index, self.dim, self.lo, self.hi = index, dim, lo, hi
        self.name = name or f"s{index}_{dim}"

    def __repr__(self) -> str:
        hi = "inf" if self.hi is None else self.hi
        return f"Constraint({self.name}: {self.lo} <= x{self.index}.size({self.dim}) <= {hi})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Constraint) and (self.index, self.dim, self.lo, self.hi) == \
            (other.index, other.dim, other.lo, other.hi)

    __hash__ = object.__hash__


class AdditionalInputs:
    """``dynamic_shapes`` inferred from several example inputs: a dimension whose size
    differs between the examples is dynamic (``Dim.DYNAMIC``), the others static (None).

    Example::

        >>> ai = AdditionalInputs()
        >>> ai.add((ember.randn(2, 3),))
        >>> ai.add((ember.randn(2, 7),))
        >>> ai.dynamic_shapes(ember.nn.ReLU(), (ember.randn(2, 3),))
        {'input': (None, DimHint(DYNAMIC))}
    """

    def __init__(self):
        self._examples: list = []

    def add(self, args, kwargs=None) -> None:
        """Add one example call ``m(*args, **kwargs)``.

        Args:
            args: a tuple of positional inputs.
            kwargs: a dict of keyword inputs.

        Raises:
            AssertionError: ``args`` is not a tuple or ``kwargs`` not a dict (as torch).
        """
        if type(args) is not tuple:
            raise AssertionError(f"Representative args {args} must be a tuple")
        if kwargs is not None and type(kwargs) is not dict:
            raise AssertionError(f"Representative kwargs {kwargs} must be None or a dict")
        self._examples.append((args, kwargs or {}))

    def dynamic_shapes(self, m, args, kwargs=None) -> dict:
        """The ``dynamic_shapes`` of ``m``'s inputs, by argument name: for each tensor a
        tuple with ``Dim.DYNAMIC`` where the examples (and ``args``/``kwargs``) differ in
        size, None where they agree.

        Args:
            m: the module to export.
            args: the example positional inputs given to ``export``.
            kwargs: its example keyword inputs.

        Returns:
            dict: argument name -> spec, shaped like the argument.

        Raises:
            ValueError: the examples differ in structure or in a tensor's rank.
        """
        calls = [(tuple(args), dict(kwargs or {}))] + self._examples

        def named(a, k):
            return {**dict(zip(_arg_names(m, len(a)), a)), **k}

        named_calls = [named(a, k) for a, k in calls]
        first = named_calls[0]

        def merge(values):
            v0 = values[0]
            if isinstance(v0, Tensor):
                if not all(isinstance(v, Tensor) and v.ndim == v0.ndim for v in values):
                    raise ValueError("the representative inputs differ in a tensor's rank")
                return tuple(Dim.DYNAMIC if len({v.shape[d] for v in values}) > 1 else None
                             for d in range(v0.ndim))
            if isinstance(v0, (list, tuple)):
                if not all(type(v) is type(v0) and len(v) == len(v0) for v in values):
                    raise ValueError("the representative inputs differ in structure")
                return type(v0)(merge([v[i] for v in values]) for i in range(len(v0)))
            if isinstance(v0, dict):
                if not all(isinstance(v, dict) and v.keys() == v0.keys() for v in values):
                    raise ValueError("the representative inputs differ in structure")
                return {k: merge([v[k] for v in values]) for k in v0}
            return None

        if not all(c.keys() == first.keys() for c in named_calls):
            raise ValueError("the representative inputs name different arguments")
        return {k: merge([c[k] for c in named_calls]) for k in first}

    def verify(self, ep) -> None:
        """Check that the exported program ``ep`` runs every example, with the same result
        as the module it was exported from, when that is known.

        Args:
            ep: an ``ExportedProgram``.

        Raises:
            AssertionError: an example gives a different result.
        """
        import ember

        mod = ep.module()
        src = getattr(ep, "_source", None)
        for a, k in self._examples:
            got = mod(*a, **k)
            if src is not None:
                want = src(*a, **k)
                for g, w in zip(_leaves(got), _leaves(want)):
                    if not ember.allclose(g, w, equal_nan=True):
                        raise AssertionError("the exported program and the module disagree "
                                             f"on the example {a}")


def _leaves(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _leaves(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _leaves(v)]
    return []
