"""Embedding."""

from __future__ import annotations

from ..._ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _lookup_options_repr(m):
    """The options an embedding table's repr names when they differ from their defaults."""
    s = ""
    if m.max_norm is not None:
        s += f", max_norm={m.max_norm}"
    if m.norm_type != 2:
        s += f", norm_type={m.norm_type}"
    if m.scale_grad_by_freq is not False:
        s += f", scale_grad_by_freq={m.scale_grad_by_freq}"
    return s


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``.

    Args:
        num_embeddings: size of the vocabulary.
        embedding_dim: size of each embedding vector.
        padding_idx: index whose embedding stays fixed (and gets no gradient).
        max_norm: renormalise rows whose norm exceeds this.
        norm_type: the p of the p-norm.
        scale_grad_by_freq: scale gradients by the inverse frequency of the words in the batch.
        sparse: produce sparse gradients for the weight. Default: False.
        _weight: an initial weight to use.
        _freeze: do not train the weight.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        indices ``(*)`` -> ``(*, embedding_dim)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Embedding(10, 3)
        >>> tuple(m(ember.tensor([[1, 2, 4], [4, 3, 9]])).shape)
        (2, 3, 3)
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx > 0 and padding_idx >= num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, device=device,
                                          dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from ...autograd.grad_mode import no_grad

            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += _lookup_options_repr(self)
        if self.sparse:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)


class EmbeddingBag(Module):
    """Sums, means or maxes of bags of embeddings, without building the per-index
    embeddings.

    Args:
        num_embeddings: size of the vocabulary.
        embedding_dim: size of each embedding vector.
        max_norm: renormalise rows whose norm exceeds this.
        norm_type: the p of the p-norm.
        scale_grad_by_freq: scale gradients by the inverse frequency of the words in the batch.
        mode: ``"sum"``, ``"mean"`` or ``"max"`` (bags), or the interpolation mode.
        sparse: produce sparse gradients for the weight. Default: False.
        _weight: an initial weight to use.
        include_last_offset: ``offsets`` has one extra entry, the end of the last bag.
        padding_idx: index whose embedding stays fixed (and gets no gradient).
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        indices ``(B, L)``, or 1-d with ``offsets``; output ``(B, embedding_dim)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.EmbeddingBag(10, 3, mode='sum')
        >>> tuple(m(ember.tensor([1, 2, 4, 5, 4, 3]), ember.tensor([0, 3])).shape)
        (2, 3)
    """

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        if padding_idx is not None and padding_idx < 0:
            padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, device=device,
                                          dtype=dtype))
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from ...autograd.grad_mode import no_grad

            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        # An EmbeddingBag always names its mode and, unlike Embedding, never says sparse.
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        s += _lookup_options_repr(self) + f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
