"""Loss layers: each holds its options and calls its functional form."""

from __future__ import annotations

import dataclasses

from .. import functional as F
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = F.reduction_enum(reduction, size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.L1Loss()
        >>> loss(ember.randn(3, 5), ember.randn(3, 5)).dim()
        0
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.MSELoss()
        >>> loss(ember.randn(3, 5), ember.randn(3, 5)).dim()
        0
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class targets, given log-probabilities ``(N, C, *)``.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        weight: manual rescaling weight, per class or per element.
        size_average: deprecated (use ``reduction``).
        ignore_index: target value that is ignored (no loss, no gradient). Default: -100.
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.NLLLoss()
        >>> loss(ember.randn(3, 5).log_softmax(1), ember.tensor([1, 0, 4])).dim()
        0
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of raw logits ``(N, C, *)`` against class indices or class
    probabilities (log_softmax + NLLLoss).

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        weight: manual rescaling weight, per class or per element.
        size_average: deprecated (use ``reduction``).
        ignore_index: target value that is ignored (no loss, no gradient). Default: -100.
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.
        label_smoothing: mix the targets with the uniform distribution by this much. Default: 0.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.CrossEntropyLoss()
        >>> loss(ember.randn(3, 5), ember.tensor([1, 0, 4])).dim()
        0
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        weight: manual rescaling weight, per class or per element.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.BCELoss()
        >>> loss(ember.rand(3), ember.tensor([0.0, 1.0, 1.0])).dim()
        0
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (sigmoid + BCELoss, computed stably).

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        weight: manual rescaling weight, per class or per element.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.
        pos_weight: weight of the positive examples, per class.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.BCEWithLogitsLoss()
        >>> loss(ember.randn(3), ember.tensor([0.0, 1.0, 1.0])).dim()
        0
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above: robust regression.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.
        delta: the threshold between the quadratic and linear regions. Default: 1.0.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.HuberLoss()
        >>> loss(ember.randn(3, 5), ember.randn(3, 5)).dim()
        0
    """

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SmoothL1Loss(_Loss):
    """Huber loss divided by ``beta``: quadratic below ``beta``, L1 above.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.
        beta: exponent or smoothing parameter (see the formula).

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.SmoothL1Loss()
        >>> loss(ember.randn(3, 5), ember.randn(3, 5)).dim()
        0
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence; the input is log-probabilities.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.
        log_target: the target is given as log-probabilities. Default: False.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.KLDivLoss()
        >>> loss(ember.randn(3, 5).log_softmax(1), ember.rand(3, 5).softmax(1)).dim()
        0
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        log_input: the input is the log of the rate. Default: True.
        full: include the constant term of the log-likelihood. Default: False.
        size_average: deprecated (use ``reduction``).
        eps: added for numerical stability.
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.PoissonNLLLoss()
        >>> loss(ember.randn(3, 5), ember.rand(3, 5)).dim()
        0
    """

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target with predicted mean and variance;
    ``forward(input, target, var)``.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        full: include the constant term of the log-likelihood. Default: False.
        eps: added for numerical stability.
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.GaussianNLLLoss()
        >>> loss(ember.randn(3, 5), ember.randn(3, 5), ember.ones(3, 5)).dim()
        0
    """

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification (Graves et al., 2006); ``forward(log_probs,
    targets, input_lengths, target_lengths)``.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        blank: index of the blank label. Default: 0.
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.
        zero_infinity: zero infinite losses and their gradients. Default: False.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.CTCLoss()
        >>> log_probs = ember.randn(6, 2, 4).log_softmax(2)
        >>> targets = ember.tensor([[1, 2], [3, 1]])
        >>> loss(log_probs, targets, ember.tensor([6, 6]), ember.tensor([2, 2])).dim()
        0
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)`` for rankings ``y`` in {1, -1}.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        margin: the margin.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.MarginRankingLoss()
        >>> loss(ember.randn(3), ember.randn(3), ember.tensor([1.0, -1.0, 1.0])).dim()
        0
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge loss for similarity labels ``y`` in {1, -1}.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        margin: the margin.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.HingeEmbeddingLoss()
        >>> loss(ember.randn(3), ember.tensor([1.0, -1.0, 1.0])).dim()
        0
    """

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss (targets: class indices padded with -1).

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.MultiLabelMarginLoss()
        >>> loss(ember.randn(2, 4), ember.tensor([[3, 0, -1, 1], [1, -1, 0, 0]])).dim()
        0
    """

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y x))``.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.SoftMarginLoss()
        >>> loss(ember.randn(3), ember.tensor([1.0, -1.0, 1.0])).dim()
        0
    """

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all loss on logits.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        weight: manual rescaling weight, per class or per element.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.MultiLabelSoftMarginLoss()
        >>> target = ember.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
        >>> loss(ember.randn(2, 4), target).dim()
        0
    """

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Loss on the cosine similarity of two inputs for labels ``y`` in {1, -1}.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        margin: the margin.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.CosineEmbeddingLoss()
        >>> loss(ember.randn(3, 4), ember.randn(3, 4), ember.tensor([1.0, -1.0, 1.0])).dim()
        0
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        margin: the margin.
        weight: manual rescaling weight, per class or per element.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.MultiMarginLoss()
        >>> loss(ember.randn(3, 5), ember.tensor([1, 0, 4])).dim()
        0
    """

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss ``max(d(a, p) - d(a, n) + margin, 0)`` with p-norm distances.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        margin: the margin.
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        eps: added for numerical stability.
        swap: use the distance swap (Balntas et al., 2016). Default: False.
        size_average: deprecated (use ``reduction``).
        reduce: deprecated (use ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.TripletMarginLoss()
        >>> loss(ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)).dim()
        0
    """

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                 reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with a custom distance function.

    Reduced to a scalar by default (``reduction="mean"``).

    Args:
        distance_function: ``(a, b) -> distances``; default pairwise Euclidean.
        margin: the margin.
        swap: use the distance swap (Balntas et al., 2016). Default: False.
        reduction: ``"none"``, ``"mean"`` or ``"sum"``. Default: mean.

    Shape:
        see the summary.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> loss = ember.nn.TripletMarginWithDistanceLoss()
        >>> loss(ember.randn(3, 4), ember.randn(3, 4), ember.randn(3, 4)).dim()
        0
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        # the default distance is a submodule, as in PyTorch (it shows in print(model))
        self.distance_function = distance_function if distance_function is not None \
            else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along ``dim``.

    Args:
        dim: the dimension the operation runs along.
        eps: added for numerical stability.

    Shape:
        two broadcastable inputs; ``dim`` is reduced.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.CosineSimilarity(dim=1)
        >>> tuple(m(ember.randn(4, 3), ember.randn(4, 3)).shape)
        (4,)
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm distance between corresponding rows of two inputs.

    Args:
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        eps: added for numerical stability.
        keepdim: keep the reduced dimension. Default: False.

    Shape:
        ``(N, D)``, ``(N, D)`` -> ``(N,)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.PairwiseDistance()
        >>> tuple(m(ember.randn(4, 3), ember.randn(4, 3)).shape)
        (4,)
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class NLLLoss2d(NLLLoss):
    """Deprecated name of :class:`NLLLoss`, which handles ``(N, C, H, W)`` inputs itself;
    constructing one warns (FutureWarning).

    Args:
        weight, size_average, ignore_index, reduce, reduction: as for ``NLLLoss``.

    Returns:
        The loss module.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     loss = ember.nn.NLLLoss2d()
        >>> logp = ember.randn(2, 3, 4, 4).log_softmax(1)
        >>> loss(logp, ember.zeros(2, 4, 4, dtype=ember.long)).dim()
        0
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        import warnings

        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
            "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for "
            "more details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


@dataclasses.dataclass
class LinearCrossEntropyOptions:
    """Settings of PyTorch's chunked ``linear_cross_entropy`` (which never materialises the
    full logits). ember always takes the reference path; it keeps the settings so code that
    passes them runs, and the result is the same loss.

    Args:
        allow_retain_graph (bool): Default: False.
        batch_chunk_size (int, optional): rows per chunk. Default: None.
        chunking_method (str, optional): Default: ``"auto"``.
        acc_policy (str): ``"accurate"``, ``"balanced"``, ``"compact"`` or ``"auto"``.
        acc_dtype (dtype, optional): accumulation dtype. Default: None.

    Returns:
        The options record.

    Example:
        >>> import ember
        >>> ember.nn.LinearCrossEntropyOptions().acc_policy
        'auto'
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None


