"""``loss_parallel``: cross entropy on logits sharded along the class dimension."""

from .._ops import loss_parallel

__all__ = ["loss_parallel"]
