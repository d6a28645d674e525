"""AdamW at the module path PyTorch keeps it under (``torch.optim.adamw``); ember defines it
beside Adam in ``adam``."""

from .adam import AdamW  # noqa: F401

__all__ = ["AdamW"]
