"""``MixtureSameFamily``: a finite mixture whose components share one family."""

from __future__ import annotations

import ember

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture of ``K`` components of one distribution family: the rightmost batch
    dimension of ``component_distribution`` indexes the components, weighted by the
    categorical ``mixture_distribution``.

    Args:
        mixture_distribution (Categorical): the mixing weights, batch shape broadcastable
            with the component batch shape without its last dimension.
        component_distribution (Distribution): batch shape ``(*batch, K)``.
        validate_args (bool, optional): check the arguments.

    Example::

        >>> from ember.distributions import Normal
        >>> mix = Categorical(ember.ones(2))
        >>> comp = Normal(ember.tensor([-1.0, 1.0]), ember.tensor([1.0, 1.0]))
        >>> MixtureSameFamily(mix, comp).mean
        tensor(0.)
    """

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for s1, s2 in zip(reversed(mdbs), reversed(cdbs)):
            if s1 != 1 and s2 != 1 and s1 != s2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 "compatible with `component_distribution.batch_shape`"
                                 f"({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        batch_shape = ember.Size(batch_shape)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _weights(self):
        """Mixture probabilities with trailing singleton dims for the event."""
        probs = self.mixture_distribution.probs
        return probs.reshape(probs.shape + (1,) * self._event_ndims)

    def _pad(self, x):
        """Insert the component dimension into a value (just left of the event)."""
        return x.unsqueeze(-1 - self._event_ndims)

    @property
    def mean(self):
        return (self._weights() * self.component_distribution.mean).sum(
            dim=-1 - self._event_ndims)

    @property
    def variance(self):
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        w = self._weights()
        d = -1 - self._event_ndims
        mean_cond_var = (w * self.component_distribution.variance).sum(dim=d)
        var_cond_mean = (w * (self.component_distribution.mean
                              - self._pad(self.mean)).pow(2.0)).sum(dim=d)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(dim=-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix = ember.log_softmax(self.mixture_distribution.logits, dim=-1)
        return ember.logsumexp(log_prob_x + log_mix, dim=-1)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            sample_shape = ember.Size(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = self.event_shape
            mix_sample = self.mixture_distribution.sample(sample_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            # pick the drawn component of each sample: index along the component dim
            index = mix_sample.reshape(mix_sample.shape + (1,) * (len(es) + 1))
            index = index.expand(mix_sample.shape + (1,) + es)
            return ember.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n  "
                f"{self.component_distribution})")
