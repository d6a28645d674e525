"""``_FunctionalAdam``: ``ember.optim.Adam`` stepped with gradients passed in
(``torch.distributed.optim.functional_adam``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalAdam = functional_class("Adam", __name__)
