"""``Distribution``: the base class of every probability distribution.

NOTE [ Distribution shapes ]
A distribution's draws have shape ``sample_shape + batch_shape + event_shape``.
``event_shape`` is the shape of one outcome (``(k,)`` for a k-dimensional Gaussian);
``batch_shape`` indexes independent, differently-parametrised distributions held at once;
``sample_shape`` counts i.i.d. draws. ``log_prob`` reduces the event dimensions away and
broadcasts over the rest, so ``log_prob(sample(s)).shape == s + batch_shape``.

NOTE [ Argument validation ]
With validation on (the default, as in PyTorch; switch it with
``Distribution.set_default_validate_args`` or ``validate_args=``), ``__init__`` checks every
parameter against ``arg_constraints`` and ``log_prob``/``cdf``/... check their value against
``support``, raising ValueError on the first violation.
"""

from __future__ import annotations

import warnings

import ember

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """The base class of probability distributions.

    Args:
        batch_shape (ember.Size): the shape of the batch of distributions.
        event_shape (ember.Size): the shape of one outcome.
        validate_args (bool, optional): check parameters and values (default: the class
            default, True unless changed by :meth:`set_default_validate_args`).

    Example::

        >>> from ember.distributions import Normal
        >>> d = Normal(ember.zeros(3), 1.0)
        >>> d.batch_shape, d.event_shape
        (ember.Size([3]), ember.Size([]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution created afterwards.

        Args:
            value (bool): whether to validate.

        Returns:
            None

        Example::

            >>> Distribution.set_default_validate_args(False)
            >>> Distribution.set_default_validate_args(True)
        """
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=ember.Size(), event_shape=ember.Size(),
                 validate_args: bool | None = None):
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{self.__class__} does not define `arg_constraints`. Please set "
                    "`arg_constraints = {}` or initialize the distribution with "
                    "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # nothing to check without the other parameters
                if param not in self.__dict__ and isinstance(
                        getattr(type(self), param, None), lazy_property):
                    continue  # the other parametrisation was given; don't derive this one
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with the batch dimensions broadcast to ``batch_shape``
        (parameters are expanded, not copied).

        Args:
            batch_shape (ember.Size): the desired batch shape.
            _instance: used by subclasses that override ``__init__``.

        Returns:
            Distribution: of the same class.

        Example::

            >>> from ember.distributions import Normal
            >>> Normal(0.0, 1.0).expand([4]).batch_shape
            ember.Size([4])
        """
        raise NotImplementedError

    @property
    def batch_shape(self) -> ember.Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> ember.Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """A dict from parameter name to the :class:`Constraint` each must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The :class:`Constraint` describing where the distribution has mass."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self):
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=ember.Size()):
        """Draw samples of shape ``sample_shape + batch_shape + event_shape``, without a
        gradient path to the parameters.

        Args:
            sample_shape (ember.Size): how many i.i.d. draws, as a shape.

        Returns:
            Tensor

        Example::

            >>> from ember.distributions import Normal
            >>> Normal(ember.zeros(2), 1.0).sample((5,)).shape
            ember.Size([5, 2])
        """
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=ember.Size()):
        """Draw reparameterised samples: differentiable functions of the parameters.

        Args:
            sample_shape (ember.Size): how many i.i.d. draws, as a shape.

        Returns:
            Tensor
        """
        raise NotImplementedError

    def sample_n(self, n: int):
        """Draw ``n`` samples (deprecated: use ``sample((n,))``).

        Args:
            n (int): the number of draws.

        Returns:
            Tensor: shape ``(n,) + batch_shape + event_shape``.
        """
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        """The log of the probability density (or mass) at ``value``.

        Args:
            value (Tensor): broadcastable with ``batch_shape + event_shape``.

        Returns:
            Tensor: the event dimensions reduced away.
        """
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse cumulative distribution function (quantile function) at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        """Every value of a discrete support, along a new leading dimension.

        Args:
            expand (bool): broadcast the values over ``batch_shape`` (else keep singleton
                batch dimensions).

        Returns:
            Tensor: shape ``(cardinality,) + batch_shape + event_shape``.
        """
        raise NotImplementedError

    def entropy(self):
        """The entropy, one value per batch entry."""
        raise NotImplementedError

    def perplexity(self):
        """``exp(entropy)``, one value per batch entry."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=ember.Size()):
        """``sample_shape + batch_shape + event_shape`` (NOTE [ Distribution shapes ])."""
        if not isinstance(sample_shape, ember.Size):
            sample_shape = ember.Size(sample_shape)
        return ember.Size(sample_shape + self._batch_shape + self._event_shape)

    def _validate_sample(self, value):
        """Raise ValueError unless ``value`` is a Tensor whose shape broadcasts with
        ``batch_shape + event_shape`` and whose entries lie in the support
        (NOTE [ Argument validation ])."""
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.dim() - len(self._event_shape)
        if value.shape[event_start:] != self._event_shape:
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        actual = value.shape
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {ember.Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. "
                "Please initialize the distribution with `validate_args=False` to turn off "
                "validation.", stacklevel=2)
            return
        if support is None:
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}")

    def _expand_params(self, cls, batch_shape, _instance, names):
        """The shared body of ``expand``: a new instance of ``cls`` whose parameters
        ``names`` (those present, a lazy one may be absent) are expanded so that their
        batch part becomes ``batch_shape``. Returns ``(new, batch_shape)``; the caller sets
        any other state and returns ``new``."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = ember.Size(batch_shape)
        for name in names:
            if name in self.__dict__:
                p = getattr(self, name)
                setattr(new, name, p.expand(batch_shape + p.shape[len(self._batch_shape):]))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new, batch_shape

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names)
        return f"{self.__class__.__name__}({args})"
