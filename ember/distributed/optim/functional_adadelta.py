"""``_FunctionalAdadelta``: ``ember.optim.Adadelta`` stepped with gradients passed in
(``torch.distributed.optim.functional_adadelta``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalAdadelta = functional_class("Adadelta", __name__)
