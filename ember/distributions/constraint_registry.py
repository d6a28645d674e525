"""``biject_to`` and ``transform_to``: from a constraint to a transform onto it.

Optimisers work on unconstrained reals; to fit a positive scale or a simplex of weights,
keep an unconstrained tensor ``u`` and use ``transform_to(constraint)(u)``.
``biject_to(c)`` is always a bijection (so it also serves for densities, as in HMC);
``transform_to(c)`` may be a cheaper, non-injective map (softmax onto the simplex).

Example::

    >>> from ember.distributions import constraints
    >>> t = transform_to(constraints.positive)
    >>> t(ember.tensor(0.0))
    tensor(1.)
"""

from __future__ import annotations

from numbers import Number

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint classes to factories ``constraint -> Transform``.

    Args:
        constraint (Constraint): when the registry is called, the constraint to find a
            transform for (its class looks up the factory).

    Example::

        >>> registry = ConstraintRegistry()
        >>> registry.register(constraints.real, lambda c: transforms.identity_transform)
        ... # doctest: +ELLIPSIS
        <function <lambda> at ...>
        >>> registry(constraints.real)
        ComposeTransform(
        <BLANKLINE>
        )
    """

    def __init__(self):
        self._registry = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register ``factory`` for a constraint class (or the class of an instance).
        Without ``factory``, returns a decorator.

        Args:
            constraint (Constraint or type): the constraint (class) served.
            factory (callable): ``constraint -> Transform``.

        Returns:
            the factory (or a decorator that registers one).
        """
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        """The transform registered for ``constraint``'s class, built for ``constraint``.

        Args:
            constraint (Constraint): a constraint instance.

        Returns:
            Transform
        """
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    def register(factory):
        biject_to.register(constraint, factory)
        transform_to.register(constraint, factory)
        return factory

    return register


@_both(constraints.real)
def _to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    return transforms.IndependentTransform(biject_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


# positive and nonnegative are instances of these classes, so they land here too
@_both(constraints.greater_than)
@_both(constraints.greater_than_eq)
def _to_greater_than(constraint):
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint):
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
@_both(constraints.half_open_interval)
def _to_interval(constraint):
    lb, ub = constraint.lower_bound, constraint.upper_bound
    if isinstance(lb, Number) and lb == 0 and isinstance(ub, Number) and ub == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform(
        [transforms.SigmoidTransform(), transforms.AffineTransform(lb, ub - lb)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint):
    return transforms.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                                   constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint):
    return transforms.CatTransform([transform_to(c) for c in constraint.cseq],
                                   constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint):
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint):
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq],
                                     constraint.dim)
