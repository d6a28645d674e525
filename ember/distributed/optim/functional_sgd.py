"""``_FunctionalSGD``: ``ember.optim.SGD`` stepped with gradients passed in
(``torch.distributed.optim.functional_sgd``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalSGD = functional_class("SGD", __name__)
