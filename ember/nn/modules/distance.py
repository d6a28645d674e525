"""Distance layers at PyTorch's module path (``torch.nn.modules.distance``)."""

from .loss import CosineSimilarity, PairwiseDistance  # noqa: F401

__all__ = ["PairwiseDistance", "CosineSimilarity"]
