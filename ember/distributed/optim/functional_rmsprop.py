"""``_FunctionalRMSprop``: ``ember.optim.RMSprop`` stepped with gradients passed in
(``torch.distributed.optim.functional_rmsprop``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalRMSprop = functional_class("RMSprop", __name__)
