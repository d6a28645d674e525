"""``ExponentialFamily``: distributions with density ``h(x) exp(<t(x), theta> - A(theta))``.

Knowing the natural parameters ``theta`` and the log-normaliser ``A`` gives the entropy and
the KL divergence between two members of one family without writing them out: both follow
from ``A`` and its gradient (the mean of the sufficient statistic) by autograd.
"""

from __future__ import annotations

import ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions.

    Subclasses provide ``_natural_params`` (a tuple of tensors), ``_log_normalizer(*params)``
    and ``_mean_carrier_measure`` (``E[log h(x)]``); ``entropy`` then needs nothing else.

    Args:
        batch_shape (ember.Size): the shape of the batch of distributions.
        event_shape (ember.Size): the shape of one sample.
        validate_args (bool, optional): check parameters and samples against their constraints.

    Example::

        >>> from ember.distributions import Exponential
        >>> isinstance(Exponential(1.0), ExponentialFamily)
        True
    """

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """The entropy ``A(theta) - <theta, grad A(theta)> - E[log h(x)]``.

        Returns:
            Tensor: one value per batch entry.
        """
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_norm = self._log_normalizer(*params)
        grads = ember.autograd.grad(log_norm.sum(), params, create_graph=True)
        result = result + log_norm
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
