"""``_FunctionalAdamW``: ``ember.optim.AdamW`` stepped with gradients passed in
(``torch.distributed.optim.functional_adamw``; see ``_functional.py``)."""

from ._functional import functional_class

__all__: list = []

_FunctionalAdamW = functional_class("AdamW", __name__)
