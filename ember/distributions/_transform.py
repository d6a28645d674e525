"""The structure of transforms: the ``Transform`` base class with its inverse and cache,
and the transforms that combine others (compose, independent, reshape, cat, stack).

The concrete maps (exp, affine, sigmoid, stick-breaking, ...) live in ``transforms.py``,
which re-exports everything here; see its NOTE [ Transform caching ].
"""

from __future__ import annotations

import functools
import operator
import weakref

import ember

from . import constraints
from .utils import _sum_rightmost

class Transform:
    """Base class of invertible (or at least computable) maps with a log-Jacobian.

    Subclasses implement ``_call`` (forward), ``_inverse`` and ``log_abs_det_jacobian``,
    and set ``domain``, ``codomain`` and ``bijective``.

    Args:
        cache_size (int): 0 for no cache, 1 to remember the last ``(x, y)`` pair
            (NOTE [ Transform caching ]).

    Example::

        >>> t = ExpTransform()
        >>> t(ember.tensor(0.0)), t.inv(ember.tensor(1.0))
        (tensor(1.), tensor(0.))
    """

    bijective = False

    def __init__(self, cache_size: int = 0):
        if cache_size == 1:
            self._cached_x_y = None, None
        elif cache_size != 0:
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        super().__init__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None  # a weak reference does not pickle
        return state

    @property
    def event_dim(self) -> int:
        """The event dimension, when domain and codomain agree on it."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform, ``inv(f(x)) == x``; ``f.inv.inv is f``."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)  # weak: the inverse holds a strong reference back
        return inv

    @property
    def sign(self):
        """The sign of the Jacobian determinant (for bijective monotone transforms)."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1):
        """This transform with the given ``cache_size``.

        Args:
            cache_size (int): 0 or 1.

        Returns:
            Transform
        """
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __call__(self, x):
        """Apply the transform: ``y = f(x)`` (cached, see NOTE [ Transform caching ])."""
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """``log |det dy/dx|`` at the pair ``(x, y = f(x))``.

        Args:
            x (Tensor): an input.
            y (Tensor): ``f(x)``.

        Returns:
            Tensor: shape of ``x`` without its ``domain.event_dim`` rightmost dimensions.
        """
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape):
        """The output shape for an input of shape ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """The input shape for an output of shape ``shape``."""
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform, built by ``Transform.inv``."""

    def __init__(self, transform: Transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform  # a strong reference, unlike Transform._inv

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Several transforms applied in order: ``parts[-1](...parts[0](x))``.

    Args:
        parts (list of Transform): the transforms, first applied first.
        cache_size (int): passed on to every part.

    Example::

        >>> t = ComposeTransform([ExpTransform(), AffineTransform(0.0, 2.0)])
        >>> t(ember.tensor(0.0))
        tensor(2.)
    """

    def __init__(self, parts, cache_size: int = 0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # walk back from the output: the input needs as many event dims as any part uses
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @functools.cached_property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @functools.cached_property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, xi, yi in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(xi, yi),
                                        event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {inner}\n)"


#: the identity map (a composition of no transforms)
identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """Wrap a transform so that ``reinterpreted_batch_ndims`` more rightmost dimensions
    count as event dimensions (the log-Jacobian is summed over them).

    Args:
        base_transform (Transform): the transform applied elementwise.
        reinterpreted_batch_ndims (int): how many dimensions to fold into the event.
        cache_size (int): 0 or 1.

    Example::

        >>> t = IndependentTransform(ExpTransform(), 1)
        >>> x = ember.zeros(2, 3)
        >>> t.log_abs_det_jacobian(x, t(x)).shape
        ember.Size([2])
    """

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(result, self.reinterpreted_batch_ndims)

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshape the rightmost dimensions from ``in_shape`` to ``out_shape`` (a bijection
    with log-Jacobian 0).

    Args:
        in_shape (ember.Size): the event shape of the input.
        out_shape (ember.Size): the event shape of the output (same number of elements).
        cache_size (int): 0 or 1.

    Example::

        >>> ReshapeTransform((4,), (2, 2))(ember.zeros(3, 4)).shape
        ember.Size([3, 2, 2])
    """

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = ember.Size(in_shape)
        self.out_shape = ember.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = x.shape[:x.dim() - len(self.in_shape)]
        return x.reshape(batch_shape + self.out_shape)

    def _inverse(self, y):
        batch_shape = y.shape[:y.dim() - len(self.out_shape)]
        return y.reshape(batch_shape + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch_shape = x.shape[:x.dim() - len(self.in_shape)]
        return x.new_zeros(batch_shape)

    def forward_shape(self, shape):
        return self._swap_shape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap_shape(shape, self.out_shape, self.in_shape)

    @staticmethod
    def _swap_shape(shape, old, new):
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if tuple(shape[cut:]) != tuple(old):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {old}")
        return tuple(shape[:cut]) + tuple(new)


class CatTransform(Transform):
    """Transforms applied to consecutive slices of ``dim`` (``lengths`` long), the way
    ``ember.cat`` joins tensors.

    Args:
        tseq (list of Transform): the transform of each slice.
        dim (int): the dimension cut into slices.
        lengths (list of int): the length of each slice (1 each by default).
        cache_size (int): 0 or 1.

    Example::

        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[1, 1])
        >>> t(ember.zeros(2))
        tensor([1., 0.])
    """

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform: every entry of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: lengths must have one entry per transform")
        self.dim = dim

    @functools.cached_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @functools.cached_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, x):
        if not -x.dim() <= self.dim < x.dim():
            raise IndexError(f"CatTransform: dim {self.dim} out of range for {x.dim()}-d input")
        if x.shape[self.dim] != self.length:
            raise ValueError(f"CatTransform: expected size {self.length} along dim "
                             f"{self.dim}, but got {x.shape[self.dim]}")

    def _map_slices(self, x, fns):
        self._check(x)
        out, start = [], 0
        for fn, length in zip(fns, self.lengths):
            out.append(fn(x.narrow(self.dim, start, length)))
            start += length
        return ember.cat(out, dim=self.dim)

    def _call(self, x):
        return self._map_slices(x, self.transforms)

    def _inverse(self, y):
        return self._map_slices(y, [t.inv for t in self.transforms])

    def log_abs_det_jacobian(self, x, y):
        self._check(x)
        self._check(y)
        terms, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            xs, ys = x.narrow(self.dim, start, length), y.narrow(self.dim, start, length)
            term = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                term = _sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
            start += length
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        if dim < 0:  # the cut dimension survives in the log-Jacobian
            return ember.cat(terms, dim=dim)
        return sum(terms)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transforms applied to the entries of ``dim``, one each, the way ``ember.stack``
    joins tensors.

    Args:
        tseq (list of Transform): the transform of each entry.
        dim (int): the dimension indexed.
        cache_size (int): 0 or 1.

    Example::

        >>> t = StackTransform([ExpTransform(), identity_transform], dim=0)
        >>> t(ember.zeros(2))
        tensor([1., 0.])
    """

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform: every entry of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _check(self, x):
        if not -x.dim() <= self.dim < x.dim():
            raise IndexError(f"StackTransform: dim {self.dim} out of range for {x.dim()}-d "
                             "input")
        if x.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: expected size {len(self.transforms)} along "
                             f"dim {self.dim}, but got {x.shape[self.dim]}")

    def _call(self, x):
        self._check(x)
        return ember.stack([t(xi) for xi, t in zip(self._slice(x), self.transforms)],
                           dim=self.dim)

    def _inverse(self, y):
        self._check(y)
        return ember.stack([t.inv(yi) for yi, t in zip(self._slice(y), self.transforms)],
                           dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x)
        self._check(y)
        terms = [t.log_abs_det_jacobian(xi, yi)
                 for xi, yi, t in zip(self._slice(x), self._slice(y), self.transforms)]
        return ember.stack(terms, dim=self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
