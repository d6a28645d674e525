"""``_FunctionalAdamax``: ``ember.optim.Adamax`` stepped with gradients passed in
(``torch.distributed.optim.functional_adamax``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalAdamax = functional_class("Adamax", __name__)
