"""``Fold`` and ``Unfold`` at PyTorch's module path (``torch.nn.modules.fold``)."""

from .sampling import Fold, Unfold  # noqa: F401

__all__ = ["Fold", "Unfold"]