def _linear_cross_entropy(input, linear_weight, target, linear_bias, weight, reduction,
                          ignore_index, label_smoothing):
    """``cross_entropy(linear(input), target)`` with a weight of shape ``(C, *out, in)``:
    logits ``(N, C, *out)`` for targets ``(N, *out)``."""
    if input.dim() not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    classes_shape = tuple(linear_weight.shape[:-1])
    logits = input.matmul(linear_weight.reshape(-1, linear_weight.shape[-1]).T)
    logits = logits.reshape(tuple(input.shape[:-1]) + classes_shape)
    if linear_bias is not None:
        logits = logits + linear_bias
    return F.cross_entropy(logits, target, weight,
                           ignore_index=-100 if ignore_index is None else ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of targets under logits computed by an owned linear layer: a language
    model's output head and its loss in one module.

    Args:
        in_features (int): features of each input row.
        num_classes (int): number of classes ``C``.
        out_features (tuple of int): extra trailing dims ``(d1, ..., dK)`` of the logits, for
            K-dimensional targets. Default: ``()``.
        bias (bool): give the linear layer a bias. Default: False.
        device, dtype: where and how to create the linear layer.
        reduction (str): ``"none"``, ``"mean"`` or ``"sum"``. Default: ``"mean"``.
        weight (Tensor, optional): per-class rescaling ``(C,)``.
        ignore_index (int, optional): target value to ignore (None: -100).
        label_smoothing (float): in [0, 1]. Default: 0.0.
        options (LinearCrossEntropyOptions, optional): accepted; ember runs the reference
            computation.

    Shape:
        input ``(N, in_features)`` or ``(in_features,)``; target ``(N, *out_features)`` or
        ``out_features``; output a scalar, or per-row losses with ``reduction="none"``.

    Returns:
        The loss module; ``self.linear`` holds the ``(C * prod(out_features), in)`` weight.

    Example:
        >>> import ember
        >>> loss = ember.nn.LinearCrossEntropyLoss(4, 3)
        >>> loss(ember.randn(5, 4), ember.tensor([0, 1, 2, 1, 0])).dim()
        0
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        import math

        from .linear import Linear

        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Linear keeps a 2-d weight; forward views it as (C, *out_features, in_features)
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        shape = (self.num_classes, *self.out_features)
        weight = self.linear.weight.reshape(shape + (self.linear.in_features,))
        bias = self.linear.bias.reshape(shape) if self.linear.bias is not None else None
        return _linear_cross_entropy(input, weight, target, bias, self.weight, self.reduction,
                                     self.ignore_index, self.label_smoothing)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
