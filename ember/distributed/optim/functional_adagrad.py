"""``_FunctionalAdagrad``: ``ember.optim.Adagrad`` stepped with gradients passed in
(``torch.distributed.optim.functional_adagrad``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalAdagrad = functional_class("Adagrad", __name__)
