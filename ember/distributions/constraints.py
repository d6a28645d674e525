"""Constraints: the sets a distribution's parameters and samples live in.

A constraint object answers ``check(value)`` with a bool tensor, one entry per event (the
``event_dim`` rightmost dimensions of ``value`` make one event), and says whether the set
is discrete (``is_discrete``). ``constraint_registry`` maps each constraint to a transform
from unconstrained space onto it.

Example::

    >>> from ember.distributions import constraints
    >>> constraints.positive.check(ember.tensor([-1.0, 2.0]))
    tensor([False,  True])
"""

from __future__ import annotations

import ember

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
    "greater_than", "greater_than_eq", "independent", "integer_interval", "interval",
    "half_open_interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular",
    "MixtureSameFamilyConstraint", "multinomial", "nonnegative", "nonnegative_integer",
    "one_hot", "positive", "positive_semidefinite", "positive_definite", "positive_integer",
    "real", "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval",
]


class Constraint:
    """Base class of constraints: a region of values.

    Attributes:
        is_discrete (bool): whether the region is a discrete set.
        event_dim (int): how many rightmost dimensions make one point of the region.

    Example::

        >>> class NonZero(Constraint):
        ...     def check(self, value):
        ...         return value != 0
        >>> NonZero().check(ember.tensor([0.0, 3.0]))
        tensor([False,  True])
    """

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A bool tensor of shape ``value.shape[:value.dim() - event_dim]``: True where the
        event lies in the region.

        Args:
            value (Tensor): the values to test.

        Returns:
            Tensor: bool.
        """
        raise NotImplementedError

    def __repr__(self):
        # the classes are private (_Real ...); the printed name drops the underscore
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (such as the support
    of a Uniform, which depends on ``low`` and ``high``); it cannot be checked on its own.

    Args:
        is_discrete, event_dim: optional static answers; left out, asking raises
            NotImplementedError.

    Example::

        >>> d = dependent(is_discrete=False, event_dim=0)
        >>> is_dependent(d), d.event_dim
        (True, 0)
    """

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A copy with ``is_discrete`` / ``event_dim`` given statically."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is a dependent placeholder (``dependent`` or a
    ``dependent_property``), which cannot be checked.

    Args:
        constraint (Constraint): any constraint.

    Returns:
        bool

    Example::

        >>> is_dependent(dependent), is_dependent(real)
        (True, False)
    """
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A ``property`` that is also a dependent constraint: used as the ``support`` of a
    distribution whose support depends on its parameters. On the class it reads as a
    dependent constraint; on an instance it computes the actual constraint.

    Args:
        fn: the method computing the constraint from the instance (given when used as a
            plain decorator).
        is_discrete, event_dim: optional static answers for the class-level constraint.

    Example::

        >>> class D:
        ...     @dependent_property(is_discrete=False, event_dim=0)
        ...     def support(self):
        ...         return interval(0.0, 1.0)
        >>> D().support, is_dependent(D.support)
        (Interval(lower_bound=0.0, upper_bound=1.0), True)
    """

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """Treat ``reinterpreted_batch_ndims`` more rightmost dimensions of ``base_constraint``
    as part of one event: an event is valid when all its entries are.

    Args:
        base_constraint (Constraint): the constraint on single entries.
        reinterpreted_batch_ndims (int): how many dimensions to fold into the event.

    Example::

        >>> independent(positive, 1).check(ember.tensor([[1.0, 2.0], [1.0, -2.0]]))
        tensor([ True, False])
    """

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("base_constraint must be a Constraint")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("reinterpreted_batch_ndims must be a non-negative int, but got "
                             f"{reinterpreted_batch_ndims!r}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        keep = result.dim() - self.reinterpreted_batch_ndims
        return result.reshape(result.shape[:keep] + (-1,)).all(-1)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class MixtureSameFamilyConstraint(Constraint):
    """The support of a ``MixtureSameFamily``: the component support checked on a value
    broadcast against the component dimension.

    Args:
        base_constraint (Constraint): the support of the component distribution.

    Example::

        >>> MixtureSameFamilyConstraint(positive).check(ember.tensor([1.0, -1.0]))
        tensor([ True, False])
    """

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("base_constraint must be a Constraint")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        # a value has no component dimension; add one just left of the event
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        keep = value.dim() - self.event_dim
        return result.reshape(result.shape[:keep] + (-1,)).all(-1)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    """The set {0, 1}."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors: 0/1 entries summing to 1 along the last dimension."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & (value.sum(-1) == 1)


def _bound_repr(obj, **bounds):
    inner = ", ".join(f"{k}={v}" for k, v in bounds.items())
    return f"{obj.__class__.__name__[1:]}({inner})"


class _IntegerInterval(Constraint):
    """Integers in ``[lower_bound, upper_bound]``.

    Args:
        lower_bound, upper_bound (int or Tensor): the inclusive bounds.

    Example::

        >>> integer_interval(0, 2).check(ember.tensor([0.0, 1.5, 3.0]))
        tensor([ True, False, False])
    """

    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return _bound_repr(self, lower_bound=self.lower_bound, upper_bound=self.upper_bound)


class _IntegerLessThan(Constraint):
    """Integers ``<= upper_bound``."""

    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self):
        return _bound_repr(self, upper_bound=self.upper_bound)


class _IntegerGreaterThan(Constraint):
    """Integers ``>= lower_bound``."""

    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return _bound_repr(self, lower_bound=self.lower_bound)


class _Real(Constraint):
    """The extended real line, NaN excluded."""

    def check(self, value):
        return value == value  # False only at NaN


class _GreaterThan(Constraint):
    """Reals ``> lower_bound``.

    Args:
        lower_bound (float or Tensor): the excluded bound.

    Example::

        >>> greater_than(1.0).check(ember.tensor([1.0, 2.0]))
        tensor([False,  True])
    """

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return _bound_repr(self, lower_bound=self.lower_bound)


class _GreaterThanEq(Constraint):
    """Reals ``>= lower_bound``.

    Args:
        lower_bound (float or Tensor): the included bound.

    Example::

        >>> greater_than_eq(1.0).check(ember.tensor([1.0, 0.5]))
        tensor([ True, False])
    """

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return _bound_repr(self, lower_bound=self.lower_bound)


class _LessThan(Constraint):
    """Reals ``< upper_bound``.

    Args:
        upper_bound (float or Tensor): the excluded bound.

    Example::

        >>> less_than(1.0).check(ember.tensor([0.0, 1.0]))
        tensor([ True, False])
    """

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return _bound_repr(self, upper_bound=self.upper_bound)


class _Interval(Constraint):
    """The closed interval ``[lower_bound, upper_bound]``.

    Args:
        lower_bound, upper_bound (float or Tensor): the inclusive bounds.

    Example::

        >>> interval(0.0, 1.0).check(ember.tensor([0.0, 1.0, 1.5]))
        tensor([ True,  True, False])
    """

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return _bound_repr(self, lower_bound=self.lower_bound, upper_bound=self.upper_bound)


class _HalfOpenInterval(Constraint):
    """The interval ``[lower_bound, upper_bound)``.

    Args:
        lower_bound (float or Tensor): the included lower bound.
        upper_bound (float or Tensor): the excluded upper bound.

    Example::

        >>> half_open_interval(0.0, 1.0).check(ember.tensor([0.0, 1.0]))
        tensor([ True, False])
    """

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self):
        return _bound_repr(self, lower_bound=self.lower_bound, upper_bound=self.upper_bound)


class _Simplex(Constraint):
    """Non-negative vectors summing to 1 (within 1e-6) along the last dimension."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Non-negative integer count vectors whose sum is at most ``upper_bound``.

    Args:
        upper_bound (int): the largest total count.

    Example::

        >>> multinomial(3).check(ember.tensor([[1.0, 2.0], [2.0, 2.0]]))
        tensor([ True, False])
    """

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    """Lower-triangular matrices."""

    event_dim = 2

    def check(self, value):
        same = value.tril() == value
        return same.reshape(value.shape[:-2] + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return _LowerTriangular().check(value) & positive_diagonal


class _CorrCholesky(Constraint):
    """Cholesky factors of correlation matrices: lower Cholesky with unit-norm rows."""

    event_dim = 2

    def check(self, value):
        tol = ember.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = ember.linalg.norm(value.detach(), dim=-1)
        unit_rows = ((row_norm - 1.0).abs() <= tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_rows


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value):
        return ember.full(value.shape[:-2], value.shape[-2] == value.shape[-1],
                          dtype=ember.bool, device=value.device)


class _Symmetric(_Square):
    """Symmetric matrices (within an absolute 1e-6)."""

    def check(self, value):
        square = super().check(value)
        if not square.all():
            return square
        return ember.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric matrices with non-negative eigenvalues."""

    def check(self, value):
        symmetric = super().check(value)
        if not symmetric.all():
            return symmetric
        return (ember.linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with a Cholesky factorisation (positive eigenvalues)."""

    def check(self, value):
        symmetric = super().check(value)
        if not symmetric.all():
            return symmetric
        return ember.linalg.cholesky_ex(value).info == 0


class _Cat(Constraint):
    """Constraints applied to consecutive slices of ``dim`` (lengths ``lengths``, 1 each by
    default), the way ``ember.cat`` joins tensors.

    Args:
        cseq (sequence of Constraint): the constraint of each slice.
        dim (int): the dimension cut into slices.
        lengths (sequence of int): the length of each slice.

    Example::

        >>> cat([positive, real], 0, [1, 2]).check(ember.tensor([-1.0, -2.0, 3.0]))
        tensor([False,  True,  True])
    """

    def __init__(self, cseq, dim=0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("cat: every entry of cseq must be a Constraint")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError("cat: lengths must have one entry per constraint")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"cat: dim {self.dim} out of range for a {value.dim()}-d value")
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return ember.cat(checks, self.dim)


class _Stack(Constraint):
    """Constraints applied to the entries of ``dim``, one each, the way ``ember.stack``
    joins tensors.

    Args:
        cseq (sequence of Constraint): the constraint of each entry.
        dim (int): the dimension indexed.

    Example::

        >>> stack([positive, real], 0).check(ember.tensor([-1.0, -2.0]))
        tensor([False,  True])
    """

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("stack: every entry of cseq must be a Constraint")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"stack: dim {self.dim} out of range for a {value.dim()}-d value")
        parts = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return ember.stack([c.check(v) for v, c in zip(parts, self.cseq)], self.dim)


# the public constraint objects and factories
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
