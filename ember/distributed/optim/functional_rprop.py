"""``_FunctionalRprop``: ``ember.optim.Rprop`` stepped with gradients passed in
(``torch.distributed.optim.functional_rprop``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalRprop = functional_class("Rprop", __name__)
