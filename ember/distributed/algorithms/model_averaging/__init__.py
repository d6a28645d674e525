"""Model averaging (``torch.distributed.algorithms.model_averaging``): average the
parameters of every replica every few steps, for post-local SGD and hierarchical SGD.

``averagers.PeriodicModelAverager`` averages over one group every ``period`` steps;
``hierarchical_model_averager.HierarchicalModelAverager`` runs several periods over groups
of growing size; ``utils.average_parameters`` is the collective both use.

Example::

    >>> from ember.distributed.algorithms.model_averaging import averagers
    >>> averagers.PeriodicModelAverager.__name__
    'PeriodicModelAverager'
"""

from . import averagers, hierarchical_model_averager, utils

__all__ = ["averagers", "hierarchical_model_averager", "utils"]
